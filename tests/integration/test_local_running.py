"""A local run shows what runs while it runs: `status`, the run page's running-now table, tries."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from tests.support.chaos_pack import export_records, write_pack
from tests.support.dashboard import serving
from tests.support.services import child_env, packsolve_cmd, run_cli


def _status(env: dict[str, str]) -> dict:
    res = run_cli("status", "1", "--format", "json", env=env)
    return json.loads(res.stdout) if res.returncode == 0 else {}


def test_a_local_run_shows_its_attempts_running_under_pool_processes_with_their_tries(
    sqlite_url: str, tmp_path: Path, chaos_env: None
) -> None:
    """Two jobs on slow levels: status says 2 running, the run page lists them under local@host:pid."""
    pack = write_pack(tmp_path / "pack", 6, ms=3000)
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url}
    solve = subprocess.Popen(
        packsolve_cmd("solve", str(pack), "--jobs", "2", "--quiet"),
        env=child_env(env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        status = _status(env)
        while status.get("running") != 2:
            assert solve.poll() is None and time.monotonic() < deadline, (status, solve.stderr)
            time.sleep(0.1)
            status = _status(env)
        assert status["done"] + status["running"] + status["queued"] == 6
        with serving(sqlite_url, "--read-only", log_dir=tmp_path) as served:
            code, body = served.get("/runs/1/live")
        assert code == 200, body
        assert "running now" in body and body.count('<td class="worker">local@') == 2, body
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
    res = run_cli("solve", str(pack), "--jobs", "2", "--quiet", env={"PACKSOLVE_DATABASE_URL": sqlite_url})
    assert res.returncode == 0, res.stderr
    assert {r["tries"] for r in export_records(sqlite_url, 1)} == {1}
