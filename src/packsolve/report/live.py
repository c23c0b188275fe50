"""What a run is doing now: its workers with their lease state, and levels final over time."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from packsolve.db.models import Attempt, Worker, as_utc
from packsolve.db.workers import db_now
from packsolve.outcome import Status
from packsolve.report.export import iso

# Points of the progress line: enough for a smooth curve, few enough to draw at once.
POINTS = 120


def run_workers(session: Session, run_id: int) -> list[dict[str, Any]]:
    """Return the workers holding the run's running attempts: live or lapsed lease, and what each runs.

    Local runs have no leases: their running attempts are listed under their worker, lease None.
    """
    now = db_now(session)
    q = (
        select(Attempt.worker, Attempt.holder, Attempt.name, Worker.lease_until)
        .outerjoin(Worker, Worker.name == Attempt.holder)
        .where(Attempt.run_id == run_id, Attempt.status == Status.RUNNING)
        .order_by(Attempt.worker, Attempt.seq)
        .limit(500)
    )
    workers: dict[str, dict[str, Any]] = {}
    for worker, holder, name, until in session.execute(q):
        key = holder or worker or "?"
        w = workers.setdefault(key, {"worker": key, "lease": None, "lease_until": iso(until), "running": []})
        if until is not None:
            w["lease"] = "live" if as_utc(until) >= now else "lapsed"
        w["running"].append(name)
    return list(workers.values())


def final_over_time(session: Session, run_id: int) -> list[tuple[float, int]]:
    """Return (seconds since the first finish, levels final by then) at up to POINTS moments; [] if none.

    One pass over the run's finish times in the database; only the moments drawn come back.
    """
    done = session.execute(
        select(func.count()).where(Attempt.run_id == run_id, Attempt.finished_at.is_not(None))
    ).scalar_one()
    if not done:
        return []
    step = max(1, done // POINTS)
    numbered = (
        select(Attempt.finished_at, func.row_number().over(order_by=Attempt.finished_at).label("n"))
        .where(Attempt.run_id == run_id, Attempt.finished_at.is_not(None))
        .subquery()
    )
    rows = session.execute(
        select(numbered.c.finished_at, numbered.c.n)
        .where((numbered.c.n % step == 0) | (numbered.c.n == 1) | (numbered.c.n == done))
        .order_by(numbered.c.n)
    ).all()
    first = as_utc(rows[0][0])
    return [(0.0, 0)] + [(round((as_utc(at) - first).total_seconds(), 3), int(n)) for at, n in rows]
