"""A finished run's failure groups are kept (a run snapshot, 0021), equal to grouping its attempts.

And a run going has its medians read over its attempts at most once per the dashboard's few seconds.
Real SQLite and PostgreSQL databases; runs built through create_run + record (the workers' write).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial

import sqlalchemy as sa

from packsolve.db.migrate import current_revision, head_revision, upgrade
from packsolve.db.models import Attempt, Run
from packsolve.db.session import get_engine, make_engine, session_scope
from packsolve.figures.failures import KEPT_EXAMPLES, failure_groups_of, kept_groups, read_groups
from packsolve.figures.finished import catch_up
from packsolve.report.failures import failure_groups
from packsolve.report.summary import run_summary
from packsolve.settings import Settings
from packsolve.web import pages
from packsolve.web.app import create_app
from packsolve.web.cache import RECENT_TTL_S, Recent
from tests.integration.test_run_options_migration import migrate_to
from tests.support.dashboard import handled
from tests.support.inprocess import invoke
from tests.support.report_runs import Planned, build_run, strip_level


def failing_run(url: str, n: int = 30, queued: int = 0) -> int:
    """Build a run of n levels: a third solved, the rest failing with messages of a few patterns."""
    planned = []
    for i in range(n):
        lv = strip_level(i)
        if i % 3 == 0:
            planned.append(Planned(lv, "solved", 0.1 * (i + 1), 0.1 * i, i))
        elif i % 3 == 1:
            planned.append(
                Planned(lv, "timeout", 10.5, 10.1, 1000 + i, f"time limit 10 s passed at node {i}")
            )
        else:
            message = f"{lv.name}: solver crashed with code {i % 2}" if i % 4 else "out of memory"
            planned.append(Planned(lv, "error", 0.2, 0.2, i, message))
    planned += [Planned(strip_level(n + i), None) for i in range(queued)]
    return build_run(url, planned)


@contextmanager
def statements(engine: sa.Engine) -> Iterator[list[str]]:
    """Collect the SQL text of every statement the engine runs inside the block."""
    seen: list[str] = []

    def listen(conn, cursor, statement, parameters, context, executemany):  # noqa: ANN001
        seen.append(statement)

    sa.event.listen(engine, "before_cursor_execute", listen)
    try:
        yield seen
    finally:
        sa.event.remove(engine, "before_cursor_execute", listen)


def reads_attempts(seen: list[str]) -> list[str]:
    return [s for s in seen if re.search(r"\bFROM attempts\b", s)]


def test_a_finished_run_keeps_its_groups_and_report_failures_reads_no_attempt(db_url: str) -> None:
    run_id = failing_run(db_url)
    engine = get_engine(db_url)
    with session_scope(engine) as session:
        assert catch_up(session) == [run_id]  # the scheduler's pass makes the finished run's snapshots
    with session_scope(engine) as session:
        run = session.get(Run, run_id)
        assert run is not None and run.finished_at is not None
        fresh = read_groups(session, run_id, KEPT_EXAMPLES)
        assert kept_groups(session, run_id, KEPT_EXAMPLES) == fresh
        # Three patterns of errors (the level name and the numbers dropped), one of timeouts.
        assert sorted((g["status"], g["pattern"], g["count"]) for g in fresh) == [
            ("error", "out of memory", 2),
            ("error", "solver crashed with code N", 8),
            ("timeout", "time limit N s passed at node N", 10),
        ]
        with statements(engine) as seen:
            report = failure_groups(session, run, 3)
        assert reads_attempts(seen) == [], seen
        assert report["failed"] == 20 and report["total"] == 30
        assert [g["examples"] for g in report["groups"]] == [g["examples"][:3] for g in fresh]
        # More examples than kept for a group larger than that: its attempts are read again.
        big = failing_run(db_url, n=3 * (KEPT_EXAMPLES + 5))
        more = KEPT_EXAMPLES + 5
        big_run = session.get(Run, big)
        assert kept_groups(session, big, more) is None
        with statements(engine) as seen:
            report = failure_groups(session, big_run, more)
        assert reads_attempts(seen)
        assert [g["examples"] for g in report["groups"]] == [
            g["examples"] for g in read_groups(session, big, more)
        ]
        assert max(len(g["examples"]) for g in report["groups"]) == KEPT_EXAMPLES + 5
    # The CLI's JSON: the same groups.
    res = invoke(
        "report", "failures", str(run_id), "--format", "json", env={"PACKSOLVE_DATABASE_URL": db_url}
    )
    assert res.returncode == 0, res.stderr
    shown = json.loads(res.stdout)
    assert [(g["status"], g["pattern"], g["count"], g["kinds"]) for g in shown["groups"]] == [
        (g["status"], g["pattern"], g["count"], g["kinds"]) for g in fresh
    ]


def test_a_reopened_run_is_grouped_again_and_kept_anew_when_it_finishes(db_url: str) -> None:
    run_id = failing_run(db_url, queued=1)
    engine = get_engine(db_url)
    with session_scope(engine) as session:
        assert session.get(Run, run_id).finished_at is None  # type: ignore[union-attr]
        assert kept_groups(session, run_id, 3) is None
    # Finished: its last level fails too, in a group of its own.
    with session_scope(engine) as session:
        session.execute(
            sa.update(Attempt)
            .where(Attempt.run_id == run_id, Attempt.status == "queued")
            .values(status="memout", message="memory limit 2048 MB passed")
        )
        from packsolve.db.runs import finish_run_if_done

        assert finish_run_if_done(session, run_id) is True
    with session_scope(engine) as session:
        assert kept_groups(session, run_id, KEPT_EXAMPLES) is None  # finishing makes no snapshot
        run = session.get(Run, run_id)
        assert run is not None
        first = failure_groups_of(session, run, 3)  # its first reader keeps them
    with session_scope(engine) as session:
        kept = kept_groups(session, run_id, KEPT_EXAMPLES)
        assert first == kept_groups(session, run_id, 3)
        assert kept is not None and kept == read_groups(session, run_id, KEPT_EXAMPLES)
        assert ("memout", "memory limit N MB passed", 1) in [
            (g["status"], g["pattern"], g["count"]) for g in kept
        ]
        # Reopened (as resume does): what was kept no longer holds.
        session.execute(sa.update(Run).where(Run.id == run_id).values(finished_at=None))
    with session_scope(engine) as session:
        assert kept_groups(session, run_id, 3) is None
    # A finished run deleted: nothing kept for it.
    other = failing_run(db_url)
    kept_for = "SELECT run_id FROM run_snapshots WHERE name = 'failures' ORDER BY run_id"
    with session_scope(engine) as session:
        assert catch_up(session) == [other]
    with session_scope(engine) as session:
        # The reopened run's old groups stay until it finishes again (they no longer match its finish).
        assert session.execute(sa.text(kept_for)).scalars().all() == [run_id, other]
    res = invoke("runs", "delete", str(other), "--yes", env={"PACKSOLVE_DATABASE_URL": db_url})
    assert res.returncode == 0, res.stderr
    with session_scope(engine) as session:
        assert session.execute(sa.text(kept_for)).scalars().all() == [run_id]


def test_the_migration_groups_the_failures_of_runs_finished_at_0016(db_url: str) -> None:
    finished = failing_run(db_url)
    going = failing_run(db_url, queued=2)
    engine = make_engine(db_url)
    migrate_to(engine, "0016", down=True)
    # What happened at 0016, with nothing kept: a level of the finished run now failed otherwise.
    with engine.begin() as conn:
        conn.execute(
            sa.update(Attempt)
            .where(Attempt.run_id == finished, Attempt.seq == 0)
            .values(status="wrong", message="strip-0: the path misses cell (0, 1)")
        )
    assert upgrade(engine) is True and current_revision(engine) == head_revision(engine)
    with session_scope(engine) as session:
        assert kept_groups(session, finished, KEPT_EXAMPLES) is None  # no backfill: made lazily
        assert catch_up(session) == [finished]  # by the scheduler's next pass
    with session_scope(engine) as session:
        kept = kept_groups(session, finished, KEPT_EXAMPLES)
        assert kept is not None and kept == read_groups(session, finished, KEPT_EXAMPLES)
        assert ("wrong", "the path misses cell (N, N)", 1) in [
            (g["status"], g["pattern"], g["count"]) for g in kept
        ]
        assert kept_groups(session, going, 3) is None
        rows = session.execute(sa.text("SELECT run_id FROM run_snapshots WHERE name = 'failures'")).scalars()
        rows = rows.all()
        assert rows == [finished]


def _medians_read(seen: list[str]) -> list[str]:
    """The statements that read a run's times in order (a median) or its peak memory."""
    return [
        s for s in reads_attempts(seen) if re.search(r"ORDER BY attempts\.(wall_s|cpu_s)|peak_rss_mb\)", s)
    ]


