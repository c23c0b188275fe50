"""SQLAlchemy 2 models: levels (by content hash), runs (with provenance) and attempts."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any, overload

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Table,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeDecorator

from packsolve.outcome import Status
from packsolve.runstate import RunMode, RunState


@overload
def as_utc(value: datetime) -> datetime: ...
@overload
def as_utc(value: None) -> None: ...
def as_utc(value: datetime | None) -> datetime | None:
    """Return a timestamp read back from a column as an aware UTC datetime (SQLite gives it naive)."""
    if value is None:
        return None
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def utcnow() -> datetime:
    """Return this machine's current time, timezone-aware in UTC (what every timestamp column stores).

    The one clock packsolve reads. Decisions between machines never use it: on PostgreSQL they use
    the database server's clock (db.workers.db_now, now() in statements); SQLite serves one machine.
    """
    return datetime.now(UTC) + CLOCK_OFFSET


# A test hook, never set by packsolve itself: tests set it in a process they start
# (tests/support/skewed_clock.py) to play a machine whose clock is off.
CLOCK_OFFSET = timedelta(0)


class _Members(dict[Any, Any]):
    """A StrEnum's members by value; a key that is none (None, or a string no member has) maps to itself."""

    def __missing__(self, key: Any) -> Any:
        return key


class StoredEnum(TypeDecorator[StrEnum]):
    """A string column read back as one of a StrEnum's members: the stored strings are the values.

    Writing a string that is no value of the enum raises ValueError. A stored string that is none
    (written by a newer release) is read back as it is, so a report can still show it.
    """

    impl = String
    cache_ok = True

    def __init__(self, enum: type[StrEnum], length: int) -> None:
        super().__init__(length)
        self.enum = enum
        self._members = _Members({m.value: m for m in enum})

    def process_bind_param(self, value: Any, dialect: Dialect) -> str | None:
        return None if value is None else self.enum(value).value

    def process_result_value(self, value: Any, dialect: Dialect) -> Any:
        return self._members[value]

    def result_processor(self, dialect: Dialect, coltype: Any) -> Any:
        # The dict's own lookup, no Python call per row: a report may read 100,000 statuses.
        lookup = self._members.__getitem__
        inner = self.impl_instance.result_processor(dialect, coltype)
        return lookup if inner is None else lambda value: lookup(inner(value))


# A JSON document: JSONB on PostgreSQL (it has equality, so a query may compare or group whole rows),
# JSON text elsewhere. None is SQL NULL, not JSON null.
JsonDocument = JSON(none_as_null=True).with_variant(JSONB(none_as_null=True), "postgresql")


def only_on(dialect: str, index: Index) -> Index:
    """Return index declared for one dialect only: created there alone, and compared there alone.

    metadata.create_all honours ddl_if; Alembic's compare does not, so db.migrate.include_object
    reads the dialect from the index's info.
    """
    index.info["dialect"] = dialect
    return index.ddl_if(dialect=dialect)


def dialect_of(item: Any) -> str | None:
    """Return the one dialect a schema item was declared for (only_on), None for an item of every dialect."""
    info = getattr(item, "info", None)
    return info.get("dialect") if info is not None else None


@dataclass(frozen=True)
class Unmodelled:
    """A database object the migrations make and the models deliberately do not declare."""

    name: str
    type: str  # "table", "trigger", "function" or "extension", as the database's catalogue names it
    dialect: str
    why: str


_FTS = "the FTS5 trigram index of attempts' names and messages (migration 0014), kept by triggers"
_FIGURES = "keeps run_figures as attempts change (migration 0014)"
# Everything the migrations make that the models do not declare, by dialect: Alembic's compare skips
# these tables (db.migrate.include_object), and a test checks this list against the database.
UNMODELLED: tuple[Unmodelled, ...] = (
    Unmodelled("attempts_text", "table", "sqlite", _FTS),
    # FTS5's shadow tables, made and kept by SQLite itself for attempts_text.
    *(
        Unmodelled(f"attempts_text_{s}", "table", "sqlite", _FTS)
        for s in ("data", "idx", "docsize", "config")
    ),
    *(Unmodelled(f"attempts_text_{op}", "trigger", "sqlite", _FTS) for op in ("insert", "delete", "update")),
    *(
        Unmodelled(f"run_figures_{op}", "trigger", d, _FIGURES)
        for d in ("sqlite", "postgresql")
        for op in ("insert", "delete", "update")
    ),
    Unmodelled("run_figures_delta", "function", "postgresql", _FIGURES),
    Unmodelled("pg_trgm", "extension", "postgresql", "the trigram indexes' operators (migration 0013)"),
)


