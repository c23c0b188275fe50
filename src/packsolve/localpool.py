"""Local mode: run a run's pending attempts on a process pool, the parent writing to the database."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import select
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine

from packsolve.db.attempts import Result, record
from packsolve.db.local_runs import mark_running, record_over_cancel, was_cancelled
from packsolve.db.models import utcnow
from packsolve.db.session import session_scope
from packsolve.execution import AttemptSpec, execute_attempts, solution_length
from packsolve.outcome import Outcome
from packsolve.queue.protocol import PendingAttempt

# Results are written in batches: one transaction per result would make SQLite the bottleneck.
FLUSH_EVERY_S = 0.5
FLUSH_EVERY_N = 200
# How often the run is read to see whether `packsolve cancel` asked it to stop.
CANCEL_CHECK_S = 0.5
# Where a pidfd cannot be had, how often a pool process looks whether its solve process lives.
OWNER_POLL_S = 0.5
# How often a pool process tells the solve process which attempt it runs now (status shows it running).
# A tick, not a message per attempt: thousands of tiny levels a second would flood the pipe.
STARTED_EVERY_S = 0.1


class Stopped(Exception):
    """The pool stopped before the end: Ctrl-C (interrupted) or `packsolve cancel` (cancelled).

    Results finished before the stop are written; in_flight holds the level
    hashes that were running when their processes were killed.
    """

    def __init__(self, reason: str, in_flight: list[str]) -> None:
        super().__init__(f"local run {reason}: {len(in_flight)} attempt(s) stopped while running")
        self.reason = reason
        self.in_flight = in_flight


class _Started:
    """A pool process's side of "running now": the attempt it runs, told to the solve process each tick.

    The solve process marks what it hears running (with this process as worker, its try counted);
    an attempt that starts and ends between two ticks is never told, and counts its try with its result.
    """

    def __init__(self) -> None:
        self.queue: Any = None
        self.now: tuple[str, str, datetime] | None = None  # (level hash, worker, started)

    def serve(self, queue: Any) -> None:
        """Start the thread that puts the attempt running now on queue, once per attempt."""
        self.queue = queue

        def tell() -> None:
            told = None
            while True:
                time.sleep(STARTED_EVERY_S)
                now = self.now
                if now is not None and now is not told:
                    queue.put(now)
                    told = now

        threading.Thread(target=tell, name="packsolve-started", daemon=True).start()


_STARTED = _Started()


def _init(owner: int, started: Any) -> None:
    """Pool initializer: die with the solve process, and tell it which attempt runs now."""
    _die_with(owner)
    _STARTED.serve(started)


def _die_with(owner: int) -> None:
    """Pool initializer: kill this pool process the moment the solve process owner ends, however it ends.

    A `kill -9` of the solve runs no clean-up, and a pool process's parent is the forkserver,
    not the solve: a thread waits on a pidfd of the owner and then SIGKILLs this process, whose
    solver child follows it (PR_SET_PDEATHSIG). Without pidfds, the thread polls the owner.
    """

    def watch() -> None:
        try:
            fd = os.pidfd_open(owner)
        except (AttributeError, OSError):
            fd = None
        if fd is not None:
            select.select([fd], [], [])  # readable once the owner has exited
        else:
            with contextlib.suppress(PermissionError):
                while True:
                    os.kill(owner, 0)
                    time.sleep(OWNER_POLL_S)
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, name="packsolve-owner-watch", daemon=True).start()


def _attempts(
    specs: list[AttemptSpec], hashes: list[str]
) -> list[tuple[Outcome, str, datetime, datetime, int | None]]:
    """Run a chunk in one solver child; return (outcome, worker, started, finished, length) per spec."""
    worker = f"local@{socket.gethostname()}:{os.getpid()}"
    out = []
    outcomes = execute_attempts(specs)
    try:
        for spec, level_hash in zip(specs, hashes, strict=True):
            _STARTED.now = (level_hash, worker, utcnow())
            outcome = next(outcomes)
            finished = utcnow()
            started = finished - timedelta(seconds=outcome.stats.wall_s)
            out.append((outcome, worker, started, finished, solution_length(spec.kind, outcome)))
    finally:
        _STARTED.now = None
        outcomes.close()
    return out


class _StopSignals:
    """Ctrl-C (SIGINT) and `kill PID` (SIGTERM) during a local run, raised only where it is safe.

    A KeyboardInterrupt raised at any bytecode can land inside a database write: SQLAlchemy's
    pool then prints a traceback of its own while resetting the connection. So the handlers
    raise only while the loop waits on the pool; a signal that arrives elsewhere is kept and
    raised at the next wait. In a thread other than the main one no handler can be set: the
    caller's own signal handling applies.
    """

    def __init__(self) -> None:
        self.requested: int | None = None
        self.waiting = False
        self.previous: dict[int, Any] = {}

    def __enter__(self) -> _StopSignals:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self.previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *_: object) -> None:
        # Only where ours is still set: after a stop both signals stay ignored, so a second Ctrl-C
        # cannot cut short the caller's marking of the rest (solve_local restores them after).
        for sig, handler in self.previous.items():
            if handler is not None and signal.getsignal(sig) == self._handle:
                signal.signal(sig, handler)

    def _handle(self, signum: int, _frame: object) -> None:
        self.requested = signum
        if self.waiting:
            raise KeyboardInterrupt(f"signal {signum}")

    @contextlib.contextmanager
    def interruptible(self) -> Iterator[None]:
        """The one place a stop may be raised: a signal kept from before is raised on entry."""
        if self.requested is not None:
            raise KeyboardInterrupt(f"signal {self.requested}")
        self.waiting = True
        try:
            yield
        finally:
            self.waiting = False


class _Recorder:
    """The solve process's side of a local run: results buffered and written in batches, a cancel noticed."""

    def __init__(self, engine: Engine, run_id: int, on_result: Callable[[str, Outcome], None] | None) -> None:
        self.engine = engine
        self.run_id = run_id
        self.on_result = on_result
        self.buffer: list[Result] = []
        self.started: dict[str, tuple[str, str, datetime]] = {}  # told running, not yet marked
        self.marked: set[str] = set()  # marked running (their try counted), no result yet
        self.last_flush = self.last_check = time.monotonic()

    def add(
        self, hashes: list[str], results: list[tuple[Outcome, str, datetime, datetime, int | None]]
    ) -> None:
        """Buffer the results of a chunk (its level hashes, in order) and report each to on_result."""
        for level_hash, (outcome, worker, started, finished, length) in zip(hashes, results, strict=True):
            self.started.pop(level_hash, None)
            # Not marked running: the result counts the try, landing only while the attempt is queued.
            claimed = level_hash in self.marked
            self.marked.discard(level_hash)
            self.buffer.append(
                Result(self.run_id, level_hash, outcome, length, worker, started, finished, claimed=claimed)
            )
            if self.on_result is not None:
                self.on_result(level_hash, outcome)

    def hear(self, queue: Any) -> None:
        """Take what the pool processes told of attempts they started (a result already here wins)."""
        buffered = {r.level_hash for r in self.buffer}
        while not queue.empty():
            level_hash, worker, started = queue.get()
            if level_hash not in buffered:
                self.started[level_hash] = (level_hash, worker, started)

    def flush(self) -> None:
        """Write the attempts started and the buffered results in one transaction."""
        if self.started:
            with session_scope(self.engine) as session:
                self.marked |= mark_running(session, self.run_id, list(self.started.values()))
            self.started.clear()
        if self.buffer:
            with session_scope(self.engine) as session:
                # Results finished before a cancel reached this loop are still results: they replace
                # the "cancelled before it ran" that cancel wrote over their still-queued rows.
                written = record(session, self.buffer)
                if written < len(self.buffer):
                    record_over_cancel(session, self.buffer)
            self.buffer.clear()
        self.last_flush = time.monotonic()

    def flush_if_due(self) -> None:
        """Write the buffer once it holds FLUSH_EVERY_N results or is FLUSH_EVERY_S old."""
        if len(self.buffer) >= FLUSH_EVERY_N or time.monotonic() - self.last_flush >= FLUSH_EVERY_S:
            self.flush()

    def check_cancelled(self) -> None:
        """Raise Stopped('cancelled') once `packsolve cancel` marked the run (read every CANCEL_CHECK_S)."""
        if time.monotonic() - self.last_check < CANCEL_CHECK_S:
            return
        self.last_check = time.monotonic()
        with session_scope(self.engine) as session:
            if was_cancelled(session, self.run_id):
                raise Stopped("cancelled", [])


