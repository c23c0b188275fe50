"""The local pool and a worker write their results through one ResultSink, by the settings' FlushPolicy."""

from __future__ import annotations

import json
import time

from packsolve.db.sink import FlushPolicy, ResultSink
from packsolve.settings import resolve
from tests.integration.test_distributed import submit
from tests.support.inprocess import invoke
from tests.support.packs import make_pack
from tests.support.services import wait_for_run

# Results are never old enough to be written in these tests: only a full batch, or the end, writes them.
NEVER_S = "600"
BATCH = 3


def test_the_flush_policies_come_from_the_settings_with_the_earlier_constants_as_defaults():
    defaults = resolve(environ={}, path=None)
    assert FlushPolicy.worker(defaults) == FlushPolicy(0.25, 200)
    assert FlushPolicy.local(defaults) == FlushPolicy(0.5, 200)
    given = resolve(
        environ={
            "PACKSOLVE_RESULT_FLUSH": "2",
            "PACKSOLVE_LOCAL_RESULT_FLUSH": "3",
            "PACKSOLVE_RESULT_BATCH": "7",
        },
        path=None,
    )
    assert (FlushPolicy.worker(given), FlushPolicy.local(given)) == (FlushPolicy(2, 7), FlushPolicy(3, 7))


def test_the_local_pool_writes_through_the_sink_in_batches_of_the_configured_size(tmp_path, monkeypatch):
    """With results never old enough, the local pool's sink writes full batches, and the rest at the end."""
    written: list[int] = []
    flush = ResultSink.flush

    def counted(self: ResultSink) -> None:
        written.append(len(self.results))
        flush(self)

    monkeypatch.setattr(ResultSink, "flush", counted)
    url = f"sqlite:///{tmp_path / 'local.db'}"
    env = {
        "PACKSOLVE_DATABASE_URL": url,
        "PACKSOLVE_LOCAL_RESULT_FLUSH": NEVER_S,
        "PACKSOLVE_RESULT_BATCH": str(BATCH),
    }
    pack = tmp_path / "corridors.jsonl"  # 40 levels solved in microseconds, handed out in chunks of 10
    pack.write_text(
        "".join(json.dumps({"kind": "onestroke", "grid": ["S" + "." * k]}) + "\n" for k in range(1, 41))
    )
    res = invoke("solve", str(pack), "--jobs", "1", "--quiet", "--format", "json", env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    batches = [n for n in written if n]
    assert sum(batches) == 40, written
    # Written while the run went on, as full batches (not all at the end: the age limit never fires),
    # and every write but the last (the end of the run) is a full batch.
    assert len(batches) >= 2 and all(n >= BATCH for n in batches[:-1]), written
    status = json.loads(invoke("status", "--format", "json", env=env).stdout)
    assert status["finished"] and status["done"] == 40


def status(env: dict[str, str], run_id: int) -> dict:
    res = invoke("status", str(run_id), "--format", "json", env=env)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def test_a_worker_writes_full_batches_at_once_and_keeps_the_rest_for_its_flush_interval(
    tmp_path, sqlite_url, broker, start_worker
):
    """The worker's sink, with results never old enough, writes every full batch and holds the rest."""
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url, "PACKSOLVE_BROKER_URL": broker}
    worker = start_worker(
        broker,
        sqlite_url,
        "w1@test",
        env={"PACKSOLVE_RESULT_FLUSH": NEVER_S, "PACKSOLVE_RESULT_BATCH": str(BATCH)},
    )
    run_id = submit(make_pack(tmp_path), env, "--time-limit", "10")
    deadline = time.monotonic() + 60
    while True:  # until every attempt ran, and a full batch was written
        s = status(env, run_id)
        ran = s["queued"] == s["claimed"] == s["running"] == 0
        if (ran and s["buffered"] < BATCH) or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    # The invalid level is written at submit; of the 5 results, full batches went at once, and the
    # rest (fewer than a batch) wait in the worker's buffer, far from their flush interval.
    assert not s["finished"] and 1 <= s["buffered"] < BATCH, s
    assert s["done"] + s["buffered"] == 6 and s["done"] >= 1 + BATCH, s
    worker.stop()  # a worker stopping writes what it holds
    wait_for_run(sqlite_url, run_id, timeout=30)
    assert status(env, run_id)["done"] == 6