def test_a_run_going_has_its_medians_read_once_per_few_seconds(db_url: str) -> None:
    run_id = failing_run(db_url, queued=3)
    engine = get_engine(db_url)
    recent = Recent(ttl=60.0)
    with session_scope(engine) as session:
        run = session.get(Run, run_id)
        assert run is not None and run.finished_at is None
        with statements(engine) as first:
            before = run_summary(session, run, reuse=partial(recent.get, ("final", run_id)))
        assert _medians_read(first)
        with statements(engine) as second:
            again = run_summary(session, run, reuse=partial(recent.get, ("final", run_id)))
        assert _medians_read(second) == [], second
        assert again == before
        # Without reuse (the CLI's report summary), read each time: the same figures.
        assert run_summary(session, run) == before


def _page(app, path: str, run_id: int) -> str:
    return handled(app, pages.run_page, path, run=str(run_id)).body.decode()


def test_the_run_page_of_a_run_going_reads_medians_once_per_ttl_and_says_so(db_url: str) -> None:
    run_id = failing_run(db_url, queued=3)
    engine = get_engine(db_url)
    # Each application has caches of its own: the other database's run 1 is not found in them.
    app = create_app(Settings(database_url=db_url), engine=engine)
    with statements(engine) as first:
        html = _page(app, f"/runs/{run_id}", run_id)
    assert _medians_read(first)
    assert f"medians and peak memory read at most every {int(RECENT_TTL_S)} s" in html
    with statements(engine) as second:
        _page(app, f"/runs/{run_id}", run_id)
    assert _medians_read(second) == [], second
    finished = failing_run(db_url)
    assert "medians-age" not in _page(app, f"/runs/{finished}", finished)
