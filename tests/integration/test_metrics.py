"""/metrics of `packsolve serve` and of `packsolve metrics`: parsed by prometheus_client's own parser,
its counts are the database's (and the broker's), with real workers on Redis and on RabbitMQ.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import func, select

from packsolve.db.models import Attempt, Refusal, Worker
from packsolve.db.session import get_engine, session_scope
from packsolve.db.workers import db_now
from packsolve.queue.app import Cluster
from packsolve.settings import current
from tests.support.chaos_pack import write_pack
from tests.support.dashboard import serving
from tests.support.fencing import running_count, scheduler_loop, submit
from tests.support.inprocess import invoke
from tests.support.services import child_env, packsolve_cmd, run_cli, wait_for_run
from tests.support.waiting import wait_until

pytestmark = pytest.mark.usefixtures("chaos_env")

KEY = "the-clusters-key"
TOKEN = "a-token-of-twenty-chars-or-so"
_URL = re.compile(r"packsolve metrics: (http://\S+/metrics)")
Get = Callable[..., tuple[int, str]]
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def _get(url: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@contextmanager
def metrics_command(env: dict[str, str], log_dir: Path, *args: str) -> Iterator[Get]:
    """Start `packsolve metrics --port 0 ARGS`; yield a GET of its /metrics once it printed its URL."""
    log = log_dir / f"metrics-{time.monotonic_ns()}.log"
    with log.open("w") as err:
        process = subprocess.Popen(
            packsolve_cmd("metrics", "--port", "0", *args),
            stderr=err,
            stdout=subprocess.DEVNULL,
            env=child_env(env),
        )
    try:
        assert wait_until(lambda: _URL.search(log.read_text()) or process.poll() is not None, 60), (
            log.read_text()
        )
        found = _URL.search(log.read_text())
        assert found, log.read_text()
        url = found.group(1)
        yield lambda headers=None, path="/metrics": _get(url.removesuffix("/metrics") + path, headers)
    finally:
        process.terminate()
        process.wait(10)


def parsed(body: str) -> Samples:
    """Return every sample of the exposition, by (name, sorted labels), through prometheus_client's parser."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(body)
        for s in family.samples
    }


def attempts_in_db(db: str) -> Samples:
    with session_scope(get_engine(db)) as s:
        rows = s.execute(
            select(Attempt.run_id, Attempt.kind, Attempt.heuristic, Attempt.status, func.count()).group_by(
                Attempt.run_id, Attempt.kind, Attempt.heuristic, Attempt.status
            )
        )
        return {
            (
                "packsolve_attempts",
                (("heuristic", h), ("kind", k), ("run", str(r)), ("status", str(st))),
            ): float(n)
            for r, k, h, st, n in rows
        }


def scalar(db: str, statement) -> float:
    with session_scope(get_engine(db)) as s:
        return float(s.scalar(statement) or 0)


def leases(db: str, live: bool) -> float:
    """Return the worker processes whose lease lies ahead (live), or that lapsed without a clean stop."""
    with session_scope(get_engine(db)) as s:
        now = db_now(s)
        cond = Worker.lease_until >= now if live else (Worker.lease_until < now) & Worker.stopped_at.is_(None)
        return float(s.scalar(select(func.count()).select_from(Worker).where(cond)) or 0)


def refusals(db: str, run_id: int) -> float:
    return scalar(db, select(func.sum(Refusal.count)).where(Refusal.run_id == run_id))


def depth(broker: str) -> int:
    return Cluster.of(current(), broker).depth()


