"""A night that tells you it is over: exit codes that mean something, --fail-on, status --wait."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.services import run_cli

PACK = Path(__file__).resolve().parents[2] / "examples" / "packs" / "coins"
# examples/packs/coins: one level with no solution, four solvable.


def test_solve_exits_1_naming_the_levels_in_a_fail_on_status_and_0_otherwise(sqlite_url):
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url}
    res = run_cli("solve", str(PACK), "-q", "--fail-on", "timeout,no_solution", "--format", "json", env=env)
    assert res.returncode == 1, res.stderr
    assert "1 level(s) ended no_solution (--fail-on timeout,no_solution)" in res.stderr
    assert json.loads(res.stdout)["run"] == 1  # still one document
    res = run_cli("solve", str(PACK), "-q", "--fail-on", "timeout,error,wrong", env=env)
    assert res.returncode == 0, res.stderr
    res = run_cli("solve", str(PACK), "-q", "--fail-on", "timeout,eror", env=env)
    assert res.returncode == 2 and "'eror'" in res.stderr and "Traceback" not in res.stderr


def test_status_wait_returns_when_the_run_is_over_with_the_same_exit_code(sqlite_url):
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url}
    run_cli("solve", str(PACK), "-q", env=env)
    res = run_cli("status", "--wait", "--fail-on", "no_solution", env=env, timeout=60)
    assert res.returncode == 1 and "no_solution" in res.stderr
    res = run_cli("status", "--wait", "--format", "json", env=env, timeout=60)
    assert res.returncode == 0 and json.loads(res.stdout)["finished"] is True


@pytest.mark.redis
def test_submit_wait_returns_when_the_workers_are_done_with_the_fail_on_exit_code(
    sqlite_url, broker, start_worker
):
    start_worker(broker, sqlite_url, "w1@test")
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url, "PACKSOLVE_BROKER_URL": broker}
    res = run_cli("submit", str(PACK), "--wait", "--fail-on", "no_solution,timeout", env=env, timeout=180)
    assert res.returncode == 1, res.stderr
    assert res.stdout.strip() == "1" and "1 level(s) ended no_solution" in res.stderr
    status = json.loads(run_cli("status", "1", "--format", "json", env=env).stdout)
    assert status["finished"] and status["done"] == status["total"] == 5


def test_status_watch_ends_its_output_with_a_newline(sqlite_url):
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url}
    run_cli("solve", str(PACK), "-q", env=env)
    res = run_cli("status", "--watch", env=env, timeout=60)
    assert res.returncode == 0 and res.stdout.endswith("\n"), res.stdout[-40:]
