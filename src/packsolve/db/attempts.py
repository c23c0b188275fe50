"""The worker's hot path: claim attempts and write their results, with statements built once."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import (
    Connection,
    Integer,
    Interval,
    Table,
    and_,
    bindparam,
    case,
    exists,
    func,
    literal,
    or_,
    select,
    update,
)
from sqlalchemy.orm import Session
from sqlalchemy.sql.expression import BindParameter

from packsolve.attempt import AttemptKey, ClaimVerdict, Result
from packsolve.db.models import Run, utcnow
from packsolve.db.run_counts import fold
from packsolve.db.runs import finish_run_if_done
from packsolve.db.tables import ATTEMPTS, BATCH, PENDING_VALUES, rowcount
from packsolve.db.workers import WORKERS
from packsolve.outcome import Status
from packsolve.runstate import RunState

# The claim and the record run once per attempt, tiny ones included: their statements are built
# once per dialect, so SQLAlchemy compiles each shape once and reuses it; no expanding IN parameter
# in the one-attempt claim, whose SQL text would otherwise be rebuilt at every execution.
_PENDING_LITERALS = [literal(v) for v in PENDING_VALUES]
_QUEUED = literal(Status.QUEUED.value)
_RUNNING = literal(Status.RUNNING.value)
RUNS = cast(Table, Run.__table__)
_CANCELLED_RUN = exists().where(RUNS.c.id == ATTEMPTS.c.run_id, RUNS.c.state == RunState.CANCELLED)


@dataclass(frozen=True)
class _Statements:
    """The worker's claim statements for one dialect (the time in them is the database's)."""

    claim_one: Any
    claim_many: Any
    lose: Any
    cancel: Any
    start: Any
    now: Any  # the server's now() on PostgreSQL; a parameter (c_now, this machine's clock) on SQLite


def _statements(postgresql: bool) -> _Statements:
    """Return the claim statements, time from the server on PostgreSQL (built once per dialect)."""
    found = _BUILT.get(postgresql)
    if found is not None:
        return found
    now: Any = func.now() if postgresql else bindparam("c_now", type_=ATTEMPTS.c.started_at.type)
    # A running attempt may be claimed again only if its holder's lease has lapsed (or it has no
    # holder: claimed by a worker of an earlier version); a live holder's claim is never taken over.
    alive = exists().where(WORKERS.c.name == ATTEMPTS.c.holder, WORKERS.c.lease_until > now)
    claimable = or_(ATTEMPTS.c.status == _QUEUED, and_(ATTEMPTS.c.status == _RUNNING, ~alive))

    def claim(one: bool, starts: bool) -> Any:
        # It returns each claimed hash with its fencing token: the claim count after this claim.
        return (
            update(ATTEMPTS)
            .where(ATTEMPTS.c.run_id == bindparam("c_run"), _match(one))
            .where(claimable, ATTEMPTS.c.tries < bindparam("c_max"), ~_CANCELLED_RUN)
            .values(
                status=Status.RUNNING.value,
                worker=bindparam("c_worker"),
                holder=bindparam("c_holder"),
                claims=ATTEMPTS.c.claims + 1,
                # A lone claim starts at once: its try counts now. A group's members count theirs
                # when they start (see start), so a worker dying in a group charges no member
                # that never started.
                started_at=now if starts else None,
                tries=ATTEMPTS.c.tries + (1 if starts else 0),
            )
            .returning(ATTEMPTS.c.level_hash, ATTEMPTS.c.claims)
        )

    mine = and_(ATTEMPTS.c.status == _RUNNING, ATTEMPTS.c.holder == bindparam("c_holder"))
    running = ATTEMPTS.c.status == _RUNNING
    built = _BUILT[postgresql] = _Statements(
        # The deadline: c_hard after the server's now() on PostgreSQL; c_deadline, computed here, on SQLite.
        claim_one=claim(one=True, starts=True).values(
            deadline=now + bindparam("c_hard", type_=Interval())
            if postgresql
            else bindparam("c_deadline", type_=ATTEMPTS.c.deadline.type)
        ),
        claim_many=claim(one=False, starts=False),
        lose=update(ATTEMPTS)
        .where(ATTEMPTS.c.run_id == bindparam("c_run"), _match(False))
        .where(claimable, ATTEMPTS.c.tries >= bindparam("c_max"), ~_CANCELLED_RUN)
        .values(status=Status.LOST.value, finished_at=now, message=bindparam("c_message"), deadline=None)
        .returning(ATTEMPTS.c.level_hash),
        cancel=update(ATTEMPTS)
        .where(ATTEMPTS.c.run_id == bindparam("c_run"), _match(False))
        .where(or_(claimable, mine), _CANCELLED_RUN)
        .values(
            status=Status.CANCELLED.value,
            finished_at=now,
            deadline=None,
            message="cancelled by the user; its task came again after the cancel",
        )
        .returning(ATTEMPTS.c.level_hash),
        start=update(ATTEMPTS)
        .where(ATTEMPTS.c.run_id == bindparam("c_run"), _match(True))
        .where(running, ATTEMPTS.c.claims == bindparam("c_token"), ATTEMPTS.c.started_at.is_(None))
        .values(tries=ATTEMPTS.c.tries + 1, started_at=now),
        now=now,
    )
    return built


def _match(one: bool) -> Any:
    """The attempts a claim names: of one heuristic (c_heuristic), one level (c_hash) or several
    (c_hashes). A run may try a level with several heuristics: each is its own attempt."""
    heuristic = ATTEMPTS.c.heuristic == bindparam("c_heuristic")
    if one:
        return and_(ATTEMPTS.c.level_hash == bindparam("c_hash"), heuristic)
    return and_(ATTEMPTS.c.level_hash.in_(bindparam("c_hashes", expanding=True)), heuristic)


_BUILT: dict[bool, _Statements] = {}
# The rest of a chunk waits for this worker process: queued, held (the scheduler leaves it be
# while the holder's lease lasts, and takes it back once it has lapsed).
_HOLD = (
    update(ATTEMPTS)
    .where(ATTEMPTS.c.run_id == bindparam("c_run"), _match(False))
    .where(ATTEMPTS.c.status == _QUEUED)
    .values(holder=bindparam("c_holder"))
)


def by_heuristic(keys: Iterable[AttemptKey]) -> dict[str, list[str]]:
    """Return the level hashes of these attempts per heuristic, each once, in the order given.

    What a statement of one heuristic (c_heuristic) and its levels (c_hashes) is run with: a
    run of one heuristic, as every run was before matrices, makes one statement, as it did.
    """
    out: dict[str, list[str]] = {}
    for h, heuristic in dict.fromkeys(keys):
        out.setdefault(heuristic, []).append(h)
    return out


def hold(connection: Connection, run_id: int, keys: Sequence[AttemptKey], holder: str) -> None:
    """Mark the queued attempts of a chunk (level hash, heuristic) as waiting for holder (see _HOLD)."""
    for heuristic, hashes in by_heuristic(keys).items():
        for i in range(0, len(hashes), BATCH):
            params = {"c_run": run_id, "c_hashes": hashes[i : i + BATCH], "c_heuristic": heuristic}
            connection.execute(_HOLD, {**params, "c_holder": holder})


@dataclass(frozen=True)
class ClaimBy:
    """Who claims, and on what terms: the worker recorded on the attempts, the cap on an attempt's
    tries, the hard time limit of each (None: none), and the worker process's lease (holder)."""

    worker: str
    max_tries: int
    hard_s: float | None = None
    holder: str | None = None


