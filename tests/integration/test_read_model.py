"""The read model (packsolve.figures): one snapshot table, made off the finishing transaction.

Reports and the dashboard show the same figures whether a finished run's snapshots are made, missing,
stale or made again; stamping a run finished makes none (it only stamps the run and calls the cheap
run-finished hooks); a stale snapshot is never used, and is made again by its next reader.
Real SQLite and PostgreSQL databases; runs built through create_run + record (the workers' write).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from packsolve.db.models import Attempt, Run, RunSnapshot
from packsolve.db.runs import finish_run_if_done
from packsolve.db.session import get_engine, session_scope
from packsolve.figures.finished import catch_up
from packsolve.report.compare import compare_runs
from packsolve.report.failures import failure_groups
from packsolve.report.hardest import hardest_in_run
from packsolve.report.summary import run_summary
from packsolve.settings import Settings
from packsolve.web import pages
from packsolve.web.app import create_app
from packsolve.web.security import Guard
from tests.support.dashboard import handled
from tests.support.inprocess import invoke
from tests.support.report_runs import Planned, build_run, strip_level

PACK = Path(__file__).resolve().parents[2] / "examples" / "packs" / "coins"
GUARD = Guard()


def _planned(n: int, shift: int, queued: int = 0) -> list[Planned]:
    """n levels: solved, timeouts and errors of a few message patterns; the last `queued` not run."""
    out = []
    for i in range(n):
        lv = strip_level(i)
        if (i + shift) % 3 == 0:
            out.append(Planned(lv, "solved", 0.1 * (i + 1), 0.09 * (i + 1), i, None))
        elif (i + shift) % 3 == 1:
            out.append(Planned(lv, "timeout", 10.5, 10.1, 1000 + i, f"time limit 10 s passed at node {i}"))
        else:
            out.append(Planned(lv, "error", 0.2, 0.2, i, f"{lv.name}: solver crashed with code {i % 2}"))
    return out + [Planned(strip_level(n + i), None) for i in range(queued)]


def _runs(url: str) -> tuple[int, int]:
    """A finished run and its finished rerun (another heuristic, other outcomes), as workers write them."""
    a = build_run(url, _planned(24, 0), time_limit=10.0)
    b = build_run(url, _planned(24, 1), heuristic="warnsdorff", time_limit=10.0, parent=a)
    return a, b


def _snapshots(url: str, run_id: int | None = None) -> list[tuple[int, str, Any]]:
    """Return (run, name, whether it holds) of every snapshot (of one run), in order."""
    holds = sa.case((Run.finished_at == RunSnapshot.stamp, True), else_=False)
    q = sa.select(RunSnapshot.run_id, RunSnapshot.name, holds).join(Run, Run.id == RunSnapshot.run_id)
    if run_id is not None:
        q = q.where(RunSnapshot.run_id == run_id)
    with session_scope(get_engine(url)) as session:
        return [
            (r, n, bool(h)) for r, n, h in session.execute(q.order_by(RunSnapshot.run_id, RunSnapshot.name))
        ]


def _page(app: Any, handler: Any, path: str, query: bytes = b"", **params: str) -> str:
    body: str = handled(app, handler, path, query, **params).body.decode()
    return body


def _shown(url: str, a: int, b: int, read_only: bool = False) -> dict[str, Any]:
    """Return what the reports (as JSON) and the dashboard's pages (as HTML) show of the two runs."""
    engine = get_engine(url, read_only=read_only)
    shown: dict[str, Any] = {}
    with session_scope(engine) as session:
        runs = [session.get(Run, a), session.get(Run, b)]
        assert runs[0] is not None and runs[1] is not None
        for run in runs:
            shown[f"summary {run.id}"] = run_summary(session, run)
            shown[f"failures {run.id}"] = failure_groups(session, run, 3)
            shown[f"hardest {run.id}"] = hardest_in_run(session, run)
        shown["compare"] = compare_runs(session, runs)
    # A new application: its caches are fresh, so each look reads the database. One guard: the same
    # form tokens on every look.
    app = create_app(Settings(database_url=url), GUARD, engine=engine)
    for run_id in (a, b):
        shown[f"run page {run_id}"] = _page(app, pages.run_page, f"/runs/{run_id}", run=str(run_id))
        shown[f"failures page {run_id}"] = _page(
            app, pages.failures_page, f"/runs/{run_id}/failures", run=str(run_id)
        )
    shown["compare page"] = _page(app, pages.compare_page, "/compare", f"runs={a},{b}".encode())
    # Through JSON, as the reports print them: what a user compares.
    return json.loads(json.dumps(shown, default=str))


