"""Commands write only where they should: read-only commands and the dashboard create and write nothing."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from sqlalchemy import text

from packsolve.db.session import make_engine
from tests.support.dashboard import serving
from tests.support.services import child_env, packsolve_cmd, run_cli

PACK = Path(__file__).resolve().parents[2] / "examples" / "packs" / "coins"
CACHES = ("level_stats_runs", "compare_figures")


def _rows(url: str) -> dict[str, int]:
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return {t: conn.execute(text(f"SELECT count(*) FROM {t}")).scalar_one() for t in CACHES}
    finally:
        engine.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest) -> str:
    return request.getfixturevalue("sqlite_url" if request.param == "sqlite" else "pg_url")


def _two_runs(url: str, tmp_path: Path) -> None:
    env = {"PACKSOLVE_DATABASE_URL": url}
    for _ in range(2):
        res = run_cli("solve", str(PACK), "-q", "--time-limit", "1", env=env, cwd=tmp_path)
        assert res.returncode == 0, res.stderr
    assert _rows(url) == dict.fromkeys(CACHES, 0)  # two runs that share levels, no figure kept yet


def test_read_only_dashboard_and_reports_compute_their_figures_without_writing_them(
    db_url: str, tmp_path: Path
) -> None:
    url = db_url
    _two_runs(url, tmp_path)
    with serving(url, "--read-only", log_dir=tmp_path) as served:
        for path, content in (("/hardest", "hardest"), ("/compare?runs=1,2", "run 1"), ("/runs/1", "run 1")):
            code, body = served.get(path)
            assert code == 200 and content in body, (path, code, body[:300])
    env = {"PACKSOLVE_DATABASE_URL": url}
    for args in (["report", "hardest"], ["report", "compare", "1", "2"], ["status"], ["runs"]):
        res = run_cli(*args, env=env, cwd=tmp_path)
        assert res.returncode == 0, (args, res.stderr)
    assert _rows(url) == dict.fromkeys(CACHES, 0)


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
    res = run_cli("submit", str(PACK), env=env, cwd=tmp_path)
    assert res.returncode == 1 and "cannot reach the broker" in res.stderr, res.stderr
    assert list(tmp_path.iterdir()) == []