@dataclass(frozen=True)
class Claimed:
    """What a claim answered: a verdict per attempt (level hash, heuristic), and the fencing token of
    each attempt claimed (its result must carry it)."""

    verdicts: dict[AttemptKey, ClaimVerdict] = field(default_factory=dict)
    tokens: dict[AttemptKey, int] = field(default_factory=dict)

    def runs(self, key: AttemptKey) -> bool:
        return self.verdicts.get(key) is ClaimVerdict.RUN


def claim_many(
    connection: Connection,
    run_id: int,
    keys: Sequence[AttemptKey],
    by: ClaimBy,
    start_first: bool = True,
) -> Claimed:
    """Claim attempts that will run one after the other, in order; return the verdicts and tokens.

    keys: each attempt's (level hash, heuristic): a run may try a level with several
    heuristics, and each is an attempt of its own, claimed, fenced and written on its own.
    A verdict is a ClaimVerdict: run (now running for this worker), skip (final, or held
    by another worker whose lease is alive), cancelled (its run was
    cancelled: the attempt is now too) or lost. by.holder names the worker
    process (its lease); each claimed attempt gets a fencing token, which its
    result must carry (Result.token). A claim this holder
    already has (a retry whose first answer was lost) is read back, with its
    token. The first attempt claimed counts a try (it starts now; with
    start_first=False the caller counts it with start()); each later one counts
    its own when it starts (the caller's start()). An attempt started
    max_tries times (its workers keep dying) becomes ``lost`` instead of
    running again. by.hard_s (the hard limit) sets the deadline after which the
    scheduler presumes the worker dead: the k-th claimed attempt cannot start
    later than k hard limits from now (each before it is killed at its hard
    limit), so its deadline is set that far ahead, and the scheduler never
    takes a queued-up one for a dead worker's. Times are the database server's.
    One statement per heuristic named (per BATCH levels).
    """
    ordered = list(dict.fromkeys(keys))
    place = {key: k for k, key in enumerate(ordered)}  # the k-th to run: its deadline k + 1 hard limits on
    verdicts = dict.fromkeys(ordered, ClaimVerdict.SKIP)
    worker, max_tries, hard_s, holder = by.worker, by.max_tries, by.hard_s, by.holder
    st = _statements(connection.dialect.name == "postgresql")
    now = utcnow()
    claimed: dict[AttemptKey, int] = {}
    started: set[AttemptKey] = set()  # claimed alone: started, its try counted by the claim
    for heuristic, hashes in by_heuristic(ordered).items():
        for i in range(0, len(hashes), BATCH):
            chunk = hashes[i : i + BATCH]
            params: dict[str, Any] = {
                "c_run": run_id,
                "c_max": max_tries,
                "c_worker": worker,
                "c_now": now,
                "c_holder": holder,
                "c_heuristic": heuristic,
            }
            if len(ordered) == 1:
                stmt = st.claim_one
                params["c_hash"] = chunk[0]
                params["c_hard"] = None if hard_s is None else timedelta(seconds=hard_s)
                params["c_deadline"] = None if hard_s is None else now + timedelta(seconds=hard_s)
                started.add(ordered[0])
            else:
                params["c_hashes"] = chunk
                deadline: Any = None
                if hard_s is not None:
                    steps = {h: _deadline(st, now, hard_s * (place[h, heuristic] + 1)) for h in chunk}
                    deadline = case(steps, value=ATTEMPTS.c.level_hash)
                stmt = st.claim_many.values(deadline=deadline)
            got = {(h, heuristic): t for h, t in connection.execute(stmt, params)}
            claimed.update(got)
            rest = [h for h in chunk if (h, heuristic) not in got]
            if rest:
                mine, settled = _the_rest(connection, st, run_id, (heuristic, rest), by, now)
                claimed.update(mine)
                verdicts.update(settled)
    verdicts.update(dict.fromkeys(claimed, ClaimVerdict.RUN))
    first = next((key for key in ordered if key in claimed), None)
    if start_first and first is not None and first not in started:
        # The first of a group starts now: its try counts.
        start(connection, [(run_id, first, claimed[first])])
    if {ClaimVerdict.LOST, ClaimVerdict.CANCELLED} & set(verdicts.values()):
        finish_run_if_done(connection, run_id)
    return Claimed(verdicts, claimed)


