"""The Celery side: an app factory with packsolve's settings and one thin task around execute_attempt."""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import timedelta
from typing import Any, TypeVar

from celery import Celery, signals
from celery.exceptions import SoftTimeLimitExceeded
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError

from packsolve.db.models import utcnow
from packsolve.db.queries import Result, claim_many, finish_run_if_done, record
from packsolve.db.session import get_engine
from packsolve.outcome import Outcome, SearchStats, Status
from packsolve.runner import AttemptSpec, Limits, execute_attempts, execute_claimed, solution_length
from packsolve.scheduler import DEFAULT_MAX_TRIES

TASK_NAME = "packsolve.attempt"
# One queue per deployment; PACKSOLVE_QUEUE lets several share one Redis (and isolates tests).
QUEUE = os.environ.get("PACKSOLVE_QUEUE") or "packsolve"
DEFAULT_BROKER_URL = "redis://localhost:6379/0"
# Redis redelivers an unacknowledged task after this many seconds; it must exceed the longest
# task (hard limit + time spent reserved). Runs with longer limits are refused at submit.
DEFAULT_VISIBILITY_TIMEOUT = 12 * 3600
# Celery's own limits sit above our hard kill of the solver child, so they only fire if that fails.
CELERY_SOFT_MARGIN_S = 30
CELERY_HARD_MARGIN_S = 60

# A database write that fails on a dropped connection (server restart, pg_terminate_backend,
# SQLite busy) is retried this long before the task gives up; the scheduler covers the rest.
DB_RETRY_S = 120.0
# Results are written in batches at least this often: a worker killed loses at most this much
# finished work (plus the attempt it was running); one write per attempt would cost more than a
# tiny attempt itself.
FLUSH_EVERY_S = 0.25
# Attempts of a chunk are claimed (and run in one solver child) in groups of about this much work.
GROUP_S = 0.5
# A lone attempt of a kind and heuristic whose last attempt here took under this long is tiny:
# it starts solving at once and is claimed only if it has not ended within this long. One that
# ends sooner is claimed by its result's write, which counts its try: a tiny attempt then costs
# no round trip of its own to the database. Others are claimed first, so a duplicate delivery
# (attempt final or cancelled) is skipped unrun; so is a message Redis delivers again (its
# worker died), so that its try is counted before it can kill another.
TINY_S = 0.05
MAX_GROUP = 200
# What an attempt becomes if Celery's soft limit fires (only if the runner's own hard kill failed).
SOFT_LIMIT_TIMEOUT = Outcome(Status.TIMEOUT, stats=SearchStats(), message="Celery soft time limit exceeded")

log = logging.getLogger("packsolve.worker")
T = TypeVar("T")


def broker_url(url: str | None = None) -> str:
    """Return the broker URL: the argument, else PACKSOLVE_BROKER_URL, else local Redis."""
    return url or os.environ.get("PACKSOLVE_BROKER_URL") or DEFAULT_BROKER_URL


def make_app(broker: str | None = None, visibility_timeout: int = DEFAULT_VISIBILITY_TIMEOUT) -> Celery:
    """Return a Celery app with packsolve's settings (see DESIGN: why each one)."""
    app = Celery("packsolve", broker=broker_url(broker))
    app.conf.update(
        # JSON only: pickle would execute code from anyone who can write to the queue.
        task_serializer="json",
        accept_content=["json"],
        result_serializer="json",
        # The database is the result store.
        task_ignore_result=True,
        result_backend=None,
        # Long tasks: ack after the work, take one at a time, and requeue if the child dies.
        task_acks_late=True,
        worker_prefetch_multiplier=1,
        task_reject_on_worker_lost=True,
        task_default_queue=QUEUE,
        broker_transport_options={"visibility_timeout": visibility_timeout},
        broker_connection_retry_on_startup=True,
        worker_send_task_events=False,
    )
    app.conf.packsolve_visibility_timeout = visibility_timeout

    @app.task(name=TASK_NAME, bind=True, acks_late=True, reject_on_worker_lost=True)
    def attempt(self: Any, payload: dict[str, Any]) -> None:
        hostname = self.request.hostname or f"worker@{os.uname().nodename}"
        redelivered = bool((self.request.delivery_info or {}).get("redelivered"))
        run_payload(payload, hostname, redelivered)

    return app


def celery_limits(limits: Limits, attempts: int = 1) -> tuple[float | None, float | None]:
    """Return Celery's (soft, hard) time limits for a task of this many attempts under limits."""
    hard = limits.hard_time()
    if hard is None:
        return None, None
    return hard * attempts + CELERY_SOFT_MARGIN_S, hard * attempts + CELERY_HARD_MARGIN_S


