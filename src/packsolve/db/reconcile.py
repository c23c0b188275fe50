"""The scheduler's queries: find attempts that lost their worker or their task, take them back."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import and_, exists, func, or_, select, update
from sqlalchemy.orm import Session

from packsolve.attempt import tries_cap
from packsolve.db.models import Attempt, LevelRow, Run, as_utc
from packsolve.db.refusals import FRESH as REFUSED_FRESH
from packsolve.db.refusals import refused_lately
from packsolve.db.runs import finish_run_if_done
from packsolve.db.tables import BATCH, PENDING_VALUES, rowcount
from packsolve.db.workers import lapsed_holders, now_sql
from packsolve.outcome import Status
from packsolve.runstate import RunMode, RunState


@dataclass(frozen=True)
class StaleAttempt:
    """An attempt that lost its task or its worker, as read (the guarded update checks it is unchanged)."""

    id: int
    run_id: int
    level_hash: str
    status: str
    tries: int
    claims: int
    requeues: int
    worker: str | None
    max_tries: int | None
    run_state: str
    holder: str | None = None
    name: str = ""
    heuristic: str = ""


@dataclass(frozen=True)
class Taken:
    """A stale attempt this scheduler took: requeue it, or it was marked lost (or cancelled: its run was)."""

    run_id: int
    level_hash: str
    lost: bool
    cancelled: bool = False
    holder: str | None = None  # the worker process whose claim or hold it was (workers.name), if any
    name: str = ""  # the level's name
    heuristic: str = ""  # the attempt's (a run may try a level with several)

    @property
    def key(self) -> tuple[str, str]:
        """Return (level hash, heuristic): which attempt of its run it is."""
        return self.level_hash, self.heuristic

    @property
    def outcome(self) -> str:
        """Return what became of it: requeued, lost or cancelled."""
        return "cancelled" if self.cancelled else "lost" if self.lost else "requeued"


_COLUMNS = (
    Attempt.id,
    Attempt.run_id,
    Attempt.level_hash,
    Attempt.status,
    Attempt.tries,
    Attempt.claims,
    Attempt.requeues,
    Attempt.worker,
    Run.max_tries,
    Run.state,
    Attempt.holder,
    Attempt.name,
    Attempt.heuristic,
)


def stale_attempts(
    session: Session, now: datetime, cutoff: datetime, orphans_sent_before: datetime | None = None
) -> list[StaleAttempt]:
    """Return attempts of sent, unfinished distributed runs that lost their worker or their task.

    From the database alone, every pass: an attempt running, or queued in a chunk
    a worker process holds, whose holder's lease ended before now (whatever its
    time limit); one running whose deadline (claim + hard limit) is before cutoff,
    whoever holds it: the solver is killed at the hard limit, so a worker that
    has not reported by then plus the grace is stuck or cut off, and fencing
    refuses its late result. With orphans_sent_before (the
    caller saw the broker's queue empty, or that later tasks were handed out: see
    overtaken_before): also the queued attempts sent before it
    that no live worker holds and no worker refused lately (db.refusals: such a task comes back
    to the queue after a wait), whose task the broker no longer has. What this
    reads grows with what went wrong, not with the queue: the first two use the
    holder and status indexes, and the third runs only when tasks were lost.
    """
    # The lapsed holders first, as a list: `holder IN (names)` can use the holder index, where an
    # IN (subquery) beside an OR is a filter over every pending row (a million queued ones).
    lapsed_names = list(session.scalars(lapsed_holders(now)))
    running = Attempt.status == Status.RUNNING.value
    conditions = [and_(running, Attempt.deadline < cutoff)]
    if lapsed_names:
        conditions.append(and_(Attempt.holder.in_(lapsed_names), Attempt.status.in_(PENDING_VALUES)))
    if orphans_sent_before is not None:
        unheld = Attempt.holder.is_(None)
        conditions.append(
            and_(
                Attempt.status == Status.QUEUED.value,
                func.coalesce(Attempt.queued_at, Run.sent_at) < orphans_sent_before,
                or_(unheld, Attempt.holder.in_(lapsed_names)) if lapsed_names else unheld,
                # Its task was refused lately: it is waiting to come back, not lost.
                ~refused_lately(now - REFUSED_FRESH),
            )
        )
    found: dict[int, StaleAttempt] = {}
    for condition in conditions:  # one statement each, so each uses its own index
        rows = session.execute(
            select(*_COLUMNS)
            .join(Run, Run.id == Attempt.run_id)
            .where(Run.finished_at.is_(None), Run.mode == RunMode.DISTRIBUTED, Run.sent_at.is_not(None))
            .where(condition)
        )
        found.update((row[0], StaleAttempt(*cast(tuple[Any, ...], row))) for row in rows)
    return sorted(found.values(), key=lambda c: (c.run_id, c.id))


def take_stale(session: Session, candidates: Sequence[StaleAttempt], default_max_tries: int) -> list[Taken]:
    """Requeue each candidate (queued again, requeues + 1) or mark it lost or cancelled; return those taken.

    An attempt started max_tries times is lost; one that never started (queued,
    or claimed in a group its worker died before reaching) is never lost: a
    restarted broker or a dead worker costs it a requeue, not a try.
    An attempt of a cancelled run is cancelled, not run again. Each update only
    applies if the row is still as read, so of two schedulers only one takes an
    attempt; a worker that reported meanwhile wins too. On PostgreSQL rows
    another scheduler holds are skipped (FOR UPDATE SKIP LOCKED) instead of
    waited for. A candidate not taken is left out of the list.
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
    now = now_sql(session)
    taken: list[Taken] = []
    for c in candidates:
        cap = tries_cap(c.max_tries, default_max_tries)
        cancelled = c.run_state == RunState.CANCELLED
        lost = not cancelled and c.tries >= cap
        values: dict[str, Any]
        if cancelled:
            message = "cancelled by the user; its worker was lost before it reported"
            values = {
                "status": Status.CANCELLED.value,
                "finished_at": now,
                "deadline": None,
                "message": message,
            }
        elif lost:
            values = {
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
                "holder": None,
                "requeues": c.requeues + 1,
            }
        res = session.execute(
            update(Attempt)
            .where(Attempt.id == c.id, Attempt.status == c.status)
            .where(Attempt.tries == c.tries, Attempt.claims == c.claims, Attempt.requeues == c.requeues)
            .values(**values)
        )
        if rowcount(res):
            taken.append(Taken(c.run_id, c.level_hash, lost, cancelled, c.holder, c.name, c.heuristic))
    for run_id in {t.run_id for t in taken if t.lost or t.cancelled}:
        finish_run_if_done(session, run_id)
    return taken