def _deadline(st: _Statements, now: datetime, hard_s: float) -> Any:
    """Return the deadline hard_s after the claim: in the server's clock on PostgreSQL."""
    return (
        now + timedelta(seconds=hard_s)
        if isinstance(st.now, BindParameter)
        else st.now + timedelta(seconds=hard_s)
    )


def start(db: Session | Connection, starts: Sequence[tuple[int, AttemptKey, int]]) -> None:
    """Count the try of each claimed attempt (run id, (level hash, heuristic), token) that started; once each.

    An attempt no longer running under that claim is left alone.
    """
    if not starts:
        return
    bind = db.get_bind() if isinstance(db, Session) else db
    st = _statements(bind.dialect.name == "postgresql")
    now = utcnow()
    rows = [
        {"c_run": r, "c_hash": h, "c_heuristic": heuristic, "c_token": t, "c_now": now}
        for r, (h, heuristic), t in starts
    ]
    db.execute(st.start, rows[0] if len(rows) == 1 else rows)


def _the_rest(
    connection: Connection,
    st: _Statements,
    run_id: int,
    rest: tuple[str, list[str]],
    by: ClaimBy,
    now: datetime,
) -> tuple[dict[AttemptKey, int], dict[AttemptKey, ClaimVerdict]]:
    """Settle the attempts a claim did not take (rest: a heuristic and its level hashes): cancel those
    of a cancelled run, read back those this holder already has, mark lost those past the cap.
    Return (tokens of those read back, verdicts of those cancelled or lost)."""
    heuristic, hashes = rest
    holder, max_tries = by.holder, by.max_tries
    params: dict[str, Any] = {
        "c_run": run_id,
        "c_hashes": hashes,
        "c_heuristic": heuristic,
        "c_now": now,
        "c_holder": holder,
    }
    cancelled = set(connection.scalars(st.cancel, params).all())
    verdicts = {(h, heuristic): ClaimVerdict.CANCELLED for h in cancelled}
    mine: dict[AttemptKey, int] = {}
    if holder is not None:
        rows = connection.execute(
            select(ATTEMPTS.c.level_hash, ATTEMPTS.c.claims).where(
                ATTEMPTS.c.run_id == run_id,
                ATTEMPTS.c.level_hash.in_(hashes),
                ATTEMPTS.c.heuristic == heuristic,
                ATTEMPTS.c.status == Status.RUNNING.value,
                ATTEMPTS.c.holder == holder,
            )
        )
        mine = {(h, heuristic): t for h, t in rows}
    left = [h for h in hashes if (h, heuristic) not in mine and h not in cancelled]
    if left:
        message = (
            f"attempt lost: started {max_tries} times and never finished "
            "(workers died or were killed while running it)"
        )
        lost = connection.scalars(
            st.lose, {**params, "c_hashes": left, "c_message": message, "c_max": max_tries}
        )
        verdicts.update({(h, heuristic): ClaimVerdict.LOST for h in lost.all()})
    return mine, verdicts


