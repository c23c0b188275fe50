"""Worker leases: each worker process that claims attempts keeps a row alive by renewing it.

A claim names its holder (attempts.holder = workers.name) and carries a fencing
token (the attempt's try count after the claim). While the holder's lease lies
ahead, its claims are its own; once the lease has lapsed, the scheduler takes
them back (requeue) whatever their time limit, and a result written later with
the old token is refused (db.attempts.record).

Time is the database server's where it has one (PostgreSQL: leases written by
worker machines with skewed clocks still compare right); SQLite serves one
machine, whose clock it uses.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, NamedTuple, cast

from sqlalchemy import Connection, Table, and_, delete, exists, func, insert, literal, select, update
from sqlalchemy.orm import Session

from packsolve.db.models import Attempt, Deployment, Worker, WorkerEvent, WorkerEventKind, as_utc, utcnow
from packsolve.db.tables import ATTEMPTS, BATCH, PENDING_VALUES, rowcount
from packsolve.outcome import Status

WORKERS = cast(Table, Worker.__table__)
EVENTS = cast(Table, WorkerEvent.__table__)
# A worker process whose lease ended (stopped, or lost) this long ago and that holds nothing pending
# is forgotten with its history: a week, so a process lost on Friday night is still shown on Monday
# with what was taken back from it. A live process's history is kept as long as it lives.
KEEP_FOR = timedelta(days=7)
# The holder of attempts a live worker process gave back (it does not run them: its task failed,
# or its claim's answer was lost and another delivery ran them): no lease has this name, so the
# scheduler takes them back on its next pass, as a lapsed holder's.
RELEASED = "(released)"


def on_postgresql(db: Session | Connection) -> bool:
    dialect = db.get_bind().dialect if isinstance(db, Session) else db.dialect
    return bool(dialect.name == "postgresql")


def db_now(db: Session | Connection) -> datetime:
    """Return the database server's current time (UTC, aware); this machine's clock on SQLite."""
    if on_postgresql(db):
        return cast(datetime, db.execute(select(func.now())).scalar_one())
    return utcnow()


def now_sql(db: Session | Connection) -> Any:
    """Return "now" to write in a statement: the server's now() on PostgreSQL, this machine's on SQLite."""
    return func.now() if on_postgresql(db) else utcnow()


@dataclass(frozen=True)
class Doing:
    """What a worker process works on, as each renewal of its lease says it.

    runs: the attempts it runs, and the claimed ones among its results not yet written, as
    (run id, level hash, heuristic) (a run may try a level with several heuristics; None: whichever
    the run tries it with); the rest of what the database says it holds is given back.
    buffered: per run id, the (level hash, heuristic) of every result it computed and has not
    written yet (claimed or not), published so `status` tells them from attempts really running.
    """

    runs: set[tuple[int, str, str | None]]
    buffered: dict[int, list[tuple[str, str | None]]] = field(default_factory=dict)


@dataclass(frozen=True)
class Facts:
    """What a worker process says of itself as it starts: the kinds it offers, its Celery worker's pool
    size, and the external programs it was declared (name -> kind, command, digest of the
    declaration, SHA-256 of the executable on its machine; None where it cannot be found there)."""

    offers: dict[str, Any] = field(default_factory=dict)
    concurrency: int | None = None
    programs: dict[str, Any] = field(default_factory=dict)
    measurement: str | None = None  # how it measures its attempts (execution.cgroups.mode)
    cpus: str | None = None  # the CPUs it is pinned to ("2,3"), under --cpus-per-attempt; None: not pinned


def start(connection: Connection, name: str, host: str, facts: Facts) -> None:
    """Make name's row new as its process starts (whatever an earlier process of the same name, a pid
    reused, left in it), with facts; its history says it started. The lease is renew's to extend."""
    now = now_sql(connection)
    values: dict[str, Any] = {
        "host": host,
        "started_at": now,
        "renewed_at": now,
        "lease_until": now,
        "offers": json.dumps(facts.offers, sort_keys=True),
        "concurrency": facts.concurrency,
        "programs": json.dumps(facts.programs, sort_keys=True),
        "measurement": facts.measurement,
        "cpus": facts.cpus,
        "stopped_at": None,
        "lapsed_at": None,
        "signs": None,
        "buffered": None,
    }
    res = connection.execute(
        update(WORKERS).where(WORKERS.c.name == name).values(**values).returning(WORKERS.c.started_at)
    )
    stamp = res.scalar()
    if stamp is None:
        stamp = connection.execute(
            insert(WORKERS).values(name=name, **values).returning(WORKERS.c.started_at)
        ).scalar_one()
    detail = {"concurrency": facts.concurrency} if facts.concurrency else None
    record_event(connection, name, host, WorkerEventKind.STARTED, detail, at=stamp)


