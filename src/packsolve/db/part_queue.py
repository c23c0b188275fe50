"""The parts of a split level as workers share them: rows of the parts table handed out, taken, ended.

A worker process that claims a split level's attempt leads it (queue.splits): it hands out each
round's parts as ``queued`` rows stamped with its claim's fencing token, and any worker process
helping with the level (its own included) takes one at a time. Every statement here holds only while
that claim is current (the attempt running under that token): once the attempt is taken back (its
holder's lease lapsed) or cancelled, no part of the old claim is taken, and a part's result whose row
is no longer held by its taker (handed out again, or forgotten by a later claim) is refused. A part
whose taker's lease lapsed goes back to ``queued`` (requeue_lapsed). The level's one result is the
leader's, written on its attempt through the same fencing as every result (queue.results).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import cast

from sqlalchemy import (
    ColumnElement,
    Connection,
    Table,
    delete,
    exists,
    func,
    insert,
    or_,
    select,
    update,
)

from packsolve.attempt import AttemptKey
from packsolve.db.models import Part, as_utc
from packsolve.db.tables import ATTEMPTS
from packsolve.db.workers import WORKERS, db_now, now_sql
from packsolve.outcome import Outcome, SearchStats, Status

PARTS = cast(Table, Part.__table__)
_OPEN = (Status.QUEUED.value, Status.RUNNING.value)


@dataclass(frozen=True)
class Handed:
    """A part to hand out: its index, round, window (best of all; None: whole) and the best length known."""

    index: int
    round: int
    window: tuple[int, int] | None
    best: int | None


@dataclass(frozen=True)
class Taken:
    """A part a worker process took: its row's id, what to run (see Handed) of how many parts, the count
    the level was split for, and how long its attempt had run when the part was taken."""

    id: int
    index: int
    parts: int
    of: int
    round: int
    window: tuple[int, int] | None
    best: int | None
    elapsed_s: float


@dataclass(frozen=True)
class Ended:
    """A part that ended: its row's id, index, and its Outcome (its answer the whole level's)."""

    id: int
    index: int
    outcome: Outcome


def _of(run_id: int, key: AttemptKey, token: int) -> list[ColumnElement[bool]]:
    h, heuristic = key
    return [
        PARTS.c.run_id == run_id,
        PARTS.c.level_hash == h,
        PARTS.c.heuristic == heuristic,
        PARTS.c.token == token,
    ]


def _claim_current(run_id: int, key: AttemptKey, token: int) -> ColumnElement[bool]:
    """The SQL condition: the attempt is running under this claim (its fencing token)."""
    h, heuristic = key
    return exists().where(
        ATTEMPTS.c.run_id == run_id,
        ATTEMPTS.c.level_hash == h,
        ATTEMPTS.c.heuristic == heuristic,
        ATTEMPTS.c.status == Status.RUNNING.value,
        ATTEMPTS.c.claims == token,
    )


def current(connection: Connection, run_id: int, key: AttemptKey, token: int) -> bool:
    """Return whether the attempt still runs under this claim (its parts may be taken and run)."""
    return token_of(connection, run_id, key) == token


def token_of(connection: Connection, run_id: int, key: AttemptKey) -> int | None:
    """Return the claim token the attempt runs under, or None if it is not running."""
    h, heuristic = key
    row = connection.execute(
        select(ATTEMPTS.c.claims).where(
            ATTEMPTS.c.run_id == run_id,
            ATTEMPTS.c.level_hash == h,
            ATTEMPTS.c.heuristic == heuristic,
            ATTEMPTS.c.status == Status.RUNNING.value,
        )
    ).first()
    return None if row is None else int(row[0])


def begin(connection: Connection, run_id: int, key: AttemptKey, token: int) -> int:
    """Forget the attempt's parts of every other claim (an earlier leader's, taken back, or a local run's
    before a rerun); return how many rows went. Their takers' results are then refused."""
    h, heuristic = key
    gone = connection.execute(
        delete(PARTS).where(
            PARTS.c.run_id == run_id,
            PARTS.c.level_hash == h,
            PARTS.c.heuristic == heuristic,
            or_(PARTS.c.token.is_(None), PARTS.c.token != token),
        )
    )
    return int(gone.rowcount or 0)


