"""--cpus-per-attempt: each attempt on CPUs of its own, locally and on a worker; what cannot fit is refused.

The chaos kind's `cpus` heuristic burns CPU, then writes the CPUs its solver process may run on
(its affinity, as the kernel holds it) into its attempt's message: what the solver itself sees.
"""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from packsolve.execution import cores
from tests.support.chaos_pack import export_records, write_pack
from tests.support.dashboard import serving
from tests.support.inprocess import invoke
from tests.support.services import Worker, run_cli, wait_for_run

USABLE = cores.physical_cores(cores.usable_cpus())


@pytest.fixture
def two_cores() -> None:
    if len(USABLE) < 2:
        pytest.skip(f"pinning attempts apart needs two cores this process may use; it has {len(USABLE)}")


def _cpus(record: dict[str, Any]) -> frozenset[int]:
    message = record["message"] or ""
    assert message.startswith("cpus "), record
    return frozenset(int(c) for c in message.removeprefix("cpus ").split(","))


def _overlapping(a: dict[str, Any], b: dict[str, Any]) -> bool:
    start_a, end_a = (datetime.fromisoformat(a[k]) for k in ("started_at", "finished_at"))
    start_b, end_b = (datetime.fromisoformat(b[k]) for k in ("started_at", "finished_at"))
    return start_a < end_b and start_b < end_a


def _check_apart(records: list[dict[str, Any]], processes: int) -> None:
    """Every attempt ran on one CPU; attempts that ran at once ran on different physical cores."""
    assert {r["status"] for r in records} == {"solved"}, records
    sets = [_cpus(r) for r in records]
    assert all(len(s) == 1 for s in sets), sets
    core_of = {cpu: i for i, core in enumerate(USABLE) for cpu in core}
    for i, a in enumerate(records):
        for b in records[i + 1 :]:
            if _overlapping(a, b):
                assert core_of[min(_cpus(a))] != core_of[min(_cpus(b))], (a, b)
    # Precondition of the check above: with this many processes on 0.3 s of CPU each, attempts overlapped.
    assert any(_overlapping(a, b) for i, a in enumerate(records) for b in records[i + 1 :]), records
    assert len({core_of[min(s)] for s in sets}) == processes, sets


def test_a_local_solve_pins_each_process_to_a_core_of_its_own_and_the_jobs_follow(
    sqlite_url: str, tmp_path: Path, chaos_env: None, two_cores: None
) -> None:
    pack = write_pack(tmp_path / "pack", 16, ms=300)
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url}
    res = invoke("solve", str(pack), "--heuristic", "cpus", "--cpus-per-attempt", "1", "--quiet", env=env)
    assert res.returncode == 0, res.stderr
    # --jobs follows: one process per core this process may use.
    assert f"{len(USABLE)} process(es)" in res.stderr
    _check_apart(export_records(sqlite_url, 1), len(USABLE))
    summary = invoke("report", "summary", "1", env=env)
    assert "each attempt to 1 CPU(s) of its own" in summary.stdout
    # The same levels unpinned: comparing the two runs says their attempts were pinned differently.
    assert invoke("solve", str(pack), "--heuristic", "cpus", "--quiet", env=env).returncode == 0
    compare = json.loads(invoke("report", "compare", "1", "2", "--format", "json", env=env).stdout)
    # A local rerun pinned too: its attempts apart, its summary saying so.
    rerun = invoke(
        "rerun", "1", "--status", "solved", "--local", "--cpus-per-attempt", "1", "--quiet", env=env
    )
    assert rerun.returncode == 0, rerun.stderr
    _check_apart(export_records(sqlite_url, 3), len(USABLE))
    child = json.loads(invoke("report", "summary", "3", "--format", "json", env=env).stdout)
    assert child["cpus_per_attempt"] == 1 and child["parent"] == 1
    assert (
        "run 2 pinned no attempt to CPUs of its own, run 1 each attempt to 1 CPU(s) of its own"
        in compare["warnings"]
    )


def test_without_the_option_a_solver_may_run_on_every_cpu(
    sqlite_url: str, tmp_path: Path, chaos_env: None
) -> None:
    """The control: the check above tells pinned from not pinned."""
    pack = write_pack(tmp_path / "pack", 2, ms=10)
    res = invoke(
        "solve",
        str(pack),
        "--heuristic",
        "cpus",
        "--jobs",
        "1",
        "--quiet",
        env={"PACKSOLVE_DATABASE_URL": sqlite_url},
    )
    assert res.returncode == 0, res.stderr
    assert {_cpus(r) for r in export_records(sqlite_url, 1)} == {cores.usable_cpus()}


