"""The worker's hot path: claim attempts and write their results, with statements built once."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, bindparam, case, func, literal, update
from sqlalchemy.orm import Session

from packsolve.db.models import utcnow
from packsolve.db.runs import finish_run_if_done
from packsolve.db.tables import ATTEMPTS, BATCH, PENDING_VALUES, rowcount
from packsolve.outcome import Outcome, Status

# The claim and the record run once per attempt, tiny ones included: their statements are built
# once, so SQLAlchemy compiles each shape once and reuses it; no expanding IN parameter in the
# one-attempt claim, whose SQL text would otherwise be rebuilt at every execution.
_PENDING_LITERALS = [literal(v) for v in PENDING_VALUES]


def _claim_stmt(one: bool) -> Any:
    """Return the claim's UPDATE for one level hash (c_hash) or a list of them (c_hashes)."""
    match = (
        ATTEMPTS.c.level_hash == bindparam("c_hash")
        if one
        else ATTEMPTS.c.level_hash.in_(bindparam("c_hashes", expanding=True))
    )
    return (
        update(ATTEMPTS)
        .where(ATTEMPTS.c.run_id == bindparam("c_run"), match)
        .where(ATTEMPTS.c.status.in_(_PENDING_LITERALS), ATTEMPTS.c.tries < bindparam("c_max"))
        .values(
            status=Status.RUNNING.value,
            worker=bindparam("c_worker"),
            started_at=bindparam("c_now"),
            tries=ATTEMPTS.c.tries + 1,
        )
        .returning(ATTEMPTS.c.level_hash)
    )


_CLAIM_ONE = _claim_stmt(one=True).values(deadline=bindparam("c_deadline", type_=ATTEMPTS.c.deadline.type))
_CLAIM_MANY = _claim_stmt(one=False)
_LOSE = (
    update(ATTEMPTS)
    .where(ATTEMPTS.c.run_id == bindparam("c_run"))
    .where(ATTEMPTS.c.level_hash.in_(bindparam("c_hashes", expanding=True)))
    .where(ATTEMPTS.c.status.in_(_PENDING_LITERALS))
    .values(status=Status.LOST.value, finished_at=bindparam("c_now"), message=bindparam("c_message"))
    .returning(ATTEMPTS.c.level_hash)
)


def claim_many(
    connection: Connection,
    run_id: int,
    level_hashes: Sequence[str],
    worker: str,
    max_tries: int,
    hard_s: float | None = None,
) -> dict[str, str]:
    """Claim attempts that will run one after the other, in two statements; return {hash: verdict}.

    A verdict is 'run' (now running for this worker), 'skip' (final or cancelled
    already) or 'lost'. Each claim counts a try; a task redelivered once too
    often (its workers keep dying) makes the attempt ``lost`` instead of running
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
        params: dict[str, Any] = {"c_run": run_id, "c_max": max_tries, "c_worker": worker, "c_now": now}
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
        claimed = connection.scalars(stmt, params).all()
        verdicts.update(dict.fromkeys(claimed, "run"))
        rest = [h for h in chunk if verdicts[h] != "run"]
        if not rest:
            continue
        message = (
            f"attempt lost: its task was delivered {max_tries} times and never finished "
            "(workers died or were killed while running it)"
        )
        lost = connection.scalars(
            _LOSE, {"c_run": run_id, "c_hashes": rest, "c_now": now, "c_message": message}
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
    # result counts its try, as the claim would have.
    claimed: bool = True


# The Core table, not the entity: the ORM would turn a list of parameters into
# an update by primary key, which these rows do not carry.
_RECORD = (
    update(ATTEMPTS)
    .where(ATTEMPTS.c.run_id == bindparam("b_run"), ATTEMPTS.c.level_hash == bindparam("b_level"))
    # Literals, not a plain in_(): an expanding IN parameter cannot go through executemany.
    .where(ATTEMPTS.c.status.in_(_PENDING_LITERALS))
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
    redelivered task finds the row final and changes nothing. All rows go in one
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