def test_metrics_count_what_the_database_and_the_broker_hold_with_real_workers(
    tmp_path, any_broker, db_url, start_worker
):
    db = db_url
    env = {"PACKSOLVE_DATABASE_URL": db, "PACKSOLVE_BROKER_URL": any_broker.url, "PACKSOLVE_TASK_KEY": KEY}
    # Sent before any worker is up (a submit without the key refuses to send to signing workers).
    unsigned = submit(
        {**env, "PACKSOLVE_TASK_KEY": ""}, str(write_pack(tmp_path / "u", 3, ms=1)), "--chunk-size", "1"
    )
    worker = start_worker(any_broker.url, db, "w1@test", concurrency=2, env={"PACKSOLVE_TASK_KEY": KEY})
    solved = submit(env, str(write_pack(tmp_path / "s", 12, ms=(1, 40), seed=3)), "--chunk-size", "1")
    wait_for_run(db, solved, timeout=120)
    assert wait_until(lambda: refusals(db, unsigned) >= 3, 60)
    assert wait_until(lambda: leases(db, live=True) == 2, 60)

    with metrics_command(env, tmp_path) as get:  # workers live: the cluster without the dashboard
        code, body = get()
    assert code == 200, body
    live = parsed(body)
    assert live[("packsolve_workers_live", ())] == 1
    assert live[("packsolve_worker_processes_live", ())] == leases(db, live=True) == 2
    assert live[("packsolve_broker_up", ())] == 1

    worker.stop()  # from here on nothing changes: every count can be compared exactly
    res = invoke("scheduler", "--once", env=env)
    assert res.returncode == 0, res.stderr
    with serving(db, env=env, log_dir=tmp_path) as served:
        for _ in range(5):  # the broker settles (the stopped worker's unacknowledged tasks go back)
            before = depth(any_broker.url)
            code, body = served.get("/metrics")
            if depth(any_broker.url) == before:
                break
    assert code == 200, body
    got = parsed(body)
    attempts = {k: v for k, v in got.items() if k[0] == "packsolve_attempts"}
    assert attempts == attempts_in_db(db)
    assert sum(v for (_, labels), v in attempts.items() if ("run", str(solved)) in labels) == 12
    queued = scalar(db, select(func.count()).select_from(Attempt).where(Attempt.status == "queued"))
    assert got[("packsolve_attempts_pending", (("state", "queued"),))] == queued == 3
    assert (
        got[("packsolve_queue_depth", (("broker", any_broker.url.split(":")[0]), ("queue", current().queue)))]
        == before
    )
    assert got[("packsolve_tasks_refused_total", (("reason", "unsigned"),))] == refusals(db, unsigned) >= 3
    assert got[("packsolve_tasks_refused_total", (("reason", "bad_signature"),))] == 0
    assert got[("packsolve_worker_processes_live", ())] == leases(db, live=True) == 0
    # Stopped cleanly: no lease lapsed (a worker killed is counted: test_workers_view.py).
    assert got[("packsolve_leases_lapsed", ())] == leases(db, live=False) == 0
    requeues = scalar(db, select(func.sum(Attempt.requeues)))
    assert got[("packsolve_claims_taken_back_total", (("outcome", "requeued"),))] == requeues
    assert got[("packsolve_scheduler_passes_total", ())] == 1
    assert (
        got[("packsolve_scheduler_last_pass_seconds", ())]
        == got[("packsolve_scheduler_pass_seconds_total", ())]
        > 0
    )
    timed = scalar(db, select(func.count()).select_from(Attempt).where(Attempt.wall_s.is_not(None)))
    assert got[("packsolve_solve_seconds_count", (("kind", "chaos"),))] == timed >= 12
    assert got[("packsolve_solve_seconds_bucket", (("kind", "chaos"), ("le", "+Inf")))] == timed


def test_metrics_follow_the_dashboards_access_rule(tmp_path, sqlite_url):
    """A token set, /metrics answers only a scrape that carries it (Bearer, as Prometheus sends it)."""
    assert invoke("db", "upgrade", env={"PACKSOLVE_DATABASE_URL": sqlite_url}).returncode == 0
    env = {"PACKSOLVE_SERVE_TOKEN": TOKEN, "PACKSOLVE_BROKER_URL": "redis://127.0.0.1:1/0"}
    with serving(sqlite_url, env=env, log_dir=tmp_path) as served:
        code, body = served.get("/metrics")
        assert code == 401 and body.count("\n") == 1 and "Authorization: Bearer" in body, body
        code, body = served.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
        assert code == 200, body
        got = parsed(body)
        # The broker cannot be reached: the database's figures are still shown, the broker down.
        assert got[("packsolve_broker_up", ())] == 0
        assert got[("packsolve_attempts_pending", (("state", "queued"),))] == 0
    with metrics_command({**env, "PACKSOLVE_DATABASE_URL": sqlite_url}, tmp_path) as get:
        assert get()[0] == 401
        assert get({"x-packsolve-token": TOKEN})[0] == 200
        assert get({"Authorization": "Bearer not-the-token"})[0] == 401
        code, body = get({"Authorization": f"Bearer {TOKEN}"}, "/")
        assert code == 404 and "answers /metrics only" in body, body
        code, body = get(path="/runs/1")  # no token, no page: a line, never the login page
        assert code == 401 and body.count("\n") == 1, body
    res = run_cli("metrics", "--host", "0.0.0.0", env={"PACKSOLVE_DATABASE_URL": sqlite_url})
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    [line] = [x for x in res.stderr.splitlines() if x.strip()]
    assert "set PACKSOLVE_SERVE_TOKEN or --token-file" in line