def run_payload(payload: dict[str, Any], hostname: str, redelivered: bool = False) -> None:
    """Run every attempt of a task's chunk: claim, run, record; skip final or cancelled ones.

    Attempts are claimed in groups of about GROUP_S of work (the first alone, to
    learn the chunk's pace) and run in one solver child per group. A claim is one
    statement, committed on its own; a lone tiny attempt (TINY_S) is claimed only
    if it outlasts TINY_S. Results go to this process's ResultBuffer, written in
    batches within FLUSH_EVERY_S: a task of one tiny level costs no round trip of
    its own to the database. A worker killed loses at most the attempt it was
    running plus under FLUSH_EVERY_S of results; claimed attempts stay running
    and the scheduler requeues them after their deadline, unclaimed ones stay
    queued with no task in the broker, and it requeues them on its next pass.
    """
    engine = get_engine(os.environ.get("PACKSOLVE_DATABASE_URL"), pre_ping=False)
    claims = _claims(engine)
    run_id = int(payload["run"])
    max_tries = int(payload.get("max_tries", DEFAULT_MAX_TRIES))
    items = [(str(item["level"]), AttemptSpec.from_json(item["spec"])) for item in payload["items"]]
    buffer = _results(engine)
    pos = 0
    group_size = 1
    while pos < len(items):
        group = items[pos : pos + group_size]
        pos += len(group)
        hashes = [h for h, _ in group]
        hard = group[0][1].limits.hard_time()

        def claim_group(connection: Any, hashes: list[str] = hashes, hard: float | None = hard) -> dict:
            return claim_many(connection, run_id, hashes, hostname, max_tries, hard)

        started = time.monotonic()
        done: Iterable[tuple[tuple[str, AttemptSpec], Outcome, bool]]
        if len(group) == 1 and _PACE.get((group[0][1].kind, group[0][1].heuristic), 1e9) < TINY_S:
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
                for item, outcome in zip(runnable, _outcomes([spec for _, spec in runnable]), strict=True)
            )
        count = 0
        for (h, spec), outcome, claimed in done:
            count += 1
            _PACE[(spec.kind, spec.heuristic)] = outcome.stats.wall_s
            finished = utcnow()
            length = solution_length(spec.kind, outcome)
            began = finished - timedelta(seconds=outcome.stats.wall_s)
            buffer.add(Result(run_id, h, outcome, length, hostname, began, finished, claimed))
            if outcome.stats.wall_s >= FLUSH_EVERY_S:
                buffer.flush()  # batching pays for tiny attempts only; a long one's result goes now
        if count:
            pace = (time.monotonic() - started) / count
            fits = int(GROUP_S / pace) if pace > 0 else MAX_GROUP
            # The first attempt alone sets the pace; a slow one met later only delays claimed
            # attempts, whose deadlines are staggered for exactly that.
            group_size = max(1, min(MAX_GROUP, fits))


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

    try:
        outcome = execute_claimed(spec, claimed, claim_after)
    except SoftTimeLimitExceeded:
        if verdicts.get(level_hash) != "run":
            raise
        outcome = SOFT_LIMIT_TIMEOUT
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
        self.lock = threading.Lock()
        self.timer: threading.Timer | None = None

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
        if not done:
            return
        try:
            with_db_retry(self.engine, functools.partial(_record, results=done))
        except Exception:  # the timer thread must not die silently with results in hand
            log.exception("writing results failed; they stay buffered and are tried again")
            with self.lock:
                self.results[:0] = done
                self._arm()
            return
        # In a fresh transaction: two workers committing a run's last results at once each see
        # the other's row still pending inside their own, and neither would stamp the run.
        for run_id in sorted({r.run_id for r in done}):
            try:
                with_db_retry(self.engine, functools.partial(_finish_run, run_id=run_id))
            except Exception:  # the scheduler stamps it on its next pass
                log.exception("checking whether run %s is finished failed", run_id)


def _record(session: Any, results: list[Result]) -> int:
    return record(session, results, finish=False)


def _finish_run(session: Any, run_id: int) -> bool:
    return finish_run_if_done(session, run_id)


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


@signals.worker_process_shutdown.connect
def _flush_results(**_: Any) -> None:
    """Write what this pool process still holds before it exits (warm shutdown, max-tasks-per-child)."""
    buffer = _BUFFERS.get(os.getpid())
    if buffer is not None:
        buffer.flush()


def _outcomes(specs: list[AttemptSpec]) -> Iterator[Outcome]:
    """Yield execute_attempts' outcomes; a Celery soft limit ends the current one as a timeout only."""
    pos = 0
    while pos < len(specs):
        try:
            for outcome in execute_attempts(specs[pos:]):
                pos += 1
                yield outcome
        except SoftTimeLimitExceeded:
            # Only reached if the runner's own hard kill failed; the child is killed in its finally.
            # Recorded as the timeout it is, then the chunk goes on: never swallowed into an error.
            pos += 1
            yield SOFT_LIMIT_TIMEOUT


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
        except (OperationalError, InterfaceError, DBAPIError) as exc:
            transient = isinstance(exc, (OperationalError, InterfaceError)) or exc.connection_invalidated
            if not transient or time.monotonic() + delay > deadline:
                raise
            log.warning("database write failed (%s); retrying in %.1f s", type(exc.orig).__name__, delay)
            time.sleep(delay)
            delay = min(delay * 2, 5.0)


def payload_for(
    run_id: int, items: list[tuple[str, AttemptSpec]], max_tries: int = DEFAULT_MAX_TRIES
) -> dict[str, Any]:
    """Return the JSON message body of a task carrying one or more attempts of a run."""
    return {
        "run": run_id,
        "max_tries": max_tries,
        "items": [{"level": level_hash, "spec": spec.to_json()} for level_hash, spec in items],
    }


@signals.worker_process_init.connect
def _fresh_engines(**_: Any) -> None:
    """Forget engines inherited from the parent: a pooled connection must never cross a fork."""
    from packsolve.db import session as db_session

    db_session._engines.clear()