class Base(DeclarativeBase):
    """The declarative base: its metadata is the schema the migrations build."""


class LevelRow(Base):
    """A level, once, by the SHA-256 of its canonical JSON: its history follows it across packs."""

    __tablename__ = "levels"

    hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    kind: Mapped[str] = mapped_column(String(64), index=True)
    data: Mapped[str] = mapped_column(Text)  # canonical JSON (or the raw excerpt of an invalid level)
    size: Mapped[int] = mapped_column(Integer, default=0)
    name: Mapped[str] = mapped_column(Text)  # the name it was first met by
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Run(Base):
    """One batch: which levels, which heuristic, which limits, where and by which version."""

    __tablename__ = "runs"
    # AUTOINCREMENT: SQLite never gives a new run a deleted run's id (its leftover tasks name it).
    __table_args__ = (Index("uq_runs_label", "label", unique=True), {"sqlite_autoincrement": True})

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    label: Mapped[str | None] = mapped_column(String(200))  # unique: names one run
    parent_id: Mapped[int | None] = mapped_column(ForeignKey("runs.id"))
    mode: Mapped[RunMode] = mapped_column(StoredEnum(RunMode, 16))
    state: Mapped[RunState] = mapped_column(StoredEnum(RunState, 16), default=RunState.RUNNING)
    heuristic: Mapped[str] = mapped_column(Text, default="default")  # per kind: "sudoku=dlx,sliding=pdb"
    kind: Mapped[str | None] = mapped_column(String(64))
    time_limit: Mapped[float | None] = mapped_column(Float)
    node_limit: Mapped[int | None] = mapped_column(BigInteger)
    memory_limit_mb: Mapped[int | None] = mapped_column(Integer)
    cpu_limit: Mapped[float | None] = mapped_column(Float)  # CPU seconds of an attempt's process tree
    concurrency: Mapped[int | None] = mapped_column(Integer)
    max_tries: Mapped[int | None] = mapped_column(Integer)  # deliveries before an attempt is lost
    total: Mapped[int] = mapped_column(Integer, default=0)
    host: Mapped[str] = mapped_column(String(255))
    version: Mapped[str] = mapped_column(String(64))
    # The command line that made the run and what it did since: argv (passwords masked), paths,
    # broker, rerun_of and statuses, carried_over, resumed (each resume's argv and level count).
    options: Mapped[dict[str, Any]] = mapped_column(JsonDocument, default=dict)
    # The process solving a local run on its host (resume and status tell whether it still lives).
    pid: Mapped[int | None] = mapped_column(Integer)
    # Provenance (db.runs.Provenance): the kinds used, by source and version, and the external
    # programs' declarations, which rerun and resume send again.
    kinds: Mapped[dict[str, Any] | None] = mapped_column(JsonDocument)
    solvers: Mapped[dict[str, Any] | None] = mapped_column(JsonDocument)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # Distributed: when its submit finished sending every task (None while sending, or if it
    # stopped: then send_error says why). The scheduler leaves a run alone until it is set.
    sent_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    send_error: Mapped[str | None] = mapped_column(Text)


# The condition of an attempt that kept some of its solver's output (the partial index on it, migration 0022).
OUTPUT_KEPT = "stderr IS NOT NULL OR stdout IS NOT NULL"


