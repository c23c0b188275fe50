"""A run's rows: create a run and its attempts, find it, read its pending or failed ones, end it."""

from __future__ import annotations

import socket
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, and_, case, exists, func, insert, select, update
from sqlalchemy.dialects import sqlite
from sqlalchemy.orm import Session

from packsolve import __version__
from packsolve.attempt import AttemptKey
from packsolve.bounds import RUN_ID
from packsolve.db.models import RUN_FIGURES, Attempt, LevelRow, Run
from packsolve.db.run_hooks import after_run_finished
from packsolve.db.session import shown_database
from packsolve.db.tables import ATTEMPTS, BATCH, PENDING_VALUES, rowcount
from packsolve.db.workers import db_now, now_sql
from packsolve.errors import RunNotFound
from packsolve.levels import Level, canonical_json
from packsolve.outcome import Status
from packsolve.runstate import RunMode, RunState


@dataclass(frozen=True, slots=True)
class Provenance:
    """What a run used, recorded at its creation: its kinds' sources and versions, its programs.

    kinds: {kind: {"origin", "source", "version"}}; solvers: {program name: its declaration as
    JSON}, which rerun and resume send again (solvers.declared_in reads it back).
    """

    kinds: dict[str, Any] = field(default_factory=dict)
    solvers: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, run: Run) -> Provenance:
        """Return what the run recorded (empty for a run made before provenance was recorded)."""
        return cls(dict(run.kinds or {}), dict(run.solvers or {}))


@dataclass(frozen=True)
class RunOptions:
    """What a run was asked to do, where it runs and what it uses: stored on the run."""

    mode: RunMode
    heuristic: str = "default"
    kind: str | None = None
    time_limit: float | None = None
    node_limit: int | None = None
    memory_limit_mb: int | None = None
    cpu_limit: float | None = None
    concurrency: int | None = None
    label: str | None = None
    parent_id: int | None = None
    max_tries: int | None = None
    options: dict[str, Any] = field(default_factory=dict)  # the command line (models.Run.options)
    pid: int | None = None  # the process solving a local run
    provenance: Provenance = field(default_factory=Provenance)


@dataclass(frozen=True)
class PlannedAttempt:
    """One row to create: a level with the heuristic resolved for its kind."""

    level: Level
    heuristic: str
    seq: int
    # Its own wall and CPU limits where the run's are relative (planning.relative_limits); None: the run's.
    time_limit: float | None = None
    cpu_limit: float | None = None

    @property
    def key(self) -> AttemptKey:
        """Return (level hash, heuristic): which attempt of its run this is."""
        return self.level.hash, self.heuristic


# --- creating a run ---------------------------------------------------------------------------


def create_run(session: Session, planned: Sequence[PlannedAttempt], options: RunOptions) -> int:
    """Create the run, its levels and one attempt row per level; return the run id.

    Invalid levels are final from the start (status ``invalid``, message kept).
    Stamped in the database server's clock.
    """
    now = db_now(session)
    run = Run(
        label=options.label,
        parent_id=options.parent_id,
        mode=options.mode,
        state=RunState.RUNNING,
        heuristic=options.heuristic,
        kind=options.kind,
        time_limit=options.time_limit,
        node_limit=options.node_limit,
        memory_limit_mb=options.memory_limit_mb,
        cpu_limit=options.cpu_limit,
        concurrency=options.concurrency,
        max_tries=options.max_tries,
        total=len(planned),
        host=socket.gethostname(),
        version=__version__,
        options=options.options,
        pid=options.pid,
        kinds=options.provenance.kinds,
        solvers=options.provenance.solvers,
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
                "data": lv.text if lv.text is not None else canonical_json(dict(lv.data)),
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
                "run_id": run.id,
                "level_hash": lv.hash,
                "seq": p.seq,
                "name": lv.name,
                "kind": lv.kind,
                "heuristic": p.heuristic,
                "status": Status.QUEUED if lv.valid else Status.INVALID,
                "message": lv.error,
                "tries": 0,
                "queued_at": None,  # set when the scheduler sends it again
                "finished_at": None if lv.valid else now,
            }
        )
    if any(p.time_limit is not None or p.cpu_limit is not None for p in planned):
        # A relative run's attempts have limits of their own (rows keep the same keys: _insert).
        for row, p in zip(attempts, planned, strict=True):
            row["time_limit"], row["cpu_limit"] = p.time_limit, p.cpu_limit
    # The Core table and only the columns that have values: the ORM's bulk path and a dozen NULL
    # parameters per row were most of the time of a 50,000-level submit.
    _insert(session, ATTEMPTS, attempts)
    session.flush()
    return run.id


