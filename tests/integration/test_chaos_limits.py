"""Limits that hold through a real worker: each misbehaving solver ends final, the worker goes on."""

from __future__ import annotations

import json

import pytest

from tests.support.chaos_pack import write_pack
from tests.support.inprocess import invoke
from tests.support.services import wait_for_run

pytestmark = pytest.mark.usefixtures("chaos_env")


@pytest.mark.slow
def test_worker_survives_memout_recursion_budget_ignoring_and_crashing_solvers_and_takes_the_next_task(
    tmp_path, broker, sqlite_url, start_worker
):
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url, "PACKSOLVE_BROKER_URL": broker}
    worker = start_worker(broker, sqlite_url, "w1@test", concurrency=1)
    pid = worker.proc.pid
    pack = write_pack(tmp_path, 2, ms=10)
    cases = [
        (["--heuristic", "hog", "--memory-limit", "150"], "memout"),
        (["--heuristic", "deep"], "error"),
        (["--heuristic", "deaf", "--time-limit", "0.5"], "timeout"),
        (["--heuristic", "segv"], "error"),
        ([], "solved"),  # and then ordinary work goes on as before
    ]
    for args, expected in cases:
        res = invoke("submit", str(pack), "--time-limit", "5", *args, env=env)
        assert res.returncode == 0, res.stderr
        run_id = int(res.stdout.strip().splitlines()[-1])
        wait_for_run(sqlite_url, run_id, timeout=60)
        records = [json.loads(line) for line in invoke("export", str(run_id), env=env).stdout.splitlines()]
        assert [r["status"] for r in records] == [expected] * 2, records
        assert all(r["tries"] == 1 and r["worker"] == "w1@test" for r in records)
        assert all(r["message"] for r in records if expected != "solved")
    assert worker.proc.poll() is None and worker.proc.pid == pid
    log = worker.log()
    assert "WorkerLostError" not in log and "exited with 'signal" not in log