def test_reports_and_pages_show_the_same_figures_with_snapshots_made_missing_stale_or_made_again(
    db_url: str,
) -> None:
    a, b = _runs(db_url)
    assert _snapshots(db_url) == []  # finished by the workers' write: no snapshot made
    # What is shown with nothing kept, read from the attempts by a reader that may keep nothing.
    before = _shown(db_url, a, b, read_only=True)
    assert _snapshots(db_url) == []
    # The scheduler's pass makes them: the same figures.
    assert sorted(_catch_up(db_url) + _catch_up(db_url)) == [a, b]  # two passes, a run each
    made = _snapshots(db_url)
    assert {(r, n) for r, n, _ in made} >= {(a, "final"), (a, "failures"), (a, "vector"), (b, "final")}
    assert (b, f"compare/{a}@", True) in [(r, n[: len(f"compare/{a}@")], h) for r, n, h in made]
    assert all(h for _, _, h in made)
    assert _shown(db_url, a, b) == before
    # Stale (made at an earlier finish, and wrong now): never shown, made again by their first reader.
    with session_scope(get_engine(db_url)) as session:
        session.execute(
            sa.update(RunSnapshot).values(
                stamp=datetime(2001, 1, 1, tzinfo=UTC),
                payload={"examples": 20, "groups": [], "medians": {}, "peaks": [], "attempts": 0},
            )
        )
    assert all(not h for _, _, h in _snapshots(db_url))
    assert _shown(db_url, a, b) == before
    again = _snapshots(db_url)
    assert {(a, "final", True), (a, "failures", True), (b, "final", True), (b, "failures", True)} <= set(
        again
    )
    # Dropped: made again by their readers, the same figures.
    with session_scope(get_engine(db_url)) as session:
        session.execute(sa.delete(RunSnapshot))
    assert _shown(db_url, a, b) == before
    assert {(a, "final", True), (b, "failures", True)} <= set(_snapshots(db_url))
    assert _shown(db_url, a, b) == before


def _catch_up(url: str) -> list[int]:
    with session_scope(get_engine(url)) as session:
        return catch_up(session)


@contextmanager
def _statements(engine: sa.Engine) -> Iterator[list[str]]:
    seen: list[str] = []

    def listen(conn, cursor, statement, parameters, context, executemany):  # noqa: ANN001
        seen.append(" ".join(statement.split()))

    sa.event.listen(engine, "before_cursor_execute", listen)
    try:
        yield seen
    finally:
        sa.event.remove(engine, "before_cursor_execute", listen)


def test_a_finish_stamps_the_run_and_makes_no_snapshot(db_url: str) -> None:
    a, b = _runs(db_url)
    assert sorted(_catch_up(db_url) + _catch_up(db_url)) == [a, b]  # two passes, a run each
    going = build_run(db_url, _planned(12, 2, queued=2), time_limit=10.0, parent=a)
    engine = get_engine(db_url)
    with session_scope(engine) as session:
        session.execute(
            sa.update(Attempt)
            .where(Attempt.run_id == going, Attempt.status == "queued")
            .values(status="timeout", wall_s=10.4, message="time limit 10 s passed")
        )
        with _statements(engine) as seen:
            assert finish_run_if_done(session, going) is True
    # The finishing transaction: the stamp and the hooks (dropping its own stale snapshots), nothing read.
    assert seen and all(re.match(r"(UPDATE runs |DELETE FROM run_snapshots )", s) for s in seen), seen
    assert not [s for s in seen if re.search(r"\bFROM attempts\b", s) and not s.startswith("UPDATE runs")]
    assert _snapshots(db_url, going) == []
    with session_scope(engine) as session:
        assert session.scalar(sa.select(sa.func.count()).select_from(RunSnapshot)) == len(_snapshots(db_url))
    # Resumed and finished again: its old snapshots go with the finish, the next pass makes them anew.
    assert _catch_up(db_url) == [going]
    with session_scope(engine) as session:
        session.execute(sa.update(Run).where(Run.id == going).values(finished_at=None))
    with session_scope(engine) as session:
        assert finish_run_if_done(session, going) is True
    assert _snapshots(db_url, going) == []
    assert _catch_up(db_url) == [going]
    assert all(h for _, _, h in _snapshots(db_url, going))


def test_a_local_solve_makes_its_runs_snapshots_when_it_ends(db_url: str, tmp_path: Path) -> None:
    res = invoke(
        "solve", str(PACK), "-q", "--time-limit", "1", env={"PACKSOLVE_DATABASE_URL": db_url}, cwd=tmp_path
    )
    assert res.returncode == 0, res.stderr
    assert [(n, h) for _, n, h in _snapshots(db_url, 1)] == [
        ("failures", True),
        ("final", True),
        ("vector", True),
    ]
    with session_scope(get_engine(db_url)) as session:
        assert catch_up(session) == []  # nothing left for the scheduler