def hand_out(
    connection: Connection,
    run_id: int,
    key: AttemptKey,
    token: int,
    split: tuple[int, int],
    handed: Sequence[Handed],
) -> int:
    """Add these parts as queued rows of the claim, if it is current; return how many were handed (0:
    the claim is no longer current).

    split: (the count the level was split for, how many parts that gave)."""
    of, parts = split
    wanted = len(handed)
    if not handed or not current(connection, run_id, key, token):
        return 0
    # Rows already there are not added again: a call retried after its commit was lost adds none twice.
    rows = connection.execute(select(PARTS.c.part, PARTS.c.round).where(*_of(run_id, key, token)))
    there = {(part, round_) for part, round_ in rows}
    handed = [p for p in handed if (p.index, p.round) not in there]
    if not handed:
        return wanted
    h, heuristic = key
    connection.execute(
        insert(PARTS),
        [
            {
                "run_id": run_id,
                "level_hash": h,
                "heuristic": heuristic,
                "part": p.index,
                "parts": parts,
                "split_of": of,
                "round": p.round,
                "window_lo": None if p.window is None else p.window[0],
                "window_hi": None if p.window is None else p.window[1],
                "best": p.best,
                "status": Status.QUEUED.value,
                "token": token,
            }
            for p in handed
        ],
    )
    return wanted


def take(connection: Connection, run_id: int, key: AttemptKey, token: int, holder: str) -> Taken | None:
    """Take the claim's first queued part (by round, then index) for holder, with the best length known
    now; None if there is none to take (none queued, or the claim is no longer current). Two takers
    never get one row: the update is conditional on the row still being queued, and a taker that lost
    the race tries the next.

    A process runs one part at a time: a part still running under holder is one a call of its own
    took before its commit was lost (the database restarted, the connection was killed) and that was
    retried; it is that part that is returned, never left held and unrun."""
    held = connection.execute(
        select(PARTS.c.id)
        .where(*_of(run_id, key, token), PARTS.c.status == Status.RUNNING.value)
        .where(PARTS.c.holder == holder, _claim_current(run_id, key, token))
        .limit(1)
    ).first()
    if held is not None:
        return _taken(connection, run_id, key, token, held.id)
    while True:
        row = connection.execute(
            select(PARTS.c.id)
            .where(*_of(run_id, key, token), PARTS.c.status == Status.QUEUED.value)
            .where(_claim_current(run_id, key, token))
            .order_by(PARTS.c.round, PARTS.c.part)
            .limit(1)
        ).first()
        if row is None:
            return None
        got = connection.execute(
            update(PARTS)
            .where(PARTS.c.id == row.id, PARTS.c.status == Status.QUEUED.value)
            .values(status=Status.RUNNING.value, holder=holder, started_at=now_sql(connection))
        )
        if got.rowcount:
            return _taken(connection, run_id, key, token, row.id)


def _taken(connection: Connection, run_id: int, key: AttemptKey, token: int, part_id: int) -> Taken:
    """Return the Taken of a row just taken: what to run, how long its attempt has run, the best known."""
    row = connection.execute(
        select(
            PARTS.c.id, PARTS.c.part, PARTS.c.parts, PARTS.c.split_of, PARTS.c.round, PARTS.c.window_lo,
            PARTS.c.window_hi, PARTS.c.best,
        ).where(PARTS.c.id == part_id)
    ).one()  # fmt: skip
    window = None if row.window_lo is None else (row.window_lo, row.window_hi)
    begun = started_at(connection, run_id, key)
    elapsed = 0.0 if begun is None else max(0.0, (db_now(connection) - as_utc(begun)).total_seconds())
    # The best known now, not only when it was handed out: a part taken after another part of its round
    # found an answer prunes with that answer from its first node.
    found = best_length(connection, run_id, key, token)
    best = found if row.best is None or (found is not None and found < row.best) else row.best
    return Taken(row.id, row.part, row.parts, row.split_of, row.round, window, best, elapsed)