def run_local(
    engine: Engine,
    run_id: int,
    pending: list[PendingAttempt],
    jobs: int,
    chunk_size: int,
    on_result: Callable[[str, Outcome], None] | None = None,
) -> None:
    """Run the pending attempts with jobs processes, recording each result.

    Each pool task is a chunk of chunk_size attempts, so tiny levels share one
    solver child. The run is read every CANCEL_CHECK_S: once `packsolve cancel`
    marked it cancelled, or on KeyboardInterrupt, the pool's processes (and
    their solvers) are killed, the results finished so far are written, and
    Stopped is raised ('cancelled' or 'interrupted').
    """
    # forkserver: the pool's processes must not inherit this process's threads or DB connections.
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["packsolve.execution"])
    recorder = _Recorder(engine, run_id, on_result)
    futures: dict[Future, list[str]] = {}  # a chunk's future: its level hashes
    started = ctx.SimpleQueue()
    pool = ProcessPoolExecutor(
        max_workers=max(1, jobs), mp_context=ctx, initializer=_init, initargs=(os.getpid(), started)
    )
    with _StopSignals() as signals:
        try:
            chunks = [pending[i : i + chunk_size] for i in range(0, len(pending), chunk_size)]
            queue = list(reversed(chunks))
            # Keep only a few tasks per process in flight so a stop loses little.
            window = max(1, jobs) * 2
            while queue or futures:
                while queue and len(futures) < window:
                    chunk = queue.pop()
                    hashes = [p.level_hash for p in chunk]
                    futures[pool.submit(_attempts, [p.spec for p in chunk], hashes)] = hashes
                with signals.interruptible():
                    done, _ = wait(futures, timeout=FLUSH_EVERY_S, return_when=FIRST_COMPLETED)
                recorder.hear(started)
                for fut in done:
                    recorder.add(futures.pop(fut), fut.result())
                recorder.flush_if_due()
                recorder.check_cancelled()
            recorder.flush()
        except (KeyboardInterrupt, Stopped) as exc:
            reason = exc.reason if isinstance(exc, Stopped) else "interrupted"
            raise _stop(pool, futures, recorder, reason) from None
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            recorder.flush()
            raise
        else:
            pool.shutdown(wait=True)


def _stop(
    pool: ProcessPoolExecutor, futures: dict[Future, list[str]], recorder: _Recorder, reason: str
) -> Stopped:
    """Kill the pool, write what finished, and return the Stopped to raise (naming what was running)."""
    # A second Ctrl-C (or kill) must not cut the writing of what finished short.
    with contextlib.suppress(ValueError):  # not the main thread: no signal handlers to set
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _kill(pool)
    for fut in [f for f in futures if f.done() and not f.cancelled() and f.exception() is None]:
        recorder.add(futures.pop(fut), fut.result())
    recorder.flush()
    return Stopped(reason, [h for hashes in futures.values() for h in hashes])


def _kill(pool: ProcessPoolExecutor) -> None:
    """Stop the pool at once: kill its processes (their solver children die with them)."""
    processes = list(getattr(pool, "_processes", {}).values())  # no public way before Python 3.14
    for process in processes:
        with contextlib.suppress(ProcessLookupError, ValueError, AttributeError):
            process.kill()
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        with contextlib.suppress(ValueError, AttributeError, AssertionError):
            process.join(5)
