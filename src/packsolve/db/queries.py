"""The database operations of a run: create, claim, record (idempotently), finish, read back."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import (
    Connection,
    String,
    Table,
    and_,
    any_,
    bindparam,
    case,
    exists,
    func,
    insert,
    literal,
    literal_column,
    or_,
    select,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from packsolve import __version__
from packsolve.db.models import Attempt, LevelRow, Run, utcnow
from packsolve.levels import Level, canonical_json
from packsolve.outcome import FINAL, PENDING, Outcome, Status

# The Core table, for bulk inserts that skip the ORM's per-row bookkeeping.
ATTEMPTS = cast(Table, Attempt.__table__)
PENDING_VALUES = tuple(s.value for s in PENDING)
FINAL_VALUES = tuple(s.value for s in FINAL)
# Rows per statement when writing many at once: well under SQLite's variable limit.
BATCH = 500


@dataclass(frozen=True)
class RunOptions:
    """What a run was asked to do; stored on the run as its provenance."""

    mode: str
    heuristic: str = "default"
    kind: str | None = None
    time_limit: float | None = None
    node_limit: int | None = None
    memory_limit_mb: int | None = None
    concurrency: int | None = None
    label: str | None = None
    parent_id: int | None = None
    max_tries: int | None = None
    extra: dict[str, Any] | None = None


@dataclass(frozen=True)
class PlannedAttempt:
    """One row to create: a level with the heuristic resolved for its kind."""

    level: Level
    heuristic: str
    seq: int


def _rowcount(result: Any) -> int:
    """Return the rows an UPDATE/INSERT matched (typed loosely: Result hides CursorResult's rowcount)."""
    return int(result.rowcount)


def _insert_ignore(session: Session, table: Any, rows: list[dict[str, Any]]) -> None:
    """Insert rows, skipping those whose key exists (another submit may insert the same level)."""
    if not rows:
        return
    dialect = session.get_bind().dialect.name
    stmt: Any
    if dialect == "postgresql":
        stmt = postgresql.insert(table).on_conflict_do_nothing()
    elif dialect == "sqlite":
        stmt = sqlite.insert(table).on_conflict_do_nothing()
    else:
        stmt = insert(table).prefix_with("IGNORE")
    for i in range(0, len(rows), BATCH):
        session.execute(stmt, rows[i : i + BATCH])


def _insert(session: Session, table: Any, rows: list[dict[str, Any]]) -> None:
    """Insert rows, all with the same keys, in the session's transaction.

    On PostgreSQL through COPY: executemany's per-row work in SQLAlchemy and
    psycopg was more than half of creating a 50,000-level run there. Elsewhere
    an executemany per BATCH rows.
    """
    if not rows:
        return
    if session.get_bind().dialect.name != "postgresql":
        for i in range(0, len(rows), BATCH):
            session.execute(insert(table), rows[i : i + BATCH])
        return
    columns = list(rows[0])
    driver = session.connection().connection.driver_connection
    assert driver is not None
    names = ", ".join(f'"{c}"' for c in columns)
    with driver.cursor() as cursor, cursor.copy(f'COPY "{table.name}" ({names}) FROM STDIN') as copy:
        for row in rows:
            copy.write_row(tuple(row[c] for c in columns))


def create_run(session: Session, planned: Sequence[PlannedAttempt], options: RunOptions) -> int:
    """Create the run, its levels and one attempt row per level; return the run id.

    Invalid levels are final from the start (status ``invalid``, message kept).
    """
    now = utcnow()
    run = Run(
        label=options.label,
        parent_id=options.parent_id,
        mode=options.mode,
        state="running",
        heuristic=options.heuristic,
        kind=options.kind,
        time_limit=options.time_limit,
        node_limit=options.node_limit,
        memory_limit_mb=options.memory_limit_mb,
        concurrency=options.concurrency,
        max_tries=options.max_tries,
        total=len(planned),
        host=socket.gethostname(),
        version=__version__,
        options=json.dumps(options.extra or {}, sort_keys=True),
        created_at=now,
    )
    session.add(run)
    session.flush()
    level_rows: dict[str, dict[str, Any]] = {}
    for p in planned:
        lv = p.level
        level_rows.setdefault(
            lv.hash,
            {
                "hash": lv.hash,
                "kind": lv.kind,
                "data": canonical_json(dict(lv.data)),
                "size": lv.size,
                "name": lv.name,
                "created_at": now,
            },
        )
    _insert_ignore(session, LevelRow.__table__, list(level_rows.values()))
    attempts = []
    for p in planned:
        lv = p.level
        attempts.append(
            {
                "run_id": run.id, "level_hash": lv.hash, "seq": p.seq, "name": lv.name, "kind": lv.kind,
                "heuristic": p.heuristic,
                "status": Status.QUEUED.value if lv.valid else Status.INVALID.value,
                "message": lv.error, "tries": 0, "queued_at": None,  # set by mark_sent once sent
                "finished_at": None if lv.valid else now,
            }
        )  # fmt: skip
    # The Core table and only the columns that have values: the ORM's bulk path and a dozen NULL
    # parameters per row were most of the time of a 50,000-level submit.
    _insert(session, ATTEMPTS, attempts)
    session.flush()
    return run.id


def claim(
    session: Session, run_id: int, level_hash: str, worker: str, max_tries: int, hard_s: float | None = None
) -> str:
    """Mark an attempt running for this worker; return 'run', 'skip' (final/cancelled) or 'lost'.

    Each claim counts a try; a task redelivered once too often (its workers keep
    dying) makes the attempt ``lost`` instead of running again. hard_s (the hard
    limit) sets the deadline after which the scheduler presumes the worker dead.
    """
    return claim_many(session, run_id, [level_hash], worker, max_tries, hard_s)[level_hash]


# The claim and the record run once per attempt, tiny ones included: their statements are built
# once, so SQLAlchemy compiles each shape once and reuses it; no expanding IN parameter in the
# one-attempt claim, whose SQL text would otherwise be rebuilt at every execution.
_PENDING_LITERALS = [literal(v) for v in PENDING_VALUES]


def _claim_stmt(one: bool) -> Any:
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
    session: Session | Connection,
    run_id: int,
    level_hashes: Sequence[str],
    worker: str,
    max_tries: int,
    hard_s: float | None = None,
) -> dict[str, str]:
    """Claim attempts that will run one after the other, in two statements; return {hash: verdict}.

    Verdicts as for claim. The k-th claimed attempt cannot start later than k
    hard limits from now (each before it is killed at its hard limit), so its
    deadline is set that far ahead: the scheduler never takes a queued-up one
    for a dead worker's.
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
        claimed = session.scalars(stmt, params).all()
        verdicts.update(dict.fromkeys(claimed, "run"))
        rest = [h for h in chunk if verdicts[h] != "run"]
        if not rest:
            continue
        message = (
            f"attempt lost: its task was delivered {max_tries} times and never finished "
            "(workers died or were killed while running it)"
        )
        lost = session.scalars(_LOSE, {"c_run": run_id, "c_hashes": rest, "c_now": now, "c_message": message})
        verdicts.update(dict.fromkeys(lost.all(), "lost"))
    if "lost" in verdicts.values():
        finish_run_if_done(session, run_id)
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


def record(session: Session | Connection, results: Iterable[Result], finish: bool = True) -> int:
    """Write final outcomes; an attempt already final is left alone. Return rows written.

    This is the idempotent upsert keyed by (run, level): a late duplicate of a
    redelivered task finds the row final and changes nothing. All rows go in one
    executemany (one round trip per batch with psycopg's pipeline).
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
        written += _rowcount(session.execute(stmt, batch[0] if len(batch) == 1 else batch))
    # finish=False: the caller stamps finished runs itself, later, in a fresh transaction.
    for run_id in sorted({int(row["b_run"]) for row in rows}) if finish else ():
        finish_run_if_done(session, run_id)
    return written


def finish_run_if_done(session: Session | Connection, run_id: int) -> bool:
    """Stamp the run finished once no attempt is pending; return True if this call did it."""
    pending = exists().where(Attempt.run_id == run_id, Attempt.status.in_(PENDING_VALUES))
    res = session.execute(
        update(Run)
        .where(Run.id == run_id, Run.finished_at.is_(None), ~pending)
        .values(finished_at=utcnow(), state=case((Run.state == "cancelled", "cancelled"), else_="finished"))
    )
    return bool(_rowcount(res))


def cancel_pending(session: Session, run_id: int, message: str = "cancelled") -> int:
    """Mark every queued attempt of the run cancelled; return how many."""
    res = session.execute(
        update(Attempt)
        .where(Attempt.run_id == run_id, Attempt.status == Status.QUEUED.value)
        .values(status=Status.CANCELLED.value, finished_at=utcnow(), message=message)
    )
    session.execute(update(Run).where(Run.id == run_id).values(state="cancelled"))
    finish_run_if_done(session, run_id)
    return _rowcount(res)


def resolve_run(session: Session, ref: str | int | None) -> Run:
    """Return the run named by id, 'latest' or None (latest), or by label; raise LookupError."""
    if ref is None or ref == "latest":
        run = session.scalars(select(Run).order_by(Run.id.desc()).limit(1)).first()
        if run is None:
            raise LookupError("no runs in the database yet")
        return run
    if isinstance(ref, int) or str(ref).isdigit():
        run = session.get(Run, int(ref))
        if run is None:
            raise LookupError(f"no run with id {ref}")
        return run
    run = session.scalars(select(Run).where(Run.label == str(ref)).order_by(Run.id.desc()).limit(1)).first()
    if run is None:
        raise LookupError(f"no run with id or label {ref!r}")
    return run


def status_counts(session: Session, run_id: int) -> dict[str, int]:
    rows = session.execute(
        select(Attempt.status, func.count()).where(Attempt.run_id == run_id).group_by(Attempt.status)
    )
    return {status: n for status, n in rows}


def pending_of(session: Session, run_id: int) -> list[tuple[Attempt, LevelRow]]:
    """Return the run's pending attempts with their levels, in pack order."""
    rows = session.execute(
        select(Attempt, LevelRow)
        .join(LevelRow, LevelRow.hash == Attempt.level_hash)
        .where(and_(Attempt.run_id == run_id, Attempt.status.in_(PENDING_VALUES)))
        .order_by(Attempt.seq)
    )
    return [(a, lv) for a, lv in rows]


# --- reconcile, ordering and rerun (the scheduler's queries) ---------------------------------


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
    """Return attempts of unfinished distributed runs that may have lost their task.

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
    """Requeue each candidate (back to queued, requeues + 1) or, past the cap, mark it lost.

    Each update only applies if the row is still as read, so of two schedulers
    only one takes an attempt; a worker that reported meanwhile wins too. On
    PostgreSQL rows another scheduler holds are skipped (FOR UPDATE SKIP LOCKED)
    instead of waited for.
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
        if _rowcount(res):
            taken.append(Taken(c.run_id, c.level_hash, lost))
    for run_id in {t.run_id for t in taken if t.lost}:
        finish_run_if_done(session, run_id)
    return taken


def _lost_reason(c: StaleAttempt, cap: int) -> str:
    if c.tries >= cap:
        return (
            f"attempt lost: started {c.tries} times (cap {cap}) and never reported back; the last worker "
            f"({c.worker or 'unknown'}) died, was killed or lost its connection while running it"
        )
    return (
        f"attempt lost: its task vanished from the broker {c.requeues} times (cap {cap}) before a worker "
        "took it (broker restarted without persistence?)"
    )


def unfinished_runs(session: Session) -> list[int]:
    return list(session.scalars(select(Run.id).where(Run.finished_at.is_(None)).order_by(Run.id)))


def attempts_with_levels(
    session: Session, run_id: int, hashes: Sequence[str]
) -> list[tuple[Attempt, LevelRow]]:
    """Return the run's attempts for these level hashes with their levels, in pack order."""
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


def level_facts(session: Session, hashes: Sequence[str], exclude_run: int | None = None):
    """Return {hash: (size, expected seconds or None)} from the levels' history in other runs.

    Expected seconds: the fastest solved/no_solution attempt; failing that the
    longest timeout/memout (it took at least that); None for a level never run.
    """
    success = tuple(s.value for s in (Status.SOLVED, Status.NO_SOLUTION))
    spent = (Status.TIMEOUT.value, Status.MEMOUT.value)
    sizes: dict[str, int] = {}
    times: dict[str, float | None] = {}
    for is_one in _one_of(session, list(dict.fromkeys(hashes))):
        sizes.update(session.execute(select(LevelRow.hash, LevelRow.size).where(is_one(LevelRow.hash))).all())
        query = (
            select(
                Attempt.level_hash,
                func.min(case((Attempt.status.in_(success), Attempt.wall_s))),
                func.max(case((Attempt.status.in_(spent), Attempt.wall_s))),
            )
            .where(is_one(Attempt.level_hash))
            .group_by(Attempt.level_hash)
        )
        if exclude_run is not None:
            query = query.where(Attempt.run_id != exclude_run)
        times.update((h, best if best is not None else worst) for h, best, worst in session.execute(query))
    return {h: (sizes.get(h) or 0, times.get(h)) for h in hashes}


def _one_of(session: Session, values: list[str]) -> Iterator[Callable[[Any], Any]]:
    """Yield conditions "column is one of values" that together cover values.

    One per statement: on PostgreSQL all values go as one array parameter, on
    SQLite as one JSON array read by json_each; elsewhere in lists of BATCH. A
    statement per 500 values cost a compile and a plan each, and on a table not
    yet analyzed (a submit's own fresh rows) a sequential scan each: 3 s for a
    50,000-level submit on PostgreSQL.
    """
    dialect = session.get_bind().dialect.name
    if dialect == "postgresql":
        array = bindparam("one_of", values, type_=postgresql.ARRAY(String))

        def in_array(column: Any) -> Any:
            return column == any_(array)

        yield in_array
    elif dialect == "sqlite":
        listed: Any = select(literal_column("value")).select_from(
            func.json_each(bindparam("one_of", json.dumps(values)))
        )

        def in_json(column: Any) -> Any:
            return column.in_(listed)

        yield in_json
    else:
        for i in range(0, len(values), BATCH):

            def in_list(column: Any, chunk: list[str] = values[i : i + BATCH]) -> Any:
                return column.in_(chunk)

            yield in_list


def recent_wall_times(session: Session, kind: str, heuristic: str, limit: int) -> list[float]:
    """Return the wall seconds of the last `limit` final attempts of kind with heuristic (any run)."""
    rows = session.scalars(
        select(Attempt.wall_s)
        .where(Attempt.kind == kind, Attempt.heuristic == heuristic)
        .where(Attempt.status.in_(FINAL_VALUES), Attempt.wall_s.is_not(None))
        .order_by(Attempt.id.desc())
        .limit(limit)
    )
    return [float(t) for t in rows if t is not None]


def attempts_to_rerun(
    session: Session, run_id: int, statuses: Sequence[str], kind: str | None = None
) -> list[tuple[Attempt, LevelRow]]:
    """Return the run's attempts in statuses (and of kind, if given) with their levels, in pack order."""
    query = (
        select(Attempt, LevelRow)
        .join(LevelRow, LevelRow.hash == Attempt.level_hash)
        .where(Attempt.run_id == run_id, Attempt.status.in_(list(statuses)))
        .order_by(Attempt.seq)
    )
    if kind is not None:
        query = query.where(Attempt.kind == kind)
    return [(a, lv) for a, lv in session.execute(query)]


def mark_sent(session: Session, run_id: int) -> None:
    """Stamp the run's queued attempts as sent now: the scheduler's grace for queued ones counts from here."""
    session.execute(
        update(Attempt)
        .where(Attempt.run_id == run_id, Attempt.status == Status.QUEUED.value)
        .values(queued_at=utcnow())
    )