def renew(
    connection: Connection,
    name: str,
    host: str,
    ttl_s: float,
    offers: dict[str, Any],
    doing: Doing | None = None,
) -> datetime:
    """Extend name's lease to ttl_s from now, creating it the first time; return the server's time.

    A renewal clears lapsed_at: a process seen lapsed that renews is back.
    With doing (what the process works on now): the attempts the database says
    name holds that are not among doing.runs are given back (holder RELEASED),
    for the scheduler to take back on its next pass, and doing.buffered is
    published in the same statement as the lease. On a slow link a renewal
    costs two round trips (one for the lease and the server's time, one to read
    what name holds), so a lease of a few seconds still holds over a 400 ms
    round trip.
    """
    if on_postgresql(connection):
        until: Any = func.now() + timedelta(seconds=ttl_s)
        now: Any = func.now()
    else:
        now = utcnow()
        until = now + timedelta(seconds=ttl_s)
    values: dict[str, Any] = {"renewed_at": now, "lease_until": until, "lapsed_at": None}
    if doing is not None:
        values["buffered"] = json.dumps(
            {str(r): _published(keys) for r, keys in sorted(doing.buffered.items())}
        )
    res = connection.execute(
        update(WORKERS).where(WORKERS.c.name == name).values(**values).returning(WORKERS.c.renewed_at)
    )
    stamp = res.scalar()
    if stamp is None:
        res = connection.execute(
            insert(WORKERS)
            .values(name=name, host=host, started_at=now, offers=json.dumps(offers, sort_keys=True), **values)
            .returning(WORKERS.c.renewed_at)
        )
        stamp = res.scalar_one()
    if doing is not None:
        _release_unrun(connection, name, doing.runs)
    return as_utc(stamp)


def _release_unrun(connection: Connection, name: str, running: set[tuple[int, str, str | None]]) -> int:
    """Give back (holder RELEASED) the pending attempts name holds and does not run; return how many."""
    held = connection.execute(
        select(ATTEMPTS.c.id, ATTEMPTS.c.run_id, ATTEMPTS.c.level_hash, ATTEMPTS.c.heuristic).where(
            ATTEMPTS.c.holder == name, ATTEMPTS.c.status.in_(PENDING_VALUES)
        )
    )
    unrun = [
        i
        for i, run_id, h, heuristic in held
        if (run_id, h, heuristic) not in running and (run_id, h, None) not in running
    ]
    released = 0
    for k in range(0, len(unrun), BATCH):
        released += rowcount(
            connection.execute(
                update(ATTEMPTS)
                .where(ATTEMPTS.c.id.in_(unrun[k : k + BATCH]), ATTEMPTS.c.holder == name)
                .where(ATTEMPTS.c.status.in_(PENDING_VALUES))
                .values(holder=RELEASED)
            )
        )
    return released


def record_event(
    connection: Session | Connection,
    name: str,
    host: str,
    kind: WorkerEventKind,
    detail: dict[str, Any] | None = None,
    at: datetime | None = None,
) -> None:
    """Add a moment to name's history (worker_events), at the database's now unless told."""
    connection.execute(
        insert(EVENTS).values(
            worker=name, host=host, kind=kind, at=now_sql(connection) if at is None else at, detail=detail
        )
    )


