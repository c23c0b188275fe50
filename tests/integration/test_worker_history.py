"""A worker process's history and how long it is kept, on both databases (issue 37, item 2).

What `packsolve workers` reads (report.workers.process_rows) after each step: a lapse is recorded
once however many scheduler passes see it, a process that renews after lapsing is live again and
says so, a clean exit is `stopped`, and an ended process is kept a week (db.workers.KEEP_FOR), then
forgotten with its history.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import func, select, update

from packsolve.db.models import Worker, WorkerEvent
from packsolve.db.session import get_engine, session_scope
from packsolve.db.workers import KEEP_FOR, Facts, db_now, forget_old, note_lapsed, renew, retire, start
from packsolve.report.workers import process_rows


def shown(engine, name: str) -> dict | None:
    with session_scope(engine) as s:
        return next((p for p in process_rows(s) if p["process"] == name), None)


def lapse(engine, name: str) -> None:
    """End name's lease in the past, as a process killed a minute ago leaves it."""
    with session_scope(engine) as s:
        s.execute(
            update(Worker).where(Worker.name == name).values(lease_until=db_now(s) - timedelta(minutes=1))
        )


def test_a_lapse_is_told_once_a_return_and_a_clean_exit_each_once_and_kept_a_week(db_url):
    engine = get_engine(db_url, create=True)
    with engine.begin() as c:
        start(c, "w@box/7", "w@box", Facts(concurrency=3, programs={"knight": {"sha256": "ab" * 32}}))
        renew(c, "w@box/7", "w@box", 60.0, {})
    first = shown(engine, "w@box/7")
    assert first is not None and first["state"] == "live" and first["concurrency"] == 3
    assert first["programs"]["knight"]["sha256"] == "ab" * 32

    lapse(engine, "w@box/7")
    for _ in range(3):  # three passes see it lapsed: it is marked lost once
        with session_scope(engine) as s:
            note_lapsed(s, db_now(s))
    lost = shown(engine, "w@box/7")
    assert lost is not None and lost["state"] == "lost"
    assert [e["event"] for e in lost["history"]] == ["started", "lease lapsed"]

    with engine.begin() as c:  # it was only frozen: it renews, and is live again
        renew(c, "w@box/7", "w@box", 60.0, {})
    assert shown(engine, "w@box/7")["state"] == "live"  # type: ignore[index]
    with engine.begin() as c:
        retire(c, "w@box/7")
    with session_scope(engine) as s:
        assert note_lapsed(s, db_now(s)) == []  # a clean exit is no loss
    stopped = shown(engine, "w@box/7")
    assert stopped is not None and stopped["state"] == "stopped"
    assert [e["event"] for e in stopped["history"]] == ["started", "lease lapsed", "stopped"]

    # A lost process is kept with its history for KEEP_FOR after its lease ended, then forgotten.
    with engine.begin() as c:
        start(c, "gone@box/8", "gone@box", Facts())
        renew(c, "gone@box/8", "gone@box", 60.0, {})
    lapse(engine, "gone@box/8")
    with session_scope(engine) as s:
        now = db_now(s)
        note_lapsed(s, now)
        assert forget_old(s, now + KEEP_FOR - timedelta(hours=1)) == 0
    assert shown(engine, "gone@box/8")["state"] == "lost"  # type: ignore[index]
    with session_scope(engine) as s:
        assert s.scalar(select(func.count()).select_from(WorkerEvent)) == 5
        assert forget_old(s, now + KEEP_FOR + timedelta(hours=1)) == 2
        assert s.scalar(select(func.count()).select_from(WorkerEvent)) == 0  # their histories too
    assert shown(engine, "gone@box/8") is None and shown(engine, "w@box/7") is None