class Attempt(Base):
    """One level with one heuristic in one run: exists from submit on, updated in place until final."""

    __tablename__ = "attempts"
    __table_args__ = (
        # A level once per heuristic: a run may try several side by side (migration 0028).
        UniqueConstraint("run_id", "level_hash", "heuristic", name="uq_attempt_run_level_heuristic"),
        Index("ix_attempts_run_status", "run_id", "status"),
        Index("ix_attempts_level", "level_hash"),
        Index("ix_attempts_run_seq", "run_id", "seq", "id"),
        Index("ix_attempts_status_deadline", "status", "deadline"),
        Index("ix_attempts_holder", "holder"),
        # The dashboard's text search in names and messages, on PostgreSQL with pg_trgm (migration 0013);
        # SQLite's is the FTS5 table attempts_text (UNMODELLED).
        *(
            only_on(
                "postgresql",
                Index(f"ix_attempts_{c}_trgm", c, postgresql_using="gin", postgresql_ops={c: "gin_trgm_ops"}),
            )
            for c in ("name", "message")
        ),
        # The dashboard's sorted pages of a run (migration 0011).
        *(
            Index(f"ix_attempts_sort_{c}", "run_id", c, "id")
            for c in (
                "name",
                "kind",
                "heuristic",
                "status",
                "wall_s",
                "cpu_s",
                "nodes",
                "peak_rss_mb",
                "length",
                "worker",
                "tries",
                "finished_at",
            )
        ),
        # A kind's medians and maximum times, and a run's first start (migration 0014).
        Index("ix_attempts_kind_wall", "run_id", "kind", "wall_s"),
        Index("ix_attempts_kind_cpu", "run_id", "kind", "cpu_s"),
        Index("ix_attempts_run_started", "run_id", "started_at"),
        # The attempts of a run that kept their solver's output, which the text search reads (0022).
        Index(
            "ix_attempts_run_output",
            "run_id",
            sqlite_where=text(OUTPUT_KEPT),
            postgresql_where=text(OUTPUT_KEPT),
        ),
        Index(
            "ix_attempts_run_said",
            "run_id",
            "status",
            sqlite_where=text("message IS NOT NULL"),
            postgresql_where=text("message IS NOT NULL"),
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    level_hash: Mapped[str] = mapped_column(ForeignKey("levels.hash"))
    seq: Mapped[int] = mapped_column(Integer, default=0)  # position in the pack, for stable listings
    name: Mapped[str] = mapped_column(Text)
    kind: Mapped[str] = mapped_column(String(64))
    heuristic: Mapped[str] = mapped_column(String(64))
    status: Mapped[Status] = mapped_column(StoredEnum(Status, 16))
    solution: Mapped[str | None] = mapped_column(Text)  # JSON text
    length: Mapped[int | None] = mapped_column(Integer)
    nodes: Mapped[int | None] = mapped_column(BigInteger)
    wall_s: Mapped[float | None] = mapped_column(Float)
    cpu_s: Mapped[float | None] = mapped_column(Float)
    peak_rss_mb: Mapped[float | None] = mapped_column(Float)
    worker: Mapped[str | None] = mapped_column(String(255))
    tries: Mapped[int] = mapped_column(Integer, default=0)
    queued_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    message: Mapped[str | None] = mapped_column(Text)
    # Reconcile bookkeeping: when a running attempt must have reported back, and how
    # often the scheduler re-sent its task.
    deadline: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    requeues: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    # The worker process (workers.name) whose claim this is: a running attempt, or a queued one
    # waiting in the chunk that process is working through.
    holder: Mapped[str | None] = mapped_column(String(255))
    # Claims made so far: each claim's fencing token (a result lands only under the claim it was run
    # for). tries counts only the claims whose attempt started.
    claims: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    # What the solver printed beyond its answer (an external program's stdout when it was not the
    # answer, its stderr; a built-in solver's log lines), head and tail within the output_keep setting,
    # a cut marker between (migration 0022). Deferred: a run's listing never reads them.
    stdout: Mapped[str | None] = mapped_column(Text, deferred=True)
    stderr: Mapped[str | None] = mapped_column(Text, deferred=True)
    # The attempt's own wall and CPU limits where its run's are relative (--time-limit 3x: from its
    # level's history); NULL: the run's (migration 0026).
    time_limit: Mapped[float | None] = mapped_column(Float)
    cpu_limit: Mapped[float | None] = mapped_column(Float)


class Worker(Base):
    """A worker process that claims attempts, alive while its lease lies ahead (renewed every few seconds)."""

    __tablename__ = "workers"

    name: Mapped[str] = mapped_column(String(255), primary_key=True)  # hostname/pid
    host: Mapped[str] = mapped_column(String(255))  # the Celery hostname (attempts.worker)
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    renewed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    lease_until: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)
    offers: Mapped[str] = mapped_column(Text, default="{}", server_default="{}")  # JSON: kind -> source
    # JSON {run id: [level hash, ...]}: results computed and not yet written, as of the last renewal.
    buffered: Mapped[str | None] = mapped_column(Text)
    # Whether it runs only signed tasks (it has PACKSOLVE_TASK_KEY): senders without the key are told.
    signs: Mapped[bool | None] = mapped_column(Boolean)
    # Its Celery worker's pool size, and the external programs it was declared (JSON: name -> kind,
    # command, the declaration's digest, the executable's SHA-256 on its machine), as it started.
    concurrency: Mapped[int | None] = mapped_column(Integer)
    programs: Mapped[str | None] = mapped_column(Text)
    # How it measures and limits its attempts (execution.cgroups.mode): cgroup-v1, cgroup-v2 or rusage.
    measurement: Mapped[str | None] = mapped_column(String(16))
    # The CPUs it is pinned to under --cpus-per-attempt ("0", "2,3"); None: not pinned (migration 0027).
    cpus: Mapped[str | None] = mapped_column(String(255))
    # How its lease ended: stopped_at, a clean exit (db.workers.retire); lapsed_at, seen lapsed by
    # the scheduler (or found dead by a sibling) with no clean exit: the process was lost. A renewal
    # after a lapse clears lapsed_at (the process was frozen or cut off, and is back).
    stopped_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    lapsed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class WorkerEventKind(StrEnum):
    """What happened to a worker process, as its history (worker_events) records it."""

    STARTED = "started"
    LEASE_LAPSED = "lease lapsed"
    TAKEN_BACK = "claims taken back"
    BACK = "lease renewed after lapsing"
    STOPPED = "stopped"


class WorkerEvent(Base):
    """One moment of a worker process's history: started, lease lapsed, claims taken back, stopped.

    Written where each happens (db.workers, the scheduler), kept as long as the process's row
    (db.workers.KEEP_FOR), so a process lost mid-run stays shown with what was taken back from it.
    detail: JSON, e.g. the attempts taken back ({"attempts": [{"run", "level", "as"}, ...]}).
    """

    __tablename__ = "worker_events"
    __table_args__ = (Index("ix_worker_events_worker_at", "worker", "at"), Index("ix_worker_events_at", "at"))

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    worker: Mapped[str] = mapped_column(String(255))  # workers.name: hostname/pid
    host: Mapped[str] = mapped_column(String(255))  # the Celery hostname
    kind: Mapped[WorkerEventKind] = mapped_column(StoredEnum(WorkerEventKind, 32))
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    detail: Mapped[dict[str, Any] | None] = mapped_column(JsonDocument)


class Refusal(Base):
    """A worker host's refusals of a queued attempt's task (the attempt: run, level and heuristic): why,
    how often, when (db.refusals).

    authentic: the task was one the worker may trust (signed with its key, or a cluster without one)
    and the worker cannot serve it (a kind, heuristic or program it lacks): such refusals by every
    live worker give the attempt up; the others (a bad signature) are only shown.
    """

    __tablename__ = "refusals"

    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    level_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    heuristic: Mapped[str] = mapped_column(String(64), primary_key=True)  # a run may try a level with several
    host: Mapped[str] = mapped_column(String(255), primary_key=True)
    reason: Mapped[str] = mapped_column(Text)
    authentic: Mapped[bool] = mapped_column(Boolean)
    count: Mapped[int] = mapped_column(Integer)
    first_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    last_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class Deployment(Base):
    """This database's id (one row, written by its migration): every task sent from it carries it."""

    __tablename__ = "deployment"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Part(Base):
    """One run of one part of a split level (issue 38): a level's attempt (run, level, heuristic) split
    into parts run as attempts of their own, a best-of-all part once per round (db.parts).

    The level's one result stays on its attempt row, written once from the parts' answers; these rows
    say what each part cost and how it ended: ``window`` is the round's iteration bounds (best of
    all), ``resume`` the first bound the part left unsearched.
    """

    __tablename__ = "parts"
    __table_args__ = (
        UniqueConstraint("run_id", "level_hash", "heuristic", "part", "round", name="uq_part_run"),
        {"sqlite_autoincrement": True},
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    level_hash: Mapped[str] = mapped_column(String(64))
    heuristic: Mapped[str] = mapped_column(String(64))
    part: Mapped[int] = mapped_column(Integer)  # 0-based, of parts
    parts: Mapped[int] = mapped_column(Integer)  # how many the level was split into
    round: Mapped[int] = mapped_column(Integer)  # 1-based
    window_lo: Mapped[int | None] = mapped_column(Integer)
    window_hi: Mapped[int | None] = mapped_column(Integer)
    status: Mapped[Status] = mapped_column(StoredEnum(Status, 16))
    nodes: Mapped[int | None] = mapped_column(BigInteger)
    wall_s: Mapped[float | None] = mapped_column(Float)
    cpu_s: Mapped[float | None] = mapped_column(Float)
    peak_rss_mb: Mapped[float | None] = mapped_column(Float)
    resume: Mapped[int | None] = mapped_column(Integer)
    worker: Mapped[str | None] = mapped_column(String(255))
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    message: Mapped[str | None] = mapped_column(Text)
    # Parts shared by workers (db.part_queue): the count the level was split for (kind.split's n), the
    # level attempt's claim token the row was handed out under (None: a local run's), the worker
    # process running it, the best length known when it was handed out, and its answer (the whole
    # level's, JSON) with its length.
    split_of: Mapped[int | None] = mapped_column(Integer)
    token: Mapped[int | None] = mapped_column(Integer)
    holder: Mapped[str | None] = mapped_column(String(255))
    best: Mapped[int | None] = mapped_column(Integer)
    length: Mapped[int | None] = mapped_column(Integer)
    solution: Mapped[str | None] = mapped_column(Text, deferred=True)


class RunProgram(Base):
    """An external solver program a worker ran for a run: its command and the SHA-256 of its executable."""

    __tablename__ = "run_programs"
    __table_args__ = (UniqueConstraint("run_id", "worker", "solver", "sha256", name="uq_run_program"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    worker: Mapped[str] = mapped_column(String(255))
    solver: Mapped[str] = mapped_column(String(200))
    kind: Mapped[str] = mapped_column(String(64))
    command: Mapped[str] = mapped_column(Text)  # as run there: the executable's path, then the arguments
    executable: Mapped[str] = mapped_column(Text)  # the file run, symbolic links resolved
    sha256: Mapped[str] = mapped_column(String(64))
    first_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class LevelStats(Base):
    """One level's figures over every finished run folded so far (for `report hardest --all`)."""

    __tablename__ = "level_stats"

    level_hash: Mapped[str] = mapped_column(ForeignKey("levels.hash"), primary_key=True)
    kind: Mapped[str] = mapped_column(String(64), index=True)
    attempts: Mapped[int] = mapped_column(Integer)
    decided: Mapped[int] = mapped_column(Integer)  # solved or no_solution proved
    solved: Mapped[int] = mapped_column(Integer)
    best_wall_s: Mapped[float | None] = mapped_column(Float)  # fastest decided attempt
    best_nodes: Mapped[int | None] = mapped_column(BigInteger)  # fewest nodes of a decided attempt
    max_par2_s: Mapped[float | None] = mapped_column(Float)
    max_nodes: Mapped[int | None] = mapped_column(BigInteger)
    last_run_id: Mapped[int] = mapped_column(Integer)


class LevelStatsRun(Base):
    """A finished run whose attempts are folded into level_stats (each run exactly once)."""

    __tablename__ = "level_stats_runs"

    run_id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)


# A run's attempts counted per (kind, heuristic, status) with the sums `report summary` needs, kept by
# triggers on attempts (migration 0014). On PostgreSQL a group may have several signed rows (each
# statement's change, until folded): read it through packsolve.figures.run_figures, which adds them up.
# One row per group on SQLite, kept by the triggers' upsert (which needs the unique index); on PostgreSQL
# a group has as many signed rows as changes not folded yet.
RUN_FIGURES_KEY = ("run_id", "kind", "heuristic", "status")
RUN_FIGURES = Table(
    "run_figures",
    Base.metadata,
    Column("run_id", ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("kind", String(64), nullable=False),
    Column("heuristic", String(64), nullable=False),
    Column("status", String(16), nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("wall_n", Integer, nullable=False),  # attempts with a wall time
    Column("wall_sum", Float, nullable=False),
    Column("cpu_n", Integer, nullable=False),  # attempts with a CPU time
    Column("cpu_sum", Float, nullable=False),
    Column("nodes_sum", BigInteger, nullable=False),
    only_on("sqlite", Index("ix_run_figures_key", *RUN_FIGURES_KEY, unique=True)),
    only_on("postgresql", Index("ix_run_figures_key", *RUN_FIGURES_KEY)),
)


class RunSnapshot(Base):
    """What the read model (packsolve.figures) kept of a finished run, under one staleness rule.

    name says what it is (its medians and peaks, its failure groups, its level vector, its compare
    with another run); payload is JSON, data the bytes of the arrays of a level vector. stamp is
    the run's finished_at when it was made: it holds while the run's finished_at equals it (a run
    resumed and finished again has it made again).
    """

    __tablename__ = "run_snapshots"

    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    name: Mapped[str] = mapped_column(String(200), primary_key=True)
    stamp: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    payload: Mapped[Any] = mapped_column(JSON, nullable=False)
    data: Mapped[bytes | None] = mapped_column(LargeBinary)


class Counter(Base):
    """A count of events no other row keeps (db.counters): one (name, label) row, added to as they happen."""

    __tablename__ = "counters"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    label: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[float] = mapped_column(Float)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
