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
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from datetime import datetime, timedelta

from sqlalchemy import Engine

from packsolve.db.attempts import Result, record
from packsolve.db.local_runs import record_over_cancel, was_cancelled
from packsolve.db.models import utcnow
from packsolve.db.session import session_scope
from packsolve.execution import AttemptSpec, execute_attempts, solution_length
from packsolve.outcome import Outcome

# Results are written in batches: one transaction per result would make SQLite the bottleneck.
FLUSH_EVERY_S = 0.5
FLUSH_EVERY_N = 200
# How often the run is read to see whether `packsolve cancel` asked it to stop.
CANCEL_CHECK_S = 0.5
# Where a pidfd cannot be had, how often a pool process looks whether its solve process lives.
OWNER_POLL_S = 0.5


class Stopped(Exception):
    """The pool stopped before the end: Ctrl-C (interrupted) or `packsolve cancel` (cancelled).

    Results finished before the stop are written; in_flight holds the level
    hashes that were running when their processes were killed.
    """

    def __init__(self, reason: str, in_flight: list[str]) -> None:
        super().__init__(f"local run {reason}: {len(in_flight)} attempt(s) stopped while running")
        self.reason = reason
        self.in_flight = in_flight


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


def _attempts(specs: list[AttemptSpec]) -> list[tuple[Outcome, str, datetime, datetime, int | None]]:
    """Run a chunk in one solver child; return (outcome, worker, started, finished, length) per spec."""
    worker = f"local@{socket.gethostname()}:{os.getpid()}"
    out = []
    for spec, outcome in zip(specs, execute_attempts(specs), strict=True):
        finished = utcnow()
        started = finished - timedelta(seconds=outcome.stats.wall_s)
        out.append((outcome, worker, started, finished, solution_length(spec.kind, outcome)))
    return out


def run_local(
    engine: Engine,
    run_id: int,
    specs: list[tuple[str, str, AttemptSpec]],
    jobs: int,
    chunk_size: int,
    on_result: Callable[[str, Outcome], None] | None = None,
) -> None:
    """Run specs (level hash, name, spec) with jobs processes, recording each result.

    Each pool task is a chunk of chunk_size attempts, so tiny levels share one
    solver child. The run is read every CANCEL_CHECK_S: once `packsolve cancel`
    marked it cancelled, or on KeyboardInterrupt, the pool's processes (and
    their solvers) are killed, the results finished so far are written, and
    Stopped is raised ('cancelled' or 'interrupted').
    """
    # forkserver: the pool's processes must not inherit this process's threads or DB connections.
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["packsolve.execution"])
    buffer: list[Result] = []
    last_flush = last_check = time.monotonic()
    futures: dict[Future, list[str]] = {}

    def flush() -> None:
        nonlocal last_flush
        if buffer:
            with session_scope(engine) as session:
                # Results finished before a cancel reached this loop are still results: they replace
                # the "cancelled before it ran" that cancel wrote over their still-queued rows.
                written = record(session, buffer)
                if written < len(buffer):
                    record_over_cancel(session, buffer)
            buffer.clear()
        last_flush = time.monotonic()

    def harvest(fut: Future) -> None:
        hashes = futures.pop(fut)
        for level_hash, (outcome, worker, started, finished, length) in zip(
            hashes, fut.result(), strict=True
        ):
            buffer.append(Result(run_id, level_hash, outcome, length, worker, started, finished))
            if on_result is not None:
                on_result(level_hash, outcome)

    pool = ProcessPoolExecutor(
        max_workers=max(1, jobs), mp_context=ctx, initializer=_die_with, initargs=(os.getpid(),)
    )
    try:
        chunks = [specs[i : i + chunk_size] for i in range(0, len(specs), chunk_size)]
        queue = list(reversed(chunks))
        # Keep only a few tasks per process in flight so a stop loses little.
        window = max(1, jobs) * 2
        while queue or futures:
            while queue and len(futures) < window:
                chunk = queue.pop()
                futures[pool.submit(_attempts, [spec for _, _, spec in chunk])] = [h for h, _, _ in chunk]
            done, _ = wait(futures, timeout=FLUSH_EVERY_S, return_when=FIRST_COMPLETED)
            for fut in done:
                harvest(fut)
            if len(buffer) >= FLUSH_EVERY_N or time.monotonic() - last_flush >= FLUSH_EVERY_S:
                flush()
            if time.monotonic() - last_check >= CANCEL_CHECK_S:
                last_check = time.monotonic()
                with session_scope(engine) as session:
                    if was_cancelled(session, run_id):
                        raise Stopped("cancelled", [])
        flush()
    except (KeyboardInterrupt, Stopped) as exc:
        # A second Ctrl-C (or kill) must not cut the writing of what finished short.
        with contextlib.suppress(ValueError):  # not the main thread: no signal handlers to set
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        _kill(pool)
        for fut in [f for f in futures if f.done() and not f.cancelled() and f.exception() is None]:
            harvest(fut)
        flush()
        reason = exc.reason if isinstance(exc, Stopped) else "interrupted"
        raise Stopped(reason, [h for hashes in futures.values() for h in hashes]) from None
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        flush()
        raise
    else:
        pool.shutdown(wait=True)


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