def _insert_ignore(session: Session, table: Any, rows: list[dict[str, Any]]) -> None:
    """Insert rows, skipping those whose key exists (another submit may insert the same level)."""
    if not rows:
        return
    dialect = session.get_bind().dialect.name
    if dialect == "postgresql":
        _copy_ignore(session, table, rows)
        return
    stmt: Any
    if dialect == "sqlite":
        stmt = sqlite.insert(table).on_conflict_do_nothing()
    else:
        stmt = insert(table).prefix_with("IGNORE")
    for i in range(0, len(rows), BATCH):
        session.execute(stmt, rows[i : i + BATCH])


def _copy_ignore(session: Session, table: Any, rows: list[dict[str, Any]]) -> None:
    """Insert rows on PostgreSQL through COPY into a temporary table, then one INSERT ... ON CONFLICT.

    An executemany of INSERT ... ON CONFLICT was a quarter of a 100,000-level submit.
    """
    from psycopg import sql

    # Identifiers only (table and column names from our own models), composed by psycopg, which
    # quotes them; the values travel by COPY.
    columns = list(rows[0])
    names = sql.SQL(", ").join(sql.Identifier(c) for c in columns)
    target, staged = sql.Identifier(table.name), sql.Identifier(f"staged_{table.name}")
    # In key order: two submits inserting the same new levels then wait for each other in one
    # order, never in a deadlock.
    key = sql.SQL(", ").join(sql.Identifier(c.name) for c in table.primary_key.columns)
    create = sql.SQL("CREATE TEMPORARY TABLE {} (LIKE {} INCLUDING DEFAULTS) ON COMMIT DROP").format(
        staged, target
    )
    move = sql.SQL("INSERT INTO {} ({}) SELECT {} FROM {} ORDER BY {} ON CONFLICT DO NOTHING").format(
        target, names, names, staged, key
    )
    drop = sql.SQL("DROP TABLE {}").format(staged)
    with _driver(session).cursor() as cursor:
        cursor.execute(create)
        _copy(cursor, f"staged_{table.name}", columns, rows)
        cursor.execute(move)
        cursor.execute(drop)


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
    with _driver(session).cursor() as cursor:
        _copy(cursor, table.name, columns, rows)


def _driver(session: Session) -> Any:
    """Return the psycopg connection under the session's, in its transaction."""
    driver = session.connection().connection.driver_connection
    assert driver is not None
    return driver


def _copy(cursor: Any, table: str, columns: list[str], rows: list[dict[str, Any]]) -> None:
    """COPY the rows' columns into table through a psycopg cursor."""
    from psycopg import sql

    names = sql.SQL(", ").join(sql.Identifier(c) for c in columns)
    statement = sql.SQL("COPY {} ({}) FROM STDIN").format(sql.Identifier(table), names)
    with cursor.copy(statement) as copy:
        for row in rows:
            copy.write_row(tuple(row[c] for c in columns))


def mark_sent(session: Session, run_id: int) -> None:
    """Stamp the run sent in full: from here the scheduler looks after it.

    One row, not one per attempt: an attempt's own queued_at is set only when
    the scheduler sends it again; until then the run's sent_at is its send time.
    """
    session.execute(update(Run).where(Run.id == run_id).values(sent_at=now_sql(session), send_error=None))


def mark_unsent(session: Session, run_id: int, why: str) -> None:
    """Record that the run's submit stopped before sending every task, and why (shown by `runs`)."""
    session.execute(update(Run).where(Run.id == run_id).values(sent_at=None, send_error=why))


# --- reading a run back -----------------------------------------------------------------------


def run_id_of(ref: str | int) -> int | None:
    """Return ref as a run id if it is written as one (ASCII digits), None for a label.

    The one reading of a run reference: an id past what the runs' Integer column holds is
    refused here (RunNotFound, one line), never handed to the database, whose driver would fail
    with "integer out of range" (PostgreSQL) instead of saying no such run exists.
    """
    if isinstance(ref, int):
        run_id = ref
    elif ref.isascii() and ref.isdigit():
        run_id = int(ref)
    else:
        return None
    if not RUN_ID.holds(run_id):
        raise RunNotFound(f"no run with id {ref}: run ids go from {RUN_ID} (`packsolve runs` lists them)")
    return run_id