def retire(connection: Connection, name: str, detail: dict[str, Any] | None = None) -> None:
    """End name's lease now (a clean exit), saying so in its history: what it still holds is taken
    back on the next pass."""
    now = db_now(connection)
    res = connection.execute(
        update(WORKERS)
        .where(WORKERS.c.name == name)
        .values(lease_until=now, stopped_at=now, lapsed_at=None)
        .returning(WORKERS.c.host)
    )
    host = res.scalar()
    if host is not None:
        record_event(connection, name, str(host), WorkerEventKind.STOPPED, detail, at=now)


def end_dead(connection: Connection, name: str, why: str) -> None:
    """End the lease of name, a process found dead (no clean exit): it is lost, its history says why."""
    now = db_now(connection)
    res = connection.execute(
        update(WORKERS)
        .where(WORKERS.c.name == name, WORKERS.c.stopped_at.is_(None))
        .values(lease_until=now, lapsed_at=now)
        .returning(WORKERS.c.host)
    )
    host = res.scalar()
    if host is not None:
        record_event(connection, name, str(host), WorkerEventKind.LEASE_LAPSED, {"why": why}, at=now)


def note_lapsed(session: Session, now: datetime) -> list[str]:
    """Mark lost the processes whose lease lapsed before now with no clean exit; return their names.

    Each is marked once per lapse (lapsed_at, cleared by a renewal): of two schedulers at once only
    one marks it (the guarded update), and its history gets one `lease lapsed`.
    """
    res = session.execute(
        update(WORKERS)
        .where(WORKERS.c.lease_until < now, WORKERS.c.lapsed_at.is_(None), WORKERS.c.stopped_at.is_(None))
        .values(lapsed_at=now)
        .returning(WORKERS.c.name, WORKERS.c.host, WORKERS.c.lease_until)
    )
    marked = res.all()
    for name, host, until in marked:
        detail = {"lease_until": as_utc(until).isoformat()}
        record_event(session, str(name), str(host), WorkerEventKind.LEASE_LAPSED, detail, at=now)
    return sorted(str(name) for name, _, _ in marked)


def killed_on_request(connection: Connection, name: str) -> int:
    """Give back the tries of what name held when its worker killed it on request; end its lease.

    A try counts a death the attempt's own work may have caused; a pool process its own
    worker killed because someone asked (Celery's revoke with terminate) died of nothing
    the attempts did. Each of its claims that had started (its try counted) gets that try
    back, and its lease ends now, so the scheduler's next pass requeues what it held and
    sends it again. Return how many tries were given back.
    """
    given = connection.execute(
        update(ATTEMPTS)
        .where(ATTEMPTS.c.holder == name, ATTEMPTS.c.status == Status.RUNNING.value)
        .where(ATTEMPTS.c.started_at.is_not(None), ATTEMPTS.c.tries > 0)
        .values(tries=ATTEMPTS.c.tries - 1, started_at=None)
    )
    retire(connection, name, {"why": "killed on request (revoked with terminate)"})
    return rowcount(given)


def holders_of(connection: Connection, run_id: int, keys: list[tuple[str, str]]) -> list[str]:
    """Return the distinct holders of these attempts (level hash, heuristic) of a run that are running."""
    per_heuristic: dict[str, list[str]] = {}
    for h, heuristic in keys:
        per_heuristic.setdefault(heuristic, []).append(h)
    found: set[str] = set()
    for heuristic, hashes in per_heuristic.items():
        rows = connection.execute(
            select(Attempt.holder)
            .where(Attempt.run_id == run_id, Attempt.level_hash.in_(hashes), Attempt.heuristic == heuristic)
            .where(Attempt.status == Status.RUNNING, Attempt.holder.is_not(None))
            .distinct()
        )
        found.update(str(holder) for (holder,) in rows)
    return sorted(found)


class WorkerState(StrEnum):
    """How a worker process stands: its lease ahead (live), ended by a clean exit (stopped), or
    ended without one (lost: killed, frozen or cut off past its lease)."""

    LIVE = "live"
    LOST = "lost"
    STOPPED = "stopped"


