"""A local run shows what runs while it runs: `status`, the run page's running-now table, tries."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.support.chaos_pack import export_records, write_pack
from tests.support.dashboard import serving
from tests.support.inprocess import invoke
from tests.support.services import child_env, packsolve_cmd
from tests.support.waiting import wait_for


def _status(env: dict[str, str]) -> dict:
    res = invoke("status", "1", "--format", "json", env=env)
    return json.loads(res.stdout) if res.returncode == 0 else {}


def test_a_local_run_shows_its_attempts_running_under_pool_processes_with_their_tries(
    sqlite_url: str, tmp_path: Path, chaos_env: None
) -> None:
    """Two jobs on slow levels: status says 2 running, the run page lists them under local@host:pid."""
    levels = 12  # 3 s each on 2 jobs: ~18 s running, room for a loaded machine to look in time
    pack = write_pack(tmp_path / "pack", levels, ms=3000)
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url}
    assert invoke("db", "upgrade", env=env).returncode == 0
    # The dashboard is up before the solve starts: its start-up is not spent from the run's time.
    with serving(sqlite_url, "--read-only", log_dir=tmp_path) as served:
        solve = subprocess.Popen(
            packsolve_cmd("solve", str(pack), "--jobs", "2", "--quiet"),
            env=child_env(env),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:

            def two_running() -> dict:
                status = _status(env)
                if status.get("running") == 2:
                    return status
                assert solve.poll() is None, (status, solve.stderr)
                return {}

            def two_listed() -> str:
                code, body = served.get("/runs/1/live")
                assert code == 200, body
                if "running now" in body and body.count('<td class="worker">local@') == 2:
                    return body
                assert solve.poll() is None, (body, solve.stderr)
                return ""

            status = wait_for(two_running, 120, every=0.1, what="two attempts running")
            assert status["done"] + status["running"] + status["queued"] == levels
            # Looked at separately: between two looks one attempt may end before the next starts.
            wait_for(two_listed, 120, every=0.1, what="the run page listing two attempts running")
            assert solve.wait(120) == 0, solve.stderr.read() if solve.stderr else ""
        finally:
            if solve.poll() is None:
                solve.kill()
    records = export_records(sqlite_url, 1)
    assert {(r["status"], r["tries"]) for r in records} == {("solved", 1)}
    assert all(r["worker"].startswith("local@") for r in records)


def test_tiny_local_attempts_count_their_one_try(sqlite_url: str, tmp_path: Path, chaos_env: None) -> None:
    """Attempts that end before anyone could see them running still count the try they took."""
    pack = write_pack(tmp_path / "pack", 300, ms=0)
    res = invoke("solve", str(pack), "--jobs", "2", "--quiet", env={"PACKSOLVE_DATABASE_URL": sqlite_url})
    assert res.returncode == 0, res.stderr
    assert {r["tries"] for r in export_records(sqlite_url, 1)} == {1}
