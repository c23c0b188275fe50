"""`packsolve serve` following real runs in headless Chromium: a live solve, a rerun started from a page,
a plug-in's hostile picture, the database going away and coming back."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, func, select, text

from packsolve.db.models import Run
from packsolve.db.session import get_engine, session_scope
from packsolve.levels import make_level
from tests.support.chaos_pack import write_pack
from tests.support.dashboard import serving
from tests.support.inprocess import invoke
from tests.support.plugins import make_distribution
from tests.support.report_runs import Planned, build_run, strip_level
from tests.support.services import PG_ADMIN_URL, child_env, packsolve_cmd

pytestmark = [pytest.mark.browser, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
# Where the README's screenshots are written when asked (PACKSOLVE_SCREENSHOTS=docs/images); tmp otherwise.
SHOTS = os.environ.get("PACKSOLVE_SCREENSHOTS")


def runs_in(url: str) -> int:
    with session_scope(get_engine(url)) as session:
        return session.scalar(select(func.count()).select_from(Run)) or 0


def shot(page: Any, tmp_path: Path, name: str) -> None:
    """Screenshot the page into tmp_path, and into PACKSOLVE_SCREENSHOTS if set (the README's images)."""
    path = tmp_path / name
    page.screenshot(path=str(path), full_page=False)
    if SHOTS:
        shutil.copy(path, ROOT / SHOTS / name)


def test_runs_page_follows_a_local_solve_to_100_percent_without_reloading(
    page: Any, sqlite_url: str, tmp_path: Path, chaos_env: None
) -> None:
    pack = write_pack(tmp_path / "pack", 60, ms=200)
    # serve never creates a database: an empty one is made first, as `packsolve db upgrade` does.
    assert invoke("db", "upgrade", env={"PACKSOLVE_DATABASE_URL": sqlite_url}).returncode == 0
    with serving(sqlite_url, log_dir=tmp_path) as served:
        solve = subprocess.Popen(
            packsolve_cmd("solve", str(pack), "--jobs", "2", "--quiet", "--label", "overnight"),
            env=child_env({"PACKSOLVE_DATABASE_URL": sqlite_url}),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            deadline = time.monotonic() + 60
            while runs_in(sqlite_url) == 0:
                assert time.monotonic() < deadline and solve.poll() is None, solve.stderr
                time.sleep(0.05)
            page.goto(served.url)
            page.evaluate("window.__stayed = true")  # gone if the page were reloaded
            first = page.inner_text("tr[data-run='1'] .pct")
            assert first != "100 %", "the solve ended before the page could watch it"
            page.wait_for_function(
                "() => !/^(0|100) %$/.test(document.querySelector(\"tr[data-run='1'] .pct\").textContent)"
            )
            shot(page, tmp_path, "dashboard-runs.png")  # on its way
            page.wait_for_function(
                "() => document.querySelector(\"tr[data-run='1'] .pct\").textContent === '100 %'"
                " && document.querySelector(\"tr[data-run='1']\").classList.contains('state-finished')",
                timeout=120_000,
            )
            assert page.evaluate("window.__stayed") is True
            assert solve.wait(60) == 0, solve.stderr.read() if solve.stderr else ""
        finally:
            if solve.poll() is None:
                solve.kill()
        # The run page once it is over: its figures are report summary's.
        summary = json.loads(
            invoke(
                "report", "summary", "1", "--format", "json", env={"PACKSOLVE_DATABASE_URL": sqlite_url}
            ).stdout
        )
        page.goto(f"{served.url}runs/overnight")
        assert page.inner_text("#solved") == f"{summary['solved']} of {summary['total']}" == "60 of 60"
        shot(page, tmp_path, "dashboard-run.png")
        assert not page.errors


def test_a_failure_group_reruns_with_another_heuristic_and_lands_on_the_new_run_which_finishes(
    page: Any, sqlite_url: str, tmp_path: Path, chaos_env: None
) -> None:
    pack = write_pack(tmp_path / "pack", 2, ms=20)
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url}
    out = invoke("solve", str(pack), "--heuristic", "deaf", "--time-limit", "0.3", "--quiet", env=env)
    assert out.returncode == 0, out.stderr
    with serving(sqlite_url, log_dir=tmp_path) as served:
        page.goto(f"{served.url}runs/1/failures")
        form = page.locator("form.rerun").first
        assert form.locator("input[name=time_limit]").input_value() == "0.6"  # what `report failures` says
        form.locator("select[name=heuristic]").select_option("sleep")
        form.locator("input[name=time_limit]").fill("10")
        form.locator("button[type=submit]").click()
        page.wait_for_url(f"{served.url}runs/2")
        page.wait_for_selector("h1 .state-finished", timeout=120_000)  # the page reloads itself at the end
        assert page.inner_text("#solved") == "2 of 2"
        assert "rerun of" in page.inner_text("p.links")
    child = json.loads(invoke("report", "summary", "2", "--format", "json", env=env).stdout)
    figures = (child["parent"], child["solved"], child["heuristics"], child["time_limit"])
    assert figures == (1, 2, ["sleep"], 10.0)


EVIL_SVG = (
    '<svg xmlns="http://www.w3.org/2000/svg" width="40" height="40" onload="fetch(`/pwned-onload`)">'
    "<script>fetch('/pwned-script'); top.document.title = 'pwned';</script>"
    '<rect width="40" height="40" fill="red"/></svg>'
)
EVIL_KIND = f"""
from packsolve.api import LevelError, PuzzleKind, solved, solver


def parse(data):
    if not isinstance(data.get("n"), int):
        raise LevelError("an evil level needs an integer n")
    return data["n"]


@solver
def plain(n, budget):
    return solved([n])


KIND = PuzzleKind(
    name="evil", parse=parse, canonical=lambda n: {{"n": n}}, solvers={{"plain": plain}}, default="plain",
    verify=lambda n, s: None, render=lambda n, s: str(n), svg=lambda n, s: {EVIL_SVG!r}, size=lambda n: 1,
    description="draws a picture that tries to run script", examples=({{"n": 1}},),
)
"""


def test_a_plugin_kind_whose_svg_carries_a_script_runs_nothing(
    page: Any, sqlite_url: str, tmp_path: Path, install: Callable[[Path], None]
) -> None:
    root = make_distribution(
        tmp_path / "dist", "packsolve-evil", "1.0", {"evil": "evil_kind:KIND"}, {"evil_kind": EVIL_KIND}
    )
    install(root)
    level = make_level("evil-1", {"kind": "evil", "n": 1})
    build_run(sqlite_url, [Planned(level, "timeout", 1.0), Planned(strip_level(1), "solved", 0.1)])
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    with serving(sqlite_url, env={"PYTHONPATH": str(root)}, log_dir=tmp_path) as served:
        page.goto(f"{served.url}hardest?run=1")
        page.click("a.level-link >> text=evil-1")
        # Until the level page has replaced the hardest page, there is no picture to ask about.
        page.wait_for_function(
            "() => { const p = document.getElementById('level-picture');"
            " return p !== null && p.naturalWidth > 0; }"
        )
        page.goto(f"{served.url}levels/{level.hash}/picture.svg")  # opened on its own: sandboxed
        page.wait_for_load_state("load")
        time.sleep(0.5)
        assert page.title() != "pwned"
        assert not [u for u in requests if "pwned" in u], requests


def test_the_database_going_away_gives_a_503_page_that_recovers_by_itself(
    page: Any, pg_url: str, tmp_path: Path
) -> None:
    build_run(pg_url, [Planned(strip_level(i), "solved", 0.1) for i in range(3)])
    name = pg_url.rsplit("/", 1)[1]
    admin = create_engine(
        PG_ADMIN_URL.replace("postgresql://", "postgresql+psycopg://", 1), isolation_level="AUTOCOMMIT"
    )

    def rename(old: str, new: str) -> None:
        with admin.connect() as conn:
            conn.execute(
                text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = :d"), {"d": old}
            )
            conn.execute(text(f'ALTER DATABASE "{old}" RENAME TO "{new}"'))

    get_engine(pg_url).dispose()  # this process's connections would keep the database from being renamed
    try:
        with serving(pg_url, log_dir=tmp_path) as served:
            page.goto(served.url)
            assert page.locator("table.runs tbody tr").count() == 1
            rename(name, name + "_away")
            try:
                response = page.goto(served.url)
                assert response is not None and response.status == 503
                assert "the database is not answering" in page.inner_text("#error-message")
            finally:
                rename(name + "_away", name)
            page.wait_for_selector("table.runs", timeout=30_000)  # the 503 page retried by itself
            assert "Traceback" not in served.log.read_text()
    finally:
        admin.dispose()
