"""Consuming a task: claim its attempts, run them on the one execution path, record the results.

Called by the Celery task of `packsolve worker` (worker.py) with the task queue.admission
admitted; everything here runs in a pool process. Nothing runs before the task matched
the database's run, attempts, heuristics and limits (admission.matching).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from datetime import timedelta
from typing import Any, TypeVar

from sqlalchemy import Connection
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError, PendingRollbackError

from packsolve.db.attempts import Result, claim_many, hold, record, stale_of, start
from packsolve.db.models import utcnow
from packsolve.db.runs import finish_run_if_done
from packsolve.db.session import get_engine
from packsolve.execution import AttemptSpec, execute_attempts, execute_claimed, solution_length
from packsolve.outcome import Outcome, Status
from packsolve.queue.admission import matching
from packsolve.queue.lease import Lease, retire_dead_siblings
from packsolve.queue.programs import note_programs_run
from packsolve.queue.protocol import DB_PATIENCE_S, Task

# A database write that fails on a dropped connection (server restart, pg_terminate_backend,
# SQLite busy) is retried this long before the task gives up; the scheduler covers the rest.
DB_RETRY_S = DB_PATIENCE_S
# Results are written in batches at least this often: a worker killed loses at most this much
# finished work (plus the attempt it was running); one write per attempt would cost more than a
# tiny attempt itself.
FLUSH_EVERY_S = 0.25
# Attempts of a chunk are claimed (and run in one solver child) in groups of about this much work.
GROUP_S = 0.5
# A lone attempt of a kind and heuristic whose last attempt here took under this long is tiny:
# once its task matched the database (admission.matching: run, level, heuristic, limits), it starts
# solving at once and is claimed only if it has not ended within this long. One that ends
# sooner is claimed by its result's write, which counts its try: a tiny attempt then costs no
# claim of its own. Others are claimed first, so a duplicate delivery (attempt final or
# cancelled) is skipped unrun; so is a message Redis delivers again (its worker died), so
# that its try is counted before it can kill another.
TINY_S = 0.05
MAX_GROUP = 200
# A timeout that a freeze of this process overlapped is run again (the frozen stretch was not the
# solver's time), at most this many times.
FROZEN_RERUNS = 2

log = logging.getLogger("packsolve.worker")
T = TypeVar("T")


def run_task(task: Task, hostname: str, redelivered: bool = False) -> None:
    """Run every attempt of a task's chunk: claim, run, record; skip final or cancelled ones.

    Attempts are claimed in groups of about GROUP_S of work (the first alone, to
    learn the chunk's pace) and run in one solver child per group. A claim is one
    statement, committed on its own; a lone tiny attempt (TINY_S) is claimed only
    if it outlasts TINY_S. Results go to this process's ResultBuffer, written in
    batches within FLUSH_EVERY_S: a task of one tiny level costs no round trip of
    its own to the database. A worker killed loses at most the attempt it was
    running plus under FLUSH_EVERY_S of results; claimed (or held) attempts are
    requeued by the scheduler once this process's lease lapses, unclaimed ones
    once the broker's queue is empty.
    """
    engine = get_engine(os.environ.get("PACKSOLVE_DATABASE_URL"), pre_ping=False)
    claims = _claims(engine)
    run_id = task.run_id
    # Only what the database knows, as it knows it (run, level, heuristic, limits): nothing else runs.
    items = matching(claims, task, with_db_retry)
    if not items:
        return
    task = replace(task, items=tuple(items))
    lease = _lease(engine, hostname)
    buffer = _results(engine)
    lease.else_runs = buffer.held
    # Before any claim: a renewal never gives back what this task is about to claim.
    lease.own(run_id, [h for h, _ in items])
    try:
        note_programs_run(engine, run_id, hostname, [spec for _, spec in items], with_db_retry)  # provenance
        _run_items(task, hostname, redelivered, claims, lease, buffer)
    finally:
        # What this task still holds and does not run (it failed midway: the database was down too
        # long) goes back at the lease's next tick, not when the lease lapses: it renews.
        lease.disown()


def _run_items(
    task: Task, hostname: str, redelivered: bool, claims: ClaimConnection, lease: Lease, buffer: ResultBuffer
) -> None:
    """Claim, run and record the task's attempts group by group (see run_task)."""
    run_id = task.run_id
    max_tries = task.max_tries
    items = list(task.items)
    tokens: dict[str, int] = {}
    pos = 0
    group_size = 1
    while pos < len(items):
        group = items[pos : pos + group_size]
        pos += len(group)
        hashes = [h for h, _ in group]
        hard = group[0][1].limits.hard_time()
        # The first claim of a chunk also holds the rest of it for this process (see db.attempts.hold).
        waiting = [h for h, _ in items[pos:]] if len(group) == pos else []

        def claim_group(
            connection: Any,
            hashes: list[str] = hashes,
            hard: float | None = hard,
            waiting: list[str] = waiting,
        ) -> dict:
            claim = functools.partial(
                claim_many, connection, run_id, worker=hostname, max_tries=max_tries, hard_s=hard,
                holder=lease.name, tokens=tokens, start_first=False,
            )  # fmt: skip
            verdicts = claim(hashes)
            skipped = [h for h in hashes if verdicts[h] == "skip"]
            if redelivered and skipped and retire_dead_siblings(connection, run_id, skipped, lease.host):
                # Redelivered because a pool process of this worker died: its lease would only
                # lapse in a while, and its claims are this worker's to take over now.
                verdicts.update(claim(skipped))
            first = next((h for h in hashes if verdicts[h] == "run"), None)
            if first is not None and len(hashes) > 1:  # a lone claim counted its try itself
                start(connection, [(run_id, first, tokens[first])])  # it runs now: its try counts
            if waiting:
                hold(connection, run_id, waiting, lease.name)
            return verdicts

        started = time.monotonic()
        successor: dict[str, str] = {}
        done: Iterable[tuple[tuple[str, AttemptSpec], Outcome, bool]]
        tiny = _PACE.get((group[0][1].kind, group[0][1].heuristic), 1e9) < TINY_S
        if len(group) == 1 and not waiting and tiny:
            claim = functools.partial(with_db_retry, claims, claim_group)
            done = _run_overlapped(run_id, group[0], claim, 0.0 if redelivered else TINY_S)
        else:
            verdicts = with_db_retry(claims, claim_group)
            runnable = [(h, spec) for h, spec in group if verdicts[h] == "run"]
            for h, _ in group:
                if verdicts[h] != "run":
                    log.info("run %s level %s: %s", run_id, h[:12], verdicts[h])
            # Lazily: each result reaches the buffer (and the database) while the group goes on.
            done = (
                (item, outcome, True)
                for item, outcome in zip(
                    runnable, execute_attempts([spec for _, spec in runnable]), strict=True
                )
            )
            # Each attempt of the group starts when the one before it ends: its try is counted then
            # (one statement), never before it starts, so a worker dying mid-group charges no
            # attempt that never started, and one that kills its worker is charged.
            successor = {a: b for (a, _), (b, _) in zip(runnable, runnable[1:], strict=False)}
        count = 0
        since = started
        for (h, spec), outcome, claimed in done:
            count += 1
            now = time.monotonic()
            outcome = _without_freezes(lease, spec, outcome, since, now)
            since = time.monotonic()
            _PACE[(spec.kind, spec.heuristic)] = outcome.stats.wall_s
            finished = utcnow() + timedelta(seconds=lease.offset_s)  # stamped in the server's clock
            length = solution_length(spec.kind, outcome)
            began = finished - timedelta(seconds=outcome.stats.wall_s)
            token = tokens.get(h) if claimed else None
            after = successor.get(h)
            if after is not None:
                starts = [(run_id, after, tokens[after])]
                with_db_retry(claims, functools.partial(start, starts=starts))
            buffer.add(Result(run_id, h, outcome, length, hostname, began, finished, claimed, token))
            if outcome.stats.wall_s >= FLUSH_EVERY_S:
                buffer.flush()  # batching pays for tiny attempts only; a long one's result goes now
        if count:
            pace = (time.monotonic() - started) / count
            fits = int(GROUP_S / pace) if pace > 0 else MAX_GROUP
            # The first attempt alone sets the pace; a slow one met later only delays claimed
            # attempts, whose deadlines are staggered for exactly that.
            group_size = max(1, min(MAX_GROUP, fits))


def _without_freezes(lease: Lease, spec: AttemptSpec, outcome: Outcome, start: float, end: float) -> Outcome:
    """Return the outcome with the time this process spent frozen while it ran taken out.

    A timeout that a freeze overlapped is run again (up to FROZEN_RERUNS times):
    the solver did not have its time. Any other outcome keeps its verdict, and its
    wall time loses the frozen stretch.
    """
    for _ in range(FROZEN_RERUNS):
        frozen = lease.frozen_during(start, end)
        if frozen <= 0:
            return outcome
        if outcome.status is not Status.TIMEOUT:
            wall = max(0.0, outcome.stats.wall_s - frozen)
            return replace(outcome, stats=replace(outcome.stats, wall_s=wall))
        log.warning("%s attempt timed out after this process was frozen %.1f s: run again", spec.kind, frozen)
        start = time.monotonic()
        outcome = next(iter(execute_attempts([spec])))
        end = time.monotonic()
    return outcome


def _lease(engine: Any, hostname: str) -> Lease:
    """Return this process's lease for engine, taking it (and starting its renewals) the first time."""
    with _LEASE_LOCK:
        found = _LEASES.get(os.getpid())
        if found is None or found.engine is not engine:
            if found is not None:
                found.retire()
            found = Lease(engine, ClaimConnection(engine), hostname, with_db_retry)
            found.start()
            _LEASES[os.getpid()] = found
        return found


_LEASES: dict[int, Lease] = {}
_LEASE_LOCK = threading.Lock()


def take_lease_early(hostname: str) -> None:
    """Take this pool process's lease from a thread (at process start: a worker waiting for its first
    task is live too); if the database is away, the first task takes it."""

    def take() -> None:
        try:
            _lease(get_engine(os.environ.get("PACKSOLVE_DATABASE_URL"), pre_ping=False), hostname)
        except Exception as exc:
            log.warning("taking this process's lease at start failed (its first task takes it): %s", exc)

    threading.Thread(target=take, name="packsolve-lease-start", daemon=True).start()


def retire_lease() -> None:
    """End this pool process's lease (before it exits), so what it held is taken back at once."""
    lease = _LEASES.pop(os.getpid(), None)
    if lease is not None:
        lease.retire()


# The wall time of this process's last attempt of each (kind, heuristic).
_PACE: dict[tuple[str, str], float] = {}


def _run_overlapped(
    run_id: int, item: tuple[str, AttemptSpec], claim: Callable[[], dict[str, str]], claim_after: float
) -> list[tuple[tuple[str, AttemptSpec], Outcome, bool]]:
    """Run one attempt with its claim alongside (see execute_claimed).

    Return [(item, outcome, claimed)], or [] if the claim declined it.
    """
    level_hash, spec = item
    verdicts: dict[str, str] = {}

    def claimed() -> bool:
        verdicts.update(claim())
        return verdicts[level_hash] == "run"

    outcome = execute_claimed(spec, claimed, claim_after)
    if outcome is None:
        log.info("run %s level %s: %s", run_id, level_hash[:12], verdicts[level_hash])
        return []
    return [(item, outcome, bool(verdicts))]


class ClaimConnection:
    """This process's connection for claims, kept open in autocommit mode.

    A claim is one guarded statement: BEGIN and COMMIT around it, or checking a
    connection out of the pool for it (reset, events), cost more than the
    statement itself; on PostgreSQL it also skips waiting for the disk. Used
    like Engine.begin by with_db_retry; after an error the connection is
    dropped and the next claim opens a fresh one.
    """

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.connection: Any = None

    @contextlib.contextmanager
    def begin(self) -> Iterator[Any]:
        if self.connection is None:
            self.connection = self.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
            if self.engine.dialect.name == "postgresql":
                # A claim need not wait for its WAL flush (one disk sync per tiny attempt). Should
                # the server crash, the last claims may be undone: their attempts go back to queued,
                # and the results, written with synchronous commits, still land (record accepts
                # queued) or are run again. A claim is bookkeeping; results stay durable.
                self.connection.exec_driver_sql("SET synchronous_commit TO off")
        try:
            yield self.connection
            self.connection.commit()  # ends SQLAlchemy's own transaction; the database has committed
        except BaseException:
            connection, self.connection = self.connection, None
            with contextlib.suppress(Exception):
                connection.close()
            raise


_CLAIMS: dict[int, ClaimConnection] = {}


def _claims(engine: Any) -> ClaimConnection:
    """Return this process's ClaimConnection for engine (one per process, as the engine)."""
    found = _CLAIMS.get(os.getpid())
    if found is None or found.engine is not engine:
        found = _CLAIMS[os.getpid()] = ClaimConnection(engine)
    return found


class ResultBuffer:
    """This process's finished results not yet written.

    A timer writes them all in one transaction within FLUSH_EVERY_S of the oldest,
    then checks the runs they touched for their end; at process exit what is left
    is written at once.
    """

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.results: list[Result] = []
        self.writing: list[Result] = []  # taken out of results by a flush that has not committed yet
        self.lock = threading.Lock()
        self.timer: threading.Timer | None = None

    def held(self) -> set[tuple[int, str]]:
        """Return the (run id, level hash) of the claimed attempts whose results are not written yet."""
        with self.lock:
            return {(r.run_id, r.level_hash) for r in (*self.results, *self.writing) if r.claimed}

    def add(self, result: Result) -> None:
        with self.lock:
            self.results.append(result)
            self._arm()

    def _arm(self) -> None:
        """Start the timer unless it runs (the caller holds the lock)."""
        if self.timer is None:
            # Not reset by later results: the oldest unwritten one waits at most FLUSH_EVERY_S.
            self.timer = threading.Timer(FLUSH_EVERY_S, self.flush)
            self.timer.daemon = True
            self.timer.start()

    def flush(self) -> None:
        """Write what is buffered, then check the runs it touched in a fresh transaction."""
        with self.lock:
            self.timer = None
            done, self.results = self.results, []
            self.writing = self.writing + done
        if not done:
            return
        try:
            with_db_retry(self.engine, functools.partial(_record, results=done))
        except Exception:  # the timer thread must not die silently with results in hand
            log.exception("writing results failed; they stay buffered and are tried again")
            with self.lock:
                self.results[:0] = done
                failed = {id(r) for r in done}
                self.writing = [r for r in self.writing if id(r) not in failed]
                self._arm()
            return
        written = {id(r) for r in done}
        with self.lock:
            self.writing = [r for r in self.writing if id(r) not in written]
        # In a fresh transaction: two workers committing a run's last results at once each see
        # the other's row still pending inside their own, and neither would stamp the run.
        for run_id in sorted({r.run_id for r in done}):
            try:
                with_db_retry(self.engine, functools.partial(_finish_run, run_id=run_id))
            except Exception:  # the scheduler stamps it on its next pass
                log.exception("checking whether run %s is finished failed", run_id)


def _record(connection: Connection, results: list[Result]) -> int:
    written = record(connection, results, finish=False)
    if written < len(results):
        # Fencing at work: a result whose claim was taken back (this process was frozen or cut
        # off past its lease) is refused; the attempt's current holder reports it.
        for r, why in stale_of(connection, results):
            log.warning("stale result refused: run %s level %s: %s", r.run_id, r.level_hash[:12], why)
    return written


def _finish_run(connection: Connection, run_id: int) -> bool:
    return finish_run_if_done(connection, run_id)


_BUFFERS: dict[int, ResultBuffer] = {}


def _results(engine: Any) -> ResultBuffer:
    """Return this process's ResultBuffer (one per process: a buffer must not cross a fork)."""
    buffer = _BUFFERS.get(os.getpid())
    if buffer is not None and buffer.engine is not engine:
        buffer.flush()  # another database now: what the old one is owed goes there first
        buffer = None
    if buffer is None:
        buffer = _BUFFERS[os.getpid()] = ResultBuffer(engine)
    return buffer


def flush_results() -> None:
    """Write what this pool process still holds (before it exits: warm shutdown, max-tasks-per-child)."""
    buffer = _BUFFERS.get(os.getpid())
    if buffer is not None:
        buffer.flush()


def with_db_retry(engine: Any, work: Callable[[Any], T], patience_s: float = DB_RETRY_S) -> T:
    """Run work(connection) in a transaction, retrying on a lost connection; re-raise after patience_s.

    engine is an Engine or a ClaimConnection (anything whose begin() yields a connection).

    Both writes a worker makes are safe to repeat: claim is guarded by status and
    tries, record never overwrites a final result.
    """
    deadline = time.monotonic() + patience_s
    delay = 0.1
    while True:
        try:
            # A Core connection, not an ORM session: the worker's statements need none of the
            # ORM's bookkeeping, which cost more than a tiny attempt's claim itself.
            with engine.begin() as connection:
                return work(connection)
        except (OperationalError, InterfaceError, DBAPIError, PendingRollbackError) as exc:
            # PendingRollbackError: a connection the server dropped mid-statement, met again before
            # it was rolled back; the next try takes a fresh one (begin() drops the old one).
            transient = (
                isinstance(exc, (OperationalError, InterfaceError, PendingRollbackError))
                or exc.connection_invalidated
            )
            if not transient or time.monotonic() + delay > deadline:
                raise
            cause = type(getattr(exc, "orig", None) or exc).__name__
            log.warning("database write failed (%s); retrying in %.1f s", cause, delay)
            time.sleep(delay)
            delay = min(delay * 2, 5.0)
