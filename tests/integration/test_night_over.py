"""A night that tells you it is over: exit codes that mean something, --fail-on, status --wait."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.chaos_pack import write_pack
from tests.support.inprocess import invoke
from tests.support.report_runs import Planned, build_run, strip_level

PACK = Path(__file__).resolve().parents[2] / "examples" / "packs" / "coins"
# examples/packs/coins: one level with no solution, four solvable.


def test_solve_exits_1_naming_the_levels_in_a_fail_on_status_and_0_otherwise(sqlite_url):
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url}
    res = invoke("solve", str(PACK), "-q", "--fail-on", "timeout,no_solution", "--format", "json", env=env)
    assert res.returncode == 1, res.stderr
    assert "1 level(s) ended no_solution (--fail-on timeout,no_solution)" in res.stderr
    assert json.loads(res.stdout)["run"] == 1  # still one document
    res = invoke("solve", str(PACK), "-q", "--fail-on", "timeout,error,wrong", env=env)
    assert res.returncode == 0, res.stderr
    res = invoke("solve", str(PACK), "-q", "--fail-on", "timeout,eror", env=env)
    assert res.returncode == 2 and "'eror'" in res.stderr and "Traceback" not in res.stderr


def test_status_wait_returns_when_the_run_is_over_with_the_same_exit_code(sqlite_url):
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url}
    invoke("solve", str(PACK), "-q", env=env)
    res = invoke("status", "--wait", "--fail-on", "no_solution", env=env)
    assert res.returncode == 1 and "no_solution" in res.stderr
    res = invoke("status", "--wait", "--format", "json", env=env)
    assert res.returncode == 0 and json.loads(res.stdout)["finished"] is True


@pytest.mark.redis
def test_submit_wait_returns_when_the_workers_are_done_with_the_fail_on_exit_code(
    sqlite_url, broker, start_worker
):
    start_worker(broker, sqlite_url, "w1@test")
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url, "PACKSOLVE_BROKER_URL": broker}
    res = invoke("submit", str(PACK), "--wait", "--fail-on", "no_solution,timeout", env=env)
    assert res.returncode == 1, res.stderr
    assert res.stdout.strip() == "1" and "1 level(s) ended no_solution" in res.stderr
    status = json.loads(invoke("status", "1", "--format", "json", env=env).stdout)
    assert status["finished"] and status["done"] == status["total"] == 5


def test_status_watch_ends_its_output_with_a_newline(sqlite_url):
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url}
    invoke("solve", str(PACK), "-q", env=env)
    res = invoke("status", "--watch", env=env)
    assert res.returncode == 0 and res.stdout.endswith("\n"), res.stdout[-40:]


def test_status_wait_exits_1_by_default_when_the_tool_or_solver_failed_not_for_timeouts(sqlite_url):
    """The default --fail-on of the waiting commands is error,wrong,lost; none gives exit 0 whatever."""
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url}
    hard = build_run(
        sqlite_url, [Planned(strip_level(0), "timeout", 10.1, 10.0, 5, "time limit 10 s reached")]
    )
    res = invoke("status", str(hard), "--wait", env=env)
    assert res.returncode == 0, res.stderr  # a timeout is the level's difficulty, not a failure
    broken = build_run(
        sqlite_url,
        [
            Planned(strip_level(1), "solved", 0.1),
            Planned(strip_level(2), "error", 0.1, message="solver crashed"),
            Planned(strip_level(3), "wrong", 0.1, message="the path misses cell (0, 1)"),
        ],
    )
    res = invoke("status", str(broken), "--wait", env=env)
    assert res.returncode == 1, res.stderr
    assert "1 level(s) ended error, 1 level(s) ended wrong (--fail-on error,wrong,lost)" in res.stderr
    res = invoke("status", str(broken), "--wait", "--fail-on", "none", env=env)
    assert res.returncode == 0, res.stderr
    res = invoke("status", str(broken), "--wait", "--fail-on", "nothing", env=env)
    assert res.returncode == 2 and "none" in res.stderr and "Traceback" not in res.stderr


@pytest.mark.redis
def test_submit_wait_exits_1_by_default_when_a_solver_crashed_on_either_broker(
    tmp_path, sqlite_url, any_broker, start_worker, chaos_env
):
    start_worker(any_broker.url, sqlite_url, "w1@test")
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url, "PACKSOLVE_BROKER_URL": any_broker.url}
    pack = write_pack(tmp_path / "pack", 2, ms=10)
    res = invoke("submit", str(pack), "--heuristic", "deep", "--wait", env=env)
    assert res.returncode == 1, res.stderr
    assert res.stdout.strip() == "1" and "2 level(s) ended error (--fail-on error,wrong,lost)" in res.stderr
    res = invoke("submit", str(pack), "--heuristic", "deep", "--wait", "--fail-on", "none", env=env)
    assert res.returncode == 0, res.stderr
    res = invoke("submit", str(pack), "--wait", env=env)  # all solved
    assert res.returncode == 0, res.stderr
