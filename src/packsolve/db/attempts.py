"""The worker's hot path: claim attempts and write their results, with statements built once."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Integer, and_, bindparam, case, exists, func, literal, or_, select, update
from sqlalchemy.orm import Session

from packsolve.db.models import utcnow
from packsolve.db.runs import finish_run_if_done
from packsolve.db.tables import ATTEMPTS, BATCH, PENDING_VALUES, rowcount
from packsolve.db.workers import WORKERS
from packsolve.outcome import Outcome, Status

# The claim and the record run once per attempt, tiny ones included: their statements are built
# once, so SQLAlchemy compiles each shape once and reuses it; no expanding IN parameter in the
# one-attempt claim, whose SQL text would otherwise be rebuilt at every execution.
_PENDING_LITERALS = [literal(v) for v in PENDING_VALUES]
_QUEUED = literal(Status.QUEUED.value)
_RUNNING = literal(Status.RUNNING.value)

# A running attempt may be claimed again only if its holder's lease has lapsed (or it has no
# holder: claimed by a worker of an earlier version); a live holder's claim is never taken over.
_HOLDER_ALIVE = exists().where(
    WORKERS.c.name == ATTEMPTS.c.holder,
    WORKERS.c.lease_until > bindparam("c_now", type_=WORKERS.c.lease_until.type),
)
_CLAIMABLE = or_(ATTEMPTS.c.status == _QUEUED, and_(ATTEMPTS.c.status == _RUNNING, ~_HOLDER_ALIVE))


def _claim_stmt(one: bool) -> Any:
    """Return the claim's UPDATE for one level hash (c_hash) or a list of them (c_hashes).

    It returns each claimed hash with its fencing token: the try count after this claim.
    """
    match = (
        ATTEMPTS.c.level_hash == bindparam("c_hash")
        if one
        else ATTEMPTS.c.level_hash.in_(bindparam("c_hashes", expanding=True))
    )
    return (
        update(ATTEMPTS)
        .where(ATTEMPTS.c.run_id == bindparam("c_run"), match)
        .where(_CLAIMABLE, ATTEMPTS.c.tries < bindparam("c_max"))
        .values(
            status=Status.RUNNING.value,
            worker=bindparam("c_worker"),
            holder=bindparam("c_holder"),
            started_at=bindparam("c_now"),
            tries=ATTEMPTS.c.tries + 1,
        )
        .returning(ATTEMPTS.c.level_hash, ATTEMPTS.c.tries)
    )


_CLAIM_ONE = _claim_stmt(one=True).values(deadline=bindparam("c_deadline", type_=ATTEMPTS.c.deadline.type))
_CLAIM_MANY = _claim_stmt(one=False)
_LOSE = (
    update(ATTEMPTS)
    .where(ATTEMPTS.c.run_id == bindparam("c_run"))
    .where(ATTEMPTS.c.level_hash.in_(bindparam("c_hashes", expanding=True)))
    .where(_CLAIMABLE, ATTEMPTS.c.tries >= bindparam("c_max"))
    .values(status=Status.LOST.value, finished_at=bindparam("c_now"), message=bindparam("c_message"))
    .returning(ATTEMPTS.c.level_hash)
)
# The rest of a chunk waits for this worker process: queued, held (the scheduler leaves it be
# while the holder's lease lasts, and takes it back once it has lapsed).
_HOLD = (
    update(ATTEMPTS)
    .where(ATTEMPTS.c.run_id == bindparam("c_run"))
    .where(ATTEMPTS.c.level_hash.in_(bindparam("c_hashes", expanding=True)))
    .where(ATTEMPTS.c.status == _QUEUED)
    .values(holder=bindparam("c_holder"))
)


def hold(connection: Connection, run_id: int, level_hashes: Sequence[str], holder: str) -> None:
    """Mark the queued attempts of a chunk as waiting for holder (see _HOLD)."""
    hashes = list(dict.fromkeys(level_hashes))
    for i in range(0, len(hashes), BATCH):
        connection.execute(_HOLD, {"c_run": run_id, "c_hashes": hashes[i : i + BATCH], "c_holder": holder})


def claim_many(
    connection: Connection,
    run_id: int,
    level_hashes: Sequence[str],
    worker: str,
    max_tries: int,
    hard_s: float | None = None,
    holder: str | None = None,
    tokens: dict[str, int] | None = None,
) -> dict[str, str]:
    """Claim attempts that will run one after the other, in two statements; return {hash: verdict}.

    A verdict is 'run' (now running for this worker), 'skip' (final, cancelled,
    or held by another worker whose lease is alive) or 'lost'. holder names the
    worker process (its lease); tokens, if given, receives each claimed hash's
    fencing token, which its result must carry (Result.token). Each claim counts
    a try; a task redelivered once too often (its workers keep dying) makes the
    attempt ``lost`` instead of running
    again. hard_s (the hard limit) sets the deadline after which the scheduler
    presumes the worker dead: the k-th claimed attempt cannot start later than k
    hard limits from now (each before it is killed at its hard limit), so its
    deadline is set that far ahead, and the scheduler never takes a queued-up
    one for a dead worker's.
    """
    hashes = list(dict.fromkeys(level_hashes))
    verdicts = dict.fromkeys(hashes, "skip")
    now = utcnow()
    for i in range(0, len(hashes), BATCH):
        chunk = hashes[i : i + BATCH]
        params: dict[str, Any] = {
            "c_run": run_id, "c_max": max_tries, "c_worker": worker, "c_now": now, "c_holder": holder,
        }  # fmt: skip
        if len(chunk) == 1:
            stmt = _CLAIM_ONE
            params["c_hash"] = chunk[0]
            params["c_deadline"] = None if hard_s is None else now + timedelta(seconds=hard_s)
        else:
            params["c_hashes"] = chunk
            deadline: Any = None
            if hard_s is not None:
                steps = {h: now + timedelta(seconds=hard_s * (k + 1)) for k, h in enumerate(chunk)}
                deadline = case(steps, value=ATTEMPTS.c.level_hash)
            stmt = _CLAIM_MANY.values(deadline=deadline)
        claimed: dict[str, int] = {h: t for h, t in connection.execute(stmt, params)}
        verdicts.update(dict.fromkeys(claimed, "run"))
        if tokens is not None:
            tokens.update(claimed)
        rest = [h for h in chunk if verdicts[h] != "run"]
        if not rest:
            continue
        message = (
            f"attempt lost: its task was delivered {max_tries} times and never finished "
            "(workers died or were killed while running it)"
        )
        lost = connection.scalars(
            _LOSE, {"c_run": run_id, "c_hashes": rest, "c_now": now, "c_message": message, "c_max": max_tries}
        )
        verdicts.update(dict.fromkeys(lost.all(), "lost"))
    if "lost" in verdicts.values():
        finish_run_if_done(connection, run_id)
    return verdicts


@dataclass(frozen=True)
class Result:
    """One finished attempt to record."""

    run_id: int
    level_hash: str
    outcome: Outcome
    length: int | None
    worker: str | None
    started_at: datetime | None = None
    finished_at: datetime | None = None  # default: when it is recorded
    # False: never claimed (a tiny attempt that ended before its claim was due); writing the
    # result counts its try, as the claim would have, and lands only while the attempt is queued.
    claimed: bool = True
    # The fencing token of the claim (claim_many's tokens): the result lands only while the
    # attempt is running under that very claim. None: the local pool, whose run is its own.
    token: int | None = None


# A result's claim: None (local pool), 0 (never claimed), else the claim's fencing token.
_TOKEN = bindparam("b_token", type_=Integer())
# The Core table, not the entity: the ORM would turn a list of parameters into
# an update by primary key, which these rows do not carry.
_RECORD = (
    update(ATTEMPTS)
    .where(ATTEMPTS.c.run_id == bindparam("b_run"), ATTEMPTS.c.level_hash == bindparam("b_level"))
    .where(
        or_(
            # Literals, not a plain in_(): an expanding IN parameter cannot go through executemany.
            and_(_TOKEN.is_(None), ATTEMPTS.c.status.in_(_PENDING_LITERALS)),
            and_(_TOKEN == 0, ATTEMPTS.c.status == _QUEUED),
            and_(_TOKEN > 0, ATTEMPTS.c.status == _RUNNING, ATTEMPTS.c.tries == _TOKEN),
        )
    )
    .values(
        worker=func.coalesce(bindparam("b_worker", type_=ATTEMPTS.c.worker.type), ATTEMPTS.c.worker),
        started_at=func.coalesce(
            bindparam("b_started", type_=ATTEMPTS.c.started_at.type), ATTEMPTS.c.started_at
        ),
        tries=ATTEMPTS.c.tries + bindparam("b_tries", type_=ATTEMPTS.c.tries.type),
    )
)


def record(db: Session | Connection, results: Iterable[Result], finish: bool = True) -> int:
    """Write final outcomes; an attempt already final is left alone. Return rows written (0 if none).

    This is the idempotent upsert keyed by (run, level): a late duplicate of a
    redelivered task finds the row final and changes nothing, and a result whose
    claim is no longer current (its token is stale: the attempt was taken back
    and claimed again, or is queued again) changes nothing either. All rows go in one
    executemany (one round trip per batch with psycopg's pipeline). db is a Core
    connection (the worker) or an ORM session (the local pool).
    """
    now = utcnow()
    rows: list[dict[str, Any]] = []
    for r in results:
        o = r.outcome
        rows.append(
            {
                "b_run": r.run_id,
                "b_level": r.level_hash,
                "status": o.status.value,
                "solution": None if o.solution is None else json.dumps(o.solution, separators=(",", ":")),
                "length": r.length,
                "nodes": o.stats.nodes,
                "wall_s": o.stats.wall_s,
                "cpu_s": o.stats.cpu_s,
                "peak_rss_mb": o.stats.peak_rss_mb,
                "finished_at": r.finished_at or now,
                "message": o.message or None,
                "b_worker": r.worker,
                "b_started": r.started_at,
                "b_tries": 0 if r.claimed else 1,
                "b_token": 0 if not r.claimed else r.token,
            }
        )
    if not rows:
        return 0
    stmt = _RECORD
    written = 0
    for i in range(0, len(rows), BATCH):
        batch = rows[i : i + BATCH]
        # One row goes as a plain execute: executemany's set-up costs more than the row.
        written += rowcount(db.execute(stmt, batch[0] if len(batch) == 1 else batch))
    # finish=False: the caller stamps finished runs itself, later, in a fresh transaction.
    for run_id in sorted({int(row["b_run"]) for row in rows}) if finish else ():
        finish_run_if_done(db, run_id)
    return written


_TAKEN_BACK = (Status.QUEUED.value, Status.LOST.value, Status.CANCELLED.value)


def stale_of(connection: Connection, results: Sequence[Result]) -> list[tuple[Result, str]]:
    """Return the results whose claim is no longer current, each with what holds the attempt now.

    Asked after record() wrote fewer rows than it was given. Stale: the attempt
    was claimed again since (another try), or taken back (queued again, lost,
    cancelled). A result refused because its own claim's result is already there
    is not stale and is left out.
    """
    out: list[tuple[Result, str]] = []
    for r in results:
        if not r.claimed or r.token is None:
            continue
        row = connection.execute(
            select(ATTEMPTS.c.status, ATTEMPTS.c.tries, ATTEMPTS.c.holder).where(
                ATTEMPTS.c.run_id == r.run_id, ATTEMPTS.c.level_hash == r.level_hash
            )
        ).first()
        if row is None or (row.tries == r.token and row.status not in _TAKEN_BACK):
            continue
        out.append(
            (r, f"its claim (token {r.token}) is stale: now {row.status}, try {row.tries} ({row.holder})")
        )
    return out