def test_cpus_per_attempt_that_do_not_fit_are_refused_in_one_line_before_anything_is_made(
    sqlite_url: str, tmp_path: Path, chaos_env: None
) -> None:
    pack = write_pack(tmp_path / "pack", 2, ms=10)
    usable = sum(len(core) for core in USABLE)
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url}
    too_many = invoke("solve", str(pack), "--cpus-per-attempt", str(usable + 1), env=env)
    assert too_many.returncode == 2, too_many.stderr
    assert f"'--cpus-per-attempt': {usable + 1} CPUs per attempt" in too_many.stderr
    assert f"give at most {usable}" in too_many.stderr
    assert len(too_many.stderr.strip().splitlines()) == 1, too_many.stderr
    jobs = invoke("solve", str(pack), "--cpus-per-attempt", "1", "--jobs", str(len(USABLE) + 1), env=env)
    assert jobs.returncode == 2, jobs.stderr
    assert f"run at most {len(USABLE)} process(es) with 1 CPU(s) each" in jobs.stderr
    assert len(jobs.stderr.strip().splitlines()) == 1, jobs.stderr
    bad = invoke("solve", str(pack), "--cpus-per-attempt", "-1", env=env)
    assert bad.returncode == 2 and "--cpus-per-attempt" in bad.stderr, bad.stderr
    # check refuses what solve would, and says what it would do with what fits.
    checked = invoke("check", str(pack), "--cpus-per-attempt", str(usable + 1), env=env)
    assert checked.returncode == 2 and f"give at most {usable}" in checked.stderr, checked.stderr
    fits = invoke("check", str(pack), "--cpus-per-attempt", "1", env=env)
    assert fits.returncode == 0, fits.stderr
    assert f"solve: {len(USABLE)} process(es), each pinned to 1 CPU(s) of its own" in fits.stdout
    as_json = json.loads(invoke("check", str(pack), "--format", "json", env=env).stdout)
    assert as_json["local"] == {"processes": os.cpu_count(), "cpus_per_attempt": None}
    assert not Path(sqlite_url.removeprefix("sqlite:///")).exists()  # nothing was created


@pytest.mark.redis
def test_a_worker_pins_each_pool_process_to_a_core_of_its_own(
    broker: str, sqlite_url: str, tmp_path: Path, chaos_env: None, two_cores: None
) -> None:
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url, "PACKSOLVE_BROKER_URL": broker}
    assert run_cli("db", "upgrade", env=env).returncode == 0
    worker = Worker(
        broker,
        sqlite_url,
        "pinned@test",
        concurrency=0,
        log=tmp_path / "worker.log",
        args=["--cpus-per-attempt", "1"],
    )
    try:
        worker.wait_ready()
        assert f"{len(USABLE)} pool process(es), each pinned to CPUs of its own" in worker.log()
        pack = write_pack(tmp_path / "pack", 16, ms=300)
        res = run_cli("submit", str(pack), "--heuristic", "cpus", "--chunk-size", "1", env=env)
        assert res.returncode == 0, res.stderr
        wait_for_run(sqlite_url, 1)
        # Each pool process's row says the CPUs it is pinned to: one core each, no two alike.
        shown = json.loads(invoke("workers", "--format", "json", env=env).stdout)
        processes = [p for w in shown["workers"] for p in w["processes"] if p["state"] == "live"]
        assert len(processes) == len(USABLE), processes
        assert sorted(frozenset(int(c) for c in p["cpus"].split(",")) for p in processes) == sorted(
            frozenset(core) for core in USABLE
        ), processes
        table = invoke("workers", env=env).stdout
        assert all(f"{p['process']} CPUs {p['cpus']}" in table for p in processes), table
        with serving(sqlite_url, env=env, log_dir=tmp_path) as served:
            status, body = served.get("/workers")
        assert status == 200
        assert all(
            f'{p["process"]}<div class="muted cpus">pinned to CPU(s) {p["cpus"]}</div>' in body
            for p in processes
        ), body
    finally:
        worker.stop()
    _check_apart(export_records(sqlite_url, 1), len(USABLE))