def test_the_grafana_dashboard_asks_only_for_metrics_that_metrics_serves(sqlite_url, broker):
    """Every packsolve_* name in docs/grafana-packsolve.json is one /metrics exposes (a rename fails it)."""
    import json

    from prometheus_client import generate_latest

    from packsolve.metrics.collector import registry_of

    engine = get_engine(sqlite_url)  # created and migrated: an empty deployment exposes every family
    body = generate_latest(registry_of(engine, Cluster.of(current(), broker))).decode()
    families = list(text_string_to_metric_families(body))
    served = {f.name for f in families} | {s.name for f in families for s in f.samples}
    served |= {
        f"{f.name}_{suffix}" for f in families if f.type == "histogram" for suffix in ("bucket", "count")
    }
    dashboard = json.loads((Path(__file__).parents[2] / "docs" / "grafana-packsolve.json").read_text())
    asked = {
        name
        for panel in dashboard["panels"]
        for target in panel["targets"]
        for name in re.findall(r"packsolve_[a-z_]+", target["expr"])
    }
    assert len(asked) >= 12
    assert asked <= served, asked - served


def test_claims_taken_back_and_stale_results_refused_are_counted_as_they_happen(
    tmp_path, any_broker, sqlite_url, start_worker
):
    """A worker frozen past its lease: the scheduler takes its claim back, another worker solves the
    level, and the thawed worker's late result is refused; /metrics counts each as the database and
    the worker's log say."""
    db = sqlite_url
    env = {"PACKSOLVE_DATABASE_URL": db, "PACKSOLVE_BROKER_URL": any_broker.url, "PACKSOLVE_LEASE_TTL": "2"}
    run_id = submit(env, str(write_pack(tmp_path, 1, ms=8000)), "--time-limit", "30", "--chunk-size", "1")
    frozen = start_worker(any_broker.url, db, "frozen@test", env=env)
    assert wait_until(lambda: running_count(db, run_id) == 1, 60, every=0.05)
    os.killpg(frozen.proc.pid, signal.SIGSTOP)
    try:
        with scheduler_loop(env):
            start_worker(any_broker.url, db, "heir@test", env=env)
            wait_for_run(db, run_id, timeout=120)
    finally:
        os.killpg(frozen.proc.pid, signal.SIGCONT)
    assert wait_until(lambda: "stale result refused" in frozen.log(), 60), frozen.log()
    with metrics_command(env, tmp_path) as get:
        code, body = get()
    assert code == 200, body
    got = parsed(body)
    stale = frozen.log().count("stale result refused")
    assert got[("packsolve_stale_results_refused_total", ())] == stale == 1
    requeues = scalar(db, select(func.sum(Attempt.requeues)))
    assert got[("packsolve_claims_taken_back_total", (("outcome", "requeued"),))] == requeues >= 1
    assert got[("packsolve_scheduler_passes_total", ())] >= 1
    attempts = {k: v for k, v in got.items() if k[0] == "packsolve_attempts"}
    assert attempts == attempts_in_db(db)
    assert [dict(labels)["status"] for _, labels in attempts] == ["solved"]


def test_tasks_refused_without_a_refusal_row_are_counted_in_the_refusing_workers_database(
    tmp_path, broker, start_worker
):
    """Another database's tasks leave no refusal row: the worker counts them in its own database at
    its lease's next renewal, by reason, and the sending database counts none."""
    from prometheus_client import generate_latest

    from packsolve.metrics.collector import registry_of

    mine, theirs = (f"sqlite:///{tmp_path / name}.db" for name in ("mine", "theirs"))
    assert invoke("db", "upgrade", env={"PACKSOLVE_DATABASE_URL": mine}).returncode == 0
    start_worker(broker, mine, "w1@test")
    env = {"PACKSOLVE_DATABASE_URL": theirs, "PACKSOLVE_BROKER_URL": broker}
    submit(env, str(write_pack(tmp_path / "p", 2, ms=1)), "--chunk-size", "1")

    def refused(db: str) -> Samples:
        body = generate_latest(registry_of(get_engine(db), None)).decode()
        return {k: v for k, v in parsed(body).items() if k[0] == "packsolve_tasks_refused_total"}

    wrong = ("packsolve_tasks_refused_total", (("reason", "wrong_deployment"),))
    assert wait_until(lambda: refused(mine)[wrong] >= 2, 60), refused(mine)
    assert {k: v for k, v in refused(mine).items() if k != wrong} == dict.fromkeys(
        set(refused(mine)) - {wrong}, 0
    )
    assert set(refused(theirs).values()) == {0}