def result_columns(r: Result, now: datetime) -> dict[str, Any]:
    """Return the attempt row's columns a result writes (worker and start aside); unstamped: finished now."""
    o = r.outcome
    return {
        "status": o.status.value,
        "solution": None if o.solution is None else json.dumps(o.solution, separators=(",", ":")),
        "length": r.length,
        # Every measured figure, in the attempts column of its SearchStats field's name.
        **asdict(o.stats),
        "finished_at": r.finished_at or now,
        "message": o.message or None,
        "stdout": o.stdout or None,
        "stderr": o.stderr or None,
    }


# A result's claim: None (local pool), 0 (never claimed), else the claim's fencing token.
_TOKEN = bindparam("b_token", type_=Integer())
# The Core table, not the entity: the ORM would turn a list of parameters into
# an update by primary key, which these rows do not carry.
_RECORD = (
    update(ATTEMPTS)
    .where(ATTEMPTS.c.run_id == bindparam("b_run"), ATTEMPTS.c.level_hash == bindparam("b_level"))
    # A result naming its heuristic lands on that attempt of the level (a run may have several).
    .where(
        or_(
            bindparam("b_heuristic", type_=ATTEMPTS.c.heuristic.type).is_(None),
            ATTEMPTS.c.heuristic == bindparam("b_heuristic", type_=ATTEMPTS.c.heuristic.type),
        )
    )
    .where(
        or_(
            # Literals, not a plain in_(): an expanding IN parameter cannot go through executemany.
            and_(_TOKEN.is_(None), ATTEMPTS.c.status.in_(_PENDING_LITERALS)),
            and_(_TOKEN == 0, ATTEMPTS.c.status == _QUEUED),
            and_(_TOKEN > 0, ATTEMPTS.c.status == _RUNNING, ATTEMPTS.c.claims == _TOKEN),
        )
    )
    .values(
        worker=func.coalesce(bindparam("b_worker", type_=ATTEMPTS.c.worker.type), ATTEMPTS.c.worker),
        started_at=func.coalesce(
            bindparam("b_started", type_=ATTEMPTS.c.started_at.type), ATTEMPTS.c.started_at
        ),
        # A claimed attempt whose start was not counted (its start() failed) counts it now.
        tries=ATTEMPTS.c.tries
        + bindparam("b_tries", type_=ATTEMPTS.c.tries.type)
        + case((and_(_TOKEN > 0, ATTEMPTS.c.started_at.is_(None)), 1), else_=0),
    )
)


def record(db: Session | Connection, results: Iterable[Result], finish: bool = True) -> int:
    """Write final outcomes; an attempt already final is left alone. Return rows written (0 if none).

    This is the idempotent upsert keyed by (run, level, heuristic) (a result naming no heuristic:
    the level's one attempt of its run): a late duplicate of a
    redelivered task finds the row final and changes nothing, and a result whose
    claim is no longer current (its token is stale: the attempt was taken back
    and claimed again, or is queued again) changes nothing either. All rows go in one
    executemany (one round trip per batch with psycopg's pipeline). db is a Core
    connection (the worker) or an ORM session (the local pool).
    """
    now = utcnow()
    rows: list[dict[str, Any]] = []
    results = list(results)
    for r in results:
        rows.append(
            {
                "b_run": r.run_id,
                "b_level": r.level_hash,
                "b_heuristic": r.heuristic,
                **result_columns(r, now),
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
    runs = sorted({int(row["b_run"]) for row in rows})
    for run_id in runs:
        fold(db, run_id)  # the rows this flush added to run_figures, while they are few
    # finish=False: the caller stamps finished runs itself, later, in a fresh transaction.
    for run_id in runs if finish else ():
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
        which = [ATTEMPTS.c.run_id == r.run_id, ATTEMPTS.c.level_hash == r.level_hash]
        if r.heuristic is not None:  # that heuristic's attempt of the level (a run may have several)
            which.append(ATTEMPTS.c.heuristic == r.heuristic)
        row = connection.execute(
            select(ATTEMPTS.c.status, ATTEMPTS.c.claims, ATTEMPTS.c.holder).where(*which)
        ).first()
        if row is None or (row.claims == r.token and row.status not in _TAKEN_BACK):
            continue
        out.append(
            (r, f"its claim (token {r.token}) is stale: now {row.status}, claim {row.claims} ({row.holder})")
        )
    return out