def finish(
    connection: Connection, taken: Taken, holder: str, outcome: Outcome, length: int | None, worker: str
) -> bool:
    """Write a taken part's end; return False (nothing written) if holder no longer holds its row: it was
    handed out again (holder's lease lapsed), or its claim was taken back and the row forgotten."""
    solution = json.dumps(outcome.solution) if outcome.status == Status.SOLVED else None
    done = connection.execute(
        update(PARTS)
        .where(PARTS.c.id == taken.id, PARTS.c.holder == holder, PARTS.c.status == Status.RUNNING.value)
        .values(
            status=outcome.status.value,
            nodes=outcome.nodes,
            wall_s=outcome.stats.wall_s,
            cpu_s=outcome.stats.cpu_s,
            peak_rss_mb=outcome.stats.peak_rss_mb or None,
            resume=outcome.resume,
            length=length,
            solution=solution,
            worker=worker,
            finished_at=now_sql(connection),
            message=outcome.message or None,
        )
    )
    return bool(done.rowcount)


def ended(connection: Connection, run_id: int, key: AttemptKey, token: int, seen: set[int]) -> list[Ended]:
    """Return the claim's parts that ended and are not in seen (row ids), in the order they ended."""
    rows = connection.execute(
        select(
            PARTS.c.id,
            PARTS.c.part,
            PARTS.c.status,
            PARTS.c.solution,
            PARTS.c.nodes,
            PARTS.c.wall_s,
            PARTS.c.cpu_s,
            PARTS.c.peak_rss_mb,
            PARTS.c.message,
            PARTS.c.resume,
        )
        .where(*_of(run_id, key, token), PARTS.c.status.not_in(_OPEN))
        .order_by(PARTS.c.finished_at, PARTS.c.id)
    )
    out = []
    for r in rows:
        if r.id in seen:
            continue
        stats = SearchStats(r.nodes or 0, r.wall_s or 0.0, r.cpu_s or 0.0, r.peak_rss_mb or 0.0)
        solution = None if r.solution is None else json.loads(r.solution)
        out.append(
            Ended(r.id, r.part, Outcome(Status(r.status), solution, stats, r.message or "", resume=r.resume))
        )
    return out


def best_length(connection: Connection, run_id: int, key: AttemptKey, token: int) -> int | None:
    """Return the shortest answer (of the whole level) any part of the claim has found, or None."""
    value = connection.execute(
        select(func.min(PARTS.c.length)).where(
            *_of(run_id, key, token), PARTS.c.status == Status.SOLVED.value
        )
    ).scalar()
    return None if value is None else int(value)


def requeue_lapsed(connection: Connection, run_id: int, key: AttemptKey, token: int) -> int:
    """Hand out again the claim's running parts whose taker's lease lapsed (or that has none); return how
    many. The taker, should it come back, finds the row no longer its own (finish refuses it)."""
    now = db_now(connection)
    live = select(WORKERS.c.name).where(WORKERS.c.lease_until >= now)
    gone = connection.execute(
        update(PARTS)
        .where(*_of(run_id, key, token), PARTS.c.status == Status.RUNNING.value)
        .where(or_(PARTS.c.holder.is_(None), PARTS.c.holder.not_in(live)))
        .values(status=Status.QUEUED.value, holder=None, started_at=None)
    )
    return int(gone.rowcount or 0)


def close(connection: Connection, run_id: int, key: AttemptKey, token: int, holder_of_lead: str) -> int:
    """Once the level is decided (or its claim lost): mark the claim's parts never taken cancelled; return
    how many. Parts still running end as their takers write them (each stopped by the level's end)."""
    gone = connection.execute(
        update(PARTS)
        .where(*_of(run_id, key, token), PARTS.c.status == Status.QUEUED.value)
        .values(status=Status.CANCELLED.value, worker=holder_of_lead, finished_at=now_sql(connection))
    )
    return int(gone.rowcount or 0)


def running(connection: Connection, run_id: int, key: AttemptKey, token: int) -> int:
    """Return how many of the claim's parts are running."""
    return int(
        connection.execute(
            select(func.count()).where(*_of(run_id, key, token), PARTS.c.status == Status.RUNNING.value)
        ).scalar_one()
    )


def started_at(connection: Connection, run_id: int, key: AttemptKey) -> datetime | None:
    """Return when the attempt started (its try), or None."""
    h, heuristic = key
    return connection.execute(
        select(ATTEMPTS.c.started_at).where(
            ATTEMPTS.c.run_id == run_id, ATTEMPTS.c.level_hash == h, ATTEMPTS.c.heuristic == heuristic
        )
    ).scalar()
