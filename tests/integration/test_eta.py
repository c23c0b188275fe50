"""status's ETA comes from the recent throughput: it does not swing with how many attempts look running."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import update

from packsolve.db.models import Attempt, Run, utcnow
from packsolve.db.session import get_engine, session_scope
from packsolve.db.workers import renew
from packsolve.report.progress import run_progress
from tests.support.report_runs import Planned, build_run, strip_level


@pytest.mark.parametrize("running", [1, 20])
def test_the_eta_follows_the_recent_rate_whatever_is_counted_running(sqlite_url, running):
    levels = [strip_level(i) for i in range(170)]
    # 100 finished, one a second over the last 100 s (each took 2 s), the rest queued or running.
    run_id = build_run(
        sqlite_url,
        [Planned(lv, "solved", 2.0) for lv in levels[:100]] + [Planned(lv, None) for lv in levels[100:]],
        concurrency=None,
    )
    now = utcnow()
    with session_scope(get_engine(sqlite_url)) as session:
        for i, lv in enumerate(levels[:100]):
            end = now - timedelta(seconds=100 - i)
            session.execute(
                update(Attempt)
                .where(Attempt.run_id == run_id, Attempt.level_hash == lv.hash)
                .values(finished_at=end, started_at=end - timedelta(seconds=2))
            )
        for lv in levels[100 : 100 + running]:
            session.execute(
                update(Attempt)
                .where(Attempt.run_id == run_id, Attempt.level_hash == lv.hash)
                .values(status="running", worker="w@h", started_at=now)
            )
        session.execute(update(Run).where(Run.id == run_id).values(mode="distributed", sent_at=now))
    with get_engine(sqlite_url).begin() as connection:  # the worker running them is live: an ETA is due
        renew(connection, "w@h:1", "w@h", 60.0, {})
    with session_scope(get_engine(sqlite_url)) as session:
        p = run_progress(session, session.get(Run, run_id), now=now)
    assert p["eta_method"] == "recent rate"
    assert p["eta_s"] == pytest.approx(70.0, rel=0.15)  # 70 left at one a second


def test_summary_gives_peak_memory_per_kind_and_per_heuristic(sqlite_url):
    from packsolve.report.summary import run_summary

    a = build_run(sqlite_url, [Planned(strip_level(i), "solved", 0.1) for i in range(3)], heuristic="plain")
    with session_scope(get_engine(sqlite_url)) as session:
        s = run_summary(session, session.get(Run, a))
    assert s["memory"] == {"by_kind": {"onestroke": 20.0}, "by_heuristic": {"plain": 20.0}}
