"""Commands write only where they should: read-only commands and the dashboard create and write nothing."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from sqlalchemy import text

from packsolve.db.session import make_engine
from tests.support.dashboard import serving
from tests.support.inprocess import invoke
from tests.support.services import child_env, packsolve_cmd

PACK = Path(__file__).resolve().parents[2] / "examples" / "packs" / "coins"
# What readers keep: the folded level stats, compare pairs, and every run snapshot (figures.snapshots).
CACHES = {
    "level_stats_runs": "SELECT count(*) FROM level_stats_runs",
    "compare pairs": "SELECT count(*) FROM run_snapshots WHERE name LIKE 'compare/%'",
    "run_snapshots": "SELECT count(*) FROM run_snapshots",
}


def _rows(url: str) -> dict[str, int]:
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return {name: conn.execute(text(sql)).scalar_one() for name, sql in CACHES.items()}
    finally:
        engine.dispose()


def _two_runs(url: str, tmp_path: Path) -> dict[str, int]:
    """Solve two runs that share levels; return what is kept then (each solve's own snapshots, no pair)."""
    env = {"PACKSOLVE_DATABASE_URL": url}
    for _ in range(2):
        res = invoke("solve", str(PACK), "-q", "--time-limit", "1", env=env, cwd=tmp_path)
        assert res.returncode == 0, res.stderr
    kept = _rows(url)
    assert (kept["level_stats_runs"], kept["compare pairs"]) == (0, 0)  # no figure of theirs kept yet
    return kept


def test_read_only_dashboard_and_reports_compute_their_figures_without_writing_them(
    db_url: str, tmp_path: Path
) -> None:
    url = db_url
    before = _two_runs(url, tmp_path)
    with serving(url, "--read-only", log_dir=tmp_path) as served:
        pages = (
            ("/hardest", "hardest"),
            ("/compare?runs=1,2", "run 1"),
            ("/runs/1", "run 1"),
            ("/workers", "Workers"),
        )
        for path, content in pages:
            code, body = served.get(path)
            assert code == 200 and content in body, (path, code, body[:300])
    env = {"PACKSOLVE_DATABASE_URL": url}
    for args in (["report", "hardest"], ["report", "compare", "1", "2"], ["status"], ["runs"], ["workers"]):
        res = invoke(*args, env=env, cwd=tmp_path)
        assert res.returncode == 0, (args, res.stderr)
    assert _rows(url) == before


def test_serve_and_reports_never_create_a_database_or_its_directories(tmp_path: Path) -> None:
    missing = tmp_path / "typo" / "results.db"
    env = {"PACKSOLVE_DATABASE_URL": f"sqlite:///{missing}"}
    for args in (["serve", "--port", "0"], ["serve", "--port", "0", "--read-only"], ["report", "summary"]):
        res = subprocess.run(
            packsolve_cmd(*args), env=child_env(env), capture_output=True, text=True, timeout=60
        )
        assert res.returncode == 2, (args, res.stderr)
        assert res.stderr.count("\n") == 1 and res.stderr.startswith(f"Error: no database at {missing}: "), (
            res.stderr
        )
        assert "run `packsolve solve PACK` here first, or point --database-url" in res.stderr
    res = subprocess.run(
        packsolve_cmd("serve", "--port", "0"),
        env=child_env(),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 2 and "no database at" in res.stderr, res.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("broker", ["redis://127.0.0.1:1/0", "amqp://guest:guest@127.0.0.1:1//"])
def test_submit_to_an_unreachable_broker_leaves_no_database(tmp_path: Path, broker: str) -> None:
    env = {"PACKSOLVE_DATABASE_URL": f"sqlite:///{tmp_path / 'results.db'}", "PACKSOLVE_BROKER_URL": broker}
    res = invoke("submit", str(PACK), env=env, cwd=tmp_path)
    assert res.returncode == 1 and "cannot reach the broker" in res.stderr, res.stderr
    assert list(tmp_path.iterdir()) == []
