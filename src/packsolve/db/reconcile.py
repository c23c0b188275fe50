"""The scheduler's queries: find attempts that may have lost their task, take them back (guarded updates)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import and_, or_, select, update
from sqlalchemy.orm import Session

from packsolve.db.models import Attempt, LevelRow, Run, utcnow
from packsolve.db.runs import finish_run_if_done
from packsolve.db.tables import BATCH, rowcount
from packsolve.outcome import Status


@dataclass(frozen=True)
class StaleAttempt:
    """An attempt that may have lost its task, as read (the guarded update checks it is unchanged)."""

    id: int
    run_id: int
    level_hash: str
    status: str
    tries: int
    requeues: int
    worker: str | None
    max_tries: int | None


@dataclass(frozen=True)
class Taken:
    """A stale attempt this scheduler took: requeue it, or it was marked lost."""

    run_id: int
    level_hash: str
    lost: bool


def stale_attempts(
    session: Session, cutoff: datetime, sent_cutoff: datetime | None = None
) -> list[StaleAttempt]:
    """Return attempts of unfinished distributed runs that may have lost their task; empty if none.

    cutoff is now minus the grace: a running attempt whose deadline is older, or a
    queued one never marked sent in a run created before it (its submit died), is a
    candidate. A queued attempt marked sent (queued_at) before sent_cutoff (default
    cutoff) is one too: its task must be in the broker, which decides.
    """
    sent_cutoff = cutoff if sent_cutoff is None else sent_cutoff
    queued = Attempt.status == Status.QUEUED.value
    rows = session.execute(
        select(
            Attempt.id, Attempt.run_id, Attempt.level_hash, Attempt.status, Attempt.tries,
            Attempt.requeues, Attempt.worker, Run.max_tries,
        )
        .join(Run, Run.id == Attempt.run_id)
        .where(Run.finished_at.is_(None), Run.mode == "distributed")
        .where(
            or_(
                and_(Attempt.status == Status.RUNNING.value, Attempt.deadline < cutoff),
                and_(queued, Attempt.queued_at < sent_cutoff),
                and_(queued, Attempt.queued_at.is_(None), Run.created_at < cutoff),
            )
        )
        .order_by(Attempt.run_id, Attempt.seq)
    )  # fmt: skip
    stale = [StaleAttempt(*row) for row in rows]
    # Attempts claimed together (one worker, one claim time) die together: once the first of
    # a group is overdue, the rest (whose deadlines lie further out) go with it.
    overdue = {(c.run_id, c.worker) for c in stale if c.status == Status.RUNNING.value}
    if overdue:
        starts = session.execute(
            select(Attempt.run_id, Attempt.worker, Attempt.started_at)
            .where(Attempt.status == Status.RUNNING.value, Attempt.deadline < cutoff)
            .where(Attempt.run_id.in_(sorted({r for r, _ in overdue})))
            .distinct()
        ).all()
        seen = {c.id for c in stale}
        for run_id, worker, started_at in starts:
            rows = session.execute(
                select(
                    Attempt.id, Attempt.run_id, Attempt.level_hash, Attempt.status, Attempt.tries,
                    Attempt.requeues, Attempt.worker, Run.max_tries,
                )
                .join(Run, Run.id == Attempt.run_id)
                .where(Attempt.run_id == run_id, Attempt.worker == worker, Attempt.started_at == started_at)
                .where(Attempt.status == Status.RUNNING.value)
            )  # fmt: skip
            stale.extend(StaleAttempt(*row) for row in rows if row[0] not in seen)
            seen.update(row.id for row in stale)
    return stale


def take_stale(session: Session, candidates: Sequence[StaleAttempt], default_max_tries: int) -> list[Taken]:
    """Requeue each candidate (queued again, requeues + 1) or, past the cap, mark it lost; return those taken.

    Each update only applies if the row is still as read, so of two schedulers
    only one takes an attempt; a worker that reported meanwhile wins too. On
    PostgreSQL rows another scheduler holds are skipped (FOR UPDATE SKIP LOCKED)
    instead of waited for. A candidate not taken is left out of the list.
    """
    if not candidates:
        return []
    ids = [c.id for c in candidates]
    if session.get_bind().dialect.name == "postgresql":
        locked: set[int] = set()
        for i in range(0, len(ids), BATCH):
            locked.update(
                session.scalars(
                    select(Attempt.id)
                    .where(Attempt.id.in_(ids[i : i + BATCH]))
                    .with_for_update(skip_locked=True)
                )
            )
        candidates = [c for c in candidates if c.id in locked]
    now = utcnow()
    taken: list[Taken] = []
    for c in candidates:
        cap = c.max_tries or default_max_tries
        lost = c.tries >= cap or c.requeues >= cap
        if lost:
            values: dict[str, Any] = {
                "status": Status.LOST.value,
                "finished_at": now,
                "deadline": None,
                "message": _lost_reason(c, cap),
            }
        else:
            values = {
                "status": Status.QUEUED.value,
                "queued_at": now,
                "deadline": None,
                "requeues": c.requeues + 1,
            }
        res = session.execute(
            update(Attempt)
            .where(Attempt.id == c.id, Attempt.status == c.status)
            .where(Attempt.tries == c.tries, Attempt.requeues == c.requeues)
            .values(**values)
        )
        if rowcount(res):
            taken.append(Taken(c.run_id, c.level_hash, lost))
    for run_id in {t.run_id for t in taken if t.lost}:
        finish_run_if_done(session, run_id)
    return taken


def _lost_reason(c: StaleAttempt, cap: int) -> str:
    """Return the message stored on an attempt marked lost: which cap it reached, and the likely cause."""
    if c.tries >= cap:
        return (
            f"attempt lost: started {c.tries} times (cap {cap}) and never reported back; the last worker "
            f"({c.worker or 'unknown'}) died, was killed or lost its connection while running it"
        )
    return (
        f"attempt lost: its task vanished from the broker {c.requeues} times (cap {cap}) before a worker "
        "took it (broker restarted without persistence?)"
    )


def attempts_with_levels(
    session: Session, run_id: int, hashes: Sequence[str]
) -> list[tuple[Attempt, LevelRow]]:
    """Return the run's attempts for these level hashes with their levels, in pack order.

    A hash the run has no attempt for is left out.
    """
    out: list[tuple[Attempt, LevelRow]] = []
    for i in range(0, len(hashes), BATCH):
        rows = session.execute(
            select(Attempt, LevelRow)
            .join(LevelRow, LevelRow.hash == Attempt.level_hash)
            .where(Attempt.run_id == run_id, Attempt.level_hash.in_(hashes[i : i + BATCH]))
        )
        out.extend((a, lv) for a, lv in rows)
    out.sort(key=lambda pair: pair[0].seq)
    return out