def state_of(lease_until: datetime | None, stopped_at: datetime | None, now: datetime) -> WorkerState:
    """Return a process's WorkerState from its row (lost_rows is its SQL twin for LOST)."""
    if lease_until is not None and as_utc(lease_until) >= now:
        return WorkerState.LIVE
    return WorkerState.STOPPED if stopped_at is not None else WorkerState.LOST


def lost_rows(now: datetime) -> Any:
    """Return the SQL condition on workers rows of state_of's LOST: the lease ended, no clean stop."""
    return and_(WORKERS.c.lease_until < now, WORKERS.c.stopped_at.is_(None))


def lapsed_holders(now: datetime) -> Any:
    """Return a SELECT of the names whose lease ended before now (to use in an IN clause), RELEASED too."""
    return select(WORKERS.c.name).where(WORKERS.c.lease_until < now).union(select(literal(RELEASED)))


@dataclass(frozen=True)
class LiveWorker:
    """A worker process whose lease lies ahead."""

    name: str
    host: str
    renewed_at: datetime
    offers: dict[str, Any]


def live_workers(session: Session, now: datetime | None = None) -> list[LiveWorker]:
    """Return the worker processes whose lease lies ahead, by name."""
    now = db_now(session) if now is None else now
    rows = session.execute(
        select(WORKERS.c.name, WORKERS.c.host, WORKERS.c.renewed_at, WORKERS.c.offers)
        .where(WORKERS.c.lease_until >= now)
        .order_by(WORKERS.c.name)
    )
    return [LiveWorker(n, h, as_utc(r), json.loads(o or "{}")) for n, h, r, o in rows]


def held_by_lapsed(session: Session, run_id: int, now: datetime | None = None) -> int:
    """Return how many of the run's attempts are running under a holder whose lease has lapsed."""
    now = db_now(session) if now is None else now
    return int(
        session.execute(
            select(func.count())
            .select_from(Attempt)
            .where(Attempt.run_id == run_id, Attempt.status == Status.RUNNING)
            .where(Attempt.holder.in_(lapsed_holders(now)))
        ).scalar_one()
    )


@dataclass(frozen=True)
class Buffered:
    """A run's pending attempts whose results live worker processes computed and have not written yet.

    by_host: how many per worker (its Celery hostname); claimed: how many of them the
    database shows running (claimed, then run), unclaimed: shown queued (a tiny attempt
    runs before its claim, and its result's write claims it).
    """

    by_host: dict[str, int]
    claimed: int
    unclaimed: int

    @property
    def total(self) -> int:
        return self.claimed + self.unclaimed


def buffered_in(session: Session, run_id: int, now: datetime | None = None) -> Buffered:
    """Return the run's attempts waiting in live worker processes' write buffers (see Buffered).

    From what each live lease's last renewal published (Doing.buffered, read by published_buffered).
    An attempt counts only while it is still pending: queued, or running under that process's
    claim. A result written since that renewal is final and counts no more, so a stale list never
    counts twice; one computed since counts as running until the next renewal.
    """
    now = db_now(session) if now is None else now
    leases = session.execute(
        select(WORKERS.c.name, WORKERS.c.host, WORKERS.c.buffered).where(
            WORKERS.c.lease_until >= now, WORKERS.c.buffered.is_not(None)
        )
    ).all()
    by_host: dict[str, int] = {}
    shown: dict[str, int] = {}
    for name, host, published in leases:
        keys = published_buffered(published).get(run_id) or []
        pending = pending_of(session, run_id, keys)
        for key in keys:
            row = buffered_attempt(key, name, pending)
            if row is not None:
                shown[row.status] = shown.get(row.status, 0) + 1
                by_host[host] = by_host.get(host, 0) + 1
    return Buffered(
        dict(sorted(by_host.items())), shown.get(Status.RUNNING.value, 0), shown.get(Status.QUEUED.value, 0)
    )