def resolve_run(session: Session, ref: str | int | None) -> Run:
    """Return the run named by id, 'latest' or None (latest), or label; raise RunNotFound naming the db."""
    where = shown_database(session.get_bind().engine.url)
    if ref is None or ref == "latest":
        run = session.scalars(select(Run).order_by(Run.id.desc()).limit(1)).first()
        if run is None:
            raise RunNotFound(f"no runs yet in {where}: start one with `packsolve solve PACK`")
        return run
    run_id = run_id_of(ref)
    if run_id is not None:
        run = session.get(Run, run_id)
        if run is None:
            raise RunNotFound(f"no run with id {ref} in {where} (`packsolve runs` lists them)")
        return run
    run = session.scalars(select(Run).where(Run.label == str(ref)).order_by(Run.id.desc()).limit(1)).first()
    if run is None:
        raise RunNotFound(f"no run with id or label {ref!r} in {where} (`packsolve runs` lists them)")
    return run


def status_counts(session: Session, run_id: int) -> dict[str, int]:
    """Return {status: number of the run's attempts in it}; empty for a run with none (or no such run).

    One indexed read of a few rows of run_figures, the counts the triggers keep (migration 0014).
    """
    f = RUN_FIGURES.c
    rows = session.execute(
        select(f.status, func.sum(f.attempts))
        .where(f.run_id == run_id)
        .group_by(f.status)
        .having(func.sum(f.attempts) > 0)
    )
    return {status: int(n) for status, n in rows}


def pending_of(session: Session, run_id: int) -> list[tuple[Attempt, LevelRow]]:
    """Return the run's pending attempts with their levels, in pack order; empty if none is pending."""
    rows = session.execute(
        select(Attempt, LevelRow)
        .join(LevelRow, LevelRow.hash == Attempt.level_hash)
        .where(and_(Attempt.run_id == run_id, Attempt.status.in_(PENDING_VALUES)))
        .order_by(Attempt.seq)
    )
    return [(a, lv) for a, lv in rows]


def attempts_to_rerun(
    session: Session, run_id: int, statuses: Sequence[str], kind: str | None = None
) -> list[tuple[Attempt, LevelRow]]:
    """Return the run's attempts in statuses (and of kind, if given) with their levels, in pack order.

    Empty if none matches.
    """
    query = (
        select(Attempt, LevelRow)
        .join(LevelRow, LevelRow.hash == Attempt.level_hash)
        .where(Attempt.run_id == run_id, Attempt.status.in_(list(statuses)))
        .order_by(Attempt.seq)
    )
    if kind is not None:
        query = query.where(Attempt.kind == kind)
    return [(a, lv) for a, lv in session.execute(query)]


def unfinished_runs(session: Session) -> list[int]:
    """Return the ids of the runs not stamped finished, oldest first."""
    return list(session.scalars(select(Run.id).where(Run.finished_at.is_(None)).order_by(Run.id)))


# --- ending a run -----------------------------------------------------------------------------


def cancel_pending(session: Session, run_id: int, message: str = "cancelled") -> int:
    """Mark every queued attempt of the run cancelled; return how many (0 if none was queued)."""
    res = session.execute(
        update(Attempt)
        .where(Attempt.run_id == run_id, Attempt.status == Status.QUEUED)
        .values(status=Status.CANCELLED, finished_at=now_sql(session), message=message)
    )
    session.execute(update(Run).where(Run.id == run_id).values(state=RunState.CANCELLED))
    finish_run_if_done(session, run_id)
    return rowcount(res)


def finish_run_if_done(db: Session | Connection, run_id: int) -> bool:
    """Stamp the run finished once no attempt is pending; return True if this call did it, else False.

    db is an ORM session (CLI, scheduler) or a Core connection (the worker's writes). It only stamps
    the run and calls the run-finished hooks (db.run_hooks), which are cheap: what readers keep of a
    finished run is made later, off this transaction (packsolve.figures.snapshots).
    """
    pending = exists().where(Attempt.run_id == run_id, Attempt.status.in_(PENDING_VALUES))
    res = db.execute(
        update(Run)
        .where(Run.id == run_id, Run.finished_at.is_(None), ~pending)
        .values(
            finished_at=now_sql(db),
            state=case((Run.state == RunState.CANCELLED, RunState.CANCELLED), else_=RunState.FINISHED),
        )
    )
    if not rowcount(res):
        return False
    after_run_finished(db, run_id)
    return True


def split_after_of(connection: Connection, run_id: int) -> float | None:
    """Return the run's --split-after (seconds: a level expected to take longer runs as parts), or None."""
    options = connection.execute(select(Run.options).where(Run.id == run_id)).scalar()
    value = (options or {}).get("split_after") if isinstance(options, dict) else None
    return float(value) if isinstance(value, (int, float)) else None
