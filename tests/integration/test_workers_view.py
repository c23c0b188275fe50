"""The workers page and `packsolve workers` with real workers on both brokers (issue 37, items 2 and 4).

The lost-worker test: a worker is killed (`kill -9`) while it runs an attempt; once the scheduler has
taken back what it held, `packsolve workers` (JSON and the table at 80 columns) and the dashboard's
/workers page show it lost, with the attempts taken back from it, and a worker stopped cleanly shows
stopped. The queue test: tasks waiting, attempts queued, the oldest's age and the drain time, before
and after a worker ran them.
"""

from __future__ import annotations

import html
import json
import os
import signal
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.chaos_pack import write_pack
from tests.support.dashboard import serving
from tests.support.fencing import attempts, running_count, scheduler_loop, submit
from tests.support.services import run_cli, wait_for_run
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.redis, pytest.mark.usefixtures("chaos_env")]


def shown(env: dict[str, str]) -> dict[str, Any]:
    """Return `packsolve workers --format json`: one document."""
    res = run_cli("workers", "--format", "json", env=env)
    assert res.returncode == 0, res.stderr
    return dict(json.loads(res.stdout))


def worker_named(env: dict[str, str], name: str) -> dict[str, Any] | None:
    return next((w for w in shown(env)["workers"] if w["worker"] == name), None)


def test_a_worker_killed_mid_run_is_shown_lost_with_the_attempts_taken_back_from_it(
    tmp_path, any_broker, pg_url, start_worker
):
    env = {
        "PACKSOLVE_DATABASE_URL": pg_url,
        "PACKSOLVE_BROKER_URL": any_broker.url,
        "PACKSOLVE_LEASE_TTL": "2",
    }
    # One worker stopped cleanly first: it is shown stopped, never lost.
    calm = start_worker(any_broker.url, pg_url, "calm@test", env=env)
    assert wait_until(lambda: (worker_named(env, "calm@test") or {}).get("state") == "live", 30)
    calm.stop()
    stopped = worker_named(env, "calm@test")
    assert stopped is not None and stopped["state"] == "stopped"
    assert [e["event"] for e in stopped["processes"][0]["history"]] == ["started", "stopped"]

    victim = start_worker(any_broker.url, pg_url, "victim@test", env=env)
    run_id = submit(env, str(write_pack(tmp_path, 3, ms=20000)), "--time-limit", "60", "--chunk-size", "1")
    assert wait_until(lambda: running_count(pg_url, run_id) >= 1, 60, every=0.1)
    live = worker_named(env, "victim@test")
    assert live is not None and live["state"] == "live" and live["concurrency"] == 1
    (process,) = live["processes"]
    assert [a["run"] for a in process["running"]] == [run_id] and process["lease_age_s"] is not None
    running = {a.name for a in attempts(pg_url, run_id) if a.status == "running"}

    os.killpg(victim.proc.pid, signal.SIGKILL)
    victim.proc.wait(10)
    with scheduler_loop(env):
        assert wait_until(lambda: (worker_named(env, "victim@test") or {}).get("state") == "lost", 60)
        assert wait_until(
            lambda: worker_named(env, "victim@test")["processes"][0]["taken_back"],
            60,  # type: ignore[index]
        )
    lost = worker_named(env, "victim@test")
    assert lost is not None
    (process,) = lost["processes"]
    assert process["state"] == "lost" and process["running"] == []
    events = [e["event"] for e in process["history"]]
    assert events[:3] == ["started", "lease lapsed", "claims taken back"], events
    assert "stopped" not in events
    taken = {a["level"] for a in process["taken_back"] if a["run"] == run_id}
    assert running <= taken, (running, taken)

    # The table for people, at 80 columns: the worker lost, its history with the levels taken back.
    table = run_cli("workers", env={**env, "COLUMNS": "80"})
    assert table.returncode == 0, table.stderr
    assert max(len(line) for line in table.stdout.splitlines()) <= 80, table.stdout
    assert "victim@test" in table.stdout and "lost" in table.stdout and "stopped" in table.stdout
    assert "claims taken back" in table.stdout
    # Each level taken back on a line of its own, its name shortened from the left, never wrapped.
    shown = table.stdout.splitlines()
    for name in running:
        end = name.rsplit("/", 1)[-1]
        assert [line for line in shown if f"{end} (" in line and line.startswith("    run ")], (name, shown)

    # The dashboard's page says the same.
    with serving(pg_url, env=env, log_dir=tmp_path) as served:
        status, body = served.get("/workers")
        metrics_status, metrics = served.get("/metrics")
    # /metrics counts the killed process as a lapsed lease, and the one stopped cleanly not.
    assert metrics_status == 200, metrics
    families = text_string_to_metric_families(metrics)
    samples = {s.name: s.value for f in families for s in f.samples if not s.labels}
    assert samples["packsolve_leases_lapsed"] == 1, metrics
    assert status == 200
    text = html.unescape(body)
    assert "<h1>Workers</h1>" in body
    assert 'class="state-lost">lost<' in body and 'class="state-stopped">stopped<' in body
    assert "claims taken back" in text
    for name in running:
        assert name in text


def test_the_queue_shows_its_depth_oldest_task_and_drain_time(tmp_path, any_broker, pg_url, start_worker):
    env = {"PACKSOLVE_DATABASE_URL": pg_url, "PACKSOLVE_BROKER_URL": any_broker.url}
    # One process, 1 s a level: "some done, some waiting" lasts about 19 s, long enough for a
    # loaded machine's `workers` (a few seconds a call) to see it more than once.
    levels = 20
    run_id = submit(env, str(write_pack(tmp_path, levels, ms=1000)), "--chunk-size", "1")
    queue = os.environ["PACKSOLVE_QUEUE"]
    (waiting,) = [q for q in shown(env)["queues"] if q["queue"] == queue]
    # No worker yet: every task waits, nothing was done lately, so no drain time can be told.
    assert (waiting["depth"], waiting["queued"], waiting["runs"]) == (levels, levels, [run_id])
    assert waiting["oldest_age_s"] is not None and waiting["oldest_age_s"] >= 0
    assert (waiting["finished_recently"], waiting["drain_s"]) == (0, None)
    with serving(pg_url, env=env, log_dir=tmp_path) as served:
        status, body = served.get("/workers")
    assert status == 200 and f"<td>{queue}</td>" in body

    start_worker(any_broker.url, pg_url, "w1@test", env=env)

    seen: list[dict[str, Any]] = []

    def midway() -> bool:
        (q,) = [q for q in shown(env)["queues"] if q["queue"] == queue]
        seen.append(q)
        return bool(q["finished_recently"] >= 1 and q["queued"] >= 1)

    # Some done, some waiting: the drain time is told from the pace so far.
    assert wait_until(midway, 60, every=0.2), seen[-1]
    going = seen[-1]
    assert going["rate_per_s"] > 0 and going["drain_s"] > 0
    assert going["drain_s"] == pytest.approx(going["queued"] / going["rate_per_s"], rel=0.01)
    wait_for_run(pg_url, run_id, timeout=120)
    (drained,) = [q for q in shown(env)["queues"] if q["queue"] == queue]
    # The run is finished: nothing waits, nothing is left to drain.
    assert (drained["depth"], drained["queued"], drained["drain_s"]) == (0, 0, 0.0)