def _lost_reason(c: StaleAttempt, cap: int) -> str:
    """Return the message stored on an attempt marked lost: the cap it reached, and the likely cause."""
    return (
        f"attempt lost: started {c.tries} times (cap {cap}) and never reported back; the last worker "
        f"({c.worker or 'unknown'}) died, was killed or lost its connection while running it"
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


def settled_messages(session: Session, messages: Sequence[Any]) -> list[str]:
    """Return the tags of unacknowledged tasks (brokerscan.Unacked) whose work is done or sent again.

    A task is settled once each of its attempts (run id, level hash, heuristic) is final, or was
    queued again after the task was delivered (a newer task carries it): redelivering it
    would only be skipped, so it can go.
    """
    named = {a for m in messages for a in m.attempts}
    state: dict[tuple[int, str, str], tuple[str, datetime | None]] = {}
    for run_id in sorted({r for r, _, _ in named}):
        hashes = sorted({h for r, h, _ in named if r == run_id})
        for i in range(0, len(hashes), BATCH):
            rows = session.execute(
                select(Attempt.level_hash, Attempt.heuristic, Attempt.status, Attempt.queued_at).where(
                    Attempt.run_id == run_id, Attempt.level_hash.in_(hashes[i : i + BATCH])
                )
            )
            state.update({(run_id, h, heuristic): (st, q) for h, heuristic, st, q in rows})

    def settled(pair: tuple[int, str, str], delivered: float | None) -> bool:
        if pair not in state:
            return False  # a deleted run's: redelivered after the visibility timeout, it is skipped
        status, queued_at = state[pair]
        if status not in PENDING_VALUES:
            return True
        if queued_at is None or delivered is None:
            return False  # never sent again: the task delivered is its only one
        return as_utc(queued_at).timestamp() > delivered

    return [m.tag for m in messages if m.attempts and all(settled(a, m.delivered) for a in m.attempts)]


def overtaken_before(session: Session) -> datetime | None:
    """Return when the newest distributed run with an attempt started was sent (None: no such run).

    The broker hands tasks out in the order they were sent, so a queued attempt sent before that
    had its task handed out already: if no worker holds it, its task was lost, whatever still waits.
    (A run sent while a long submit was sending may have tasks behind some of the other's: such an
    attempt is sent again once, needlessly; its duplicate task is skipped.) sent_at is stamped by
    the database's clock, as queued_at is: one clock.
    """
    started = exists().where(Attempt.run_id == Run.id, Attempt.started_at.is_not(None))
    return as_utc(
        session.scalar(select(func.max(Run.sent_at)).where(Run.mode == RunMode.DISTRIBUTED, started))
    )