# A published buffered result: (level hash, heuristic); heuristic None (an earlier worker's, or a result
# naming none) stands for the level's attempt of whichever heuristic is pending.
BufferedKey = tuple[str, str | None]


def _published(keys: list[BufferedKey]) -> list[Any]:
    """Return what a renewal publishes of buffered keys: [hash, heuristic] pairs, a bare hash for None."""
    return [h if heuristic is None else [h, heuristic] for h, heuristic in keys]


def published_buffered(text: str) -> dict[int, list[BufferedKey]]:
    """Return a lease's published buffered results per run id (workers.buffered, as renew writes it;
    an earlier worker's bare hashes read as naming no heuristic)."""
    out: dict[int, list[BufferedKey]] = {}
    for run, entries in json.loads(text).items():
        out[int(run)] = [(e, None) if isinstance(e, str) else (str(e[0]), str(e[1])) for e in entries]
    return out


class PendingRow(NamedTuple):
    """A run's pending attempt of a level, as a published buffered result is matched against it."""

    status: str  # queued or running
    heuristic: str
    holder: str | None


def pending_of(session: Session, run_id: int, keys: list[BufferedKey]) -> dict[str, list[PendingRow]]:
    """Return, per level hash of keys, the run's pending attempts of that level (one read per BATCH)."""
    hashes = sorted({h for h, _ in keys})
    found: dict[str, list[PendingRow]] = {}
    for k in range(0, len(hashes), BATCH):
        rows = session.execute(
            select(Attempt.level_hash, Attempt.status, Attempt.heuristic, Attempt.holder).where(
                Attempt.run_id == run_id,
                Attempt.level_hash.in_(hashes[k : k + BATCH]),
                Attempt.status.in_((Status.QUEUED, Status.RUNNING)),
            )
        )
        for h, status, heuristic, holder in rows:
            value = status.value if isinstance(status, Status) else str(status)
            found.setdefault(h, []).append(PendingRow(value, heuristic, holder))
    return found


def buffered_attempt(
    key: BufferedKey, lease: str, pending: Mapping[str, list[PendingRow]]
) -> PendingRow | None:
    """Return the pending attempt a published buffered result (key, of lease) is of, or None (written
    since): of its heuristic (any, for a key naming none), and queued, or running under that lease's claim."""
    for row in pending.get(key[0], ()):
        if key[1] is not None and key[1] != row.heuristic:
            continue
        if row.status == Status.QUEUED.value or (row.status == Status.RUNNING.value and row.holder == lease):
            return row
    return None


def forget_old(session: Session, now: datetime) -> int:
    """Forget the processes whose lease ended over KEEP_FOR ago and that hold nothing pending, with
    their history; return how many.

    A history older than KEEP_FOR of a process no longer in workers goes too.
    """
    holds = exists().where(Attempt.holder == WORKERS.c.name, Attempt.status.in_(PENDING_VALUES))
    res = session.execute(delete(WORKERS).where(WORKERS.c.lease_until < now - KEEP_FOR, ~holds))
    known = exists().where(WORKERS.c.name == EVENTS.c.worker)
    session.execute(delete(EVENTS).where(EVENTS.c.at < now - KEEP_FOR, ~known))
    return rowcount(res)


def deployment_id(db: Session | Connection) -> str:
    """Return this database's deployment id (written once by its migration)."""
    return str(db.execute(select(Deployment.id).limit(1)).scalar_one())


def mark_signing(connection: Connection, name: str) -> None:
    """Record that name's worker process runs only signed tasks (it has a task key)."""
    connection.execute(update(WORKERS).where(WORKERS.c.name == name).values(signs=True))


def signing_hosts(session: Session, now: datetime | None = None) -> list[str]:
    """Return the hosts of live worker processes that run only signed tasks, sorted."""
    now = db_now(session) if now is None else now
    rows = session.execute(
        select(WORKERS.c.host).where(WORKERS.c.lease_until >= now, WORKERS.c.signs.is_(True)).distinct()
    )
    return sorted(str(h) for (h,) in rows)
