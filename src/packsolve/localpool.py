"""Local mode: run a run's pending attempts on a process pool, the parent writing to the database."""

from __future__ import annotations

import multiprocessing
import os
import socket
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from datetime import datetime

from sqlalchemy import Engine

from packsolve.db.models import utcnow
from packsolve.db.queries import Result, record
from packsolve.db.session import session_scope
from packsolve.outcome import Outcome
from packsolve.runner import AttemptSpec, execute_attempt, solution_length

# Results are written in batches: one transaction per result would make SQLite the bottleneck.
FLUSH_EVERY_S = 0.5
FLUSH_EVERY_N = 200


def _attempt(spec: AttemptSpec) -> tuple[Outcome, str, datetime, int | None]:
    started = utcnow()
    outcome = execute_attempt(spec)
    return (
        outcome,
        f"local@{socket.gethostname()}:{os.getpid()}",
        started,
        solution_length(spec.kind, outcome),
    )


def run_local(
    engine: Engine,
    run_id: int,
    specs: list[tuple[str, str, AttemptSpec]],
    jobs: int,
    on_result: Callable[[str, Outcome], None] | None = None,
) -> None:
    """Run specs (level hash, name, spec) with jobs processes, recording each result.

    On KeyboardInterrupt the results so far are kept and the exception re-raised.
    """
    # forkserver: the pool's processes must not inherit this process's threads or DB connections.
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["packsolve.runner"])
    buffer: list[Result] = []
    last_flush = time.monotonic()

    def flush() -> None:
        nonlocal last_flush
        if buffer:
            with session_scope(engine) as session:
                record(session, buffer)
            buffer.clear()
        last_flush = time.monotonic()

    pool = ProcessPoolExecutor(max_workers=max(1, jobs), mp_context=ctx)
    try:
        futures: dict[Future, str] = {}
        queue = list(reversed(specs))
        # Keep only a few tasks per process in flight so Ctrl-C stops promptly.
        window = max(1, jobs) * 4
        while queue or futures:
            while queue and len(futures) < window:
                level_hash, _name, spec = queue.pop()
                futures[pool.submit(_attempt, spec)] = level_hash
            done, _ = wait(futures, timeout=FLUSH_EVERY_S, return_when=FIRST_COMPLETED)
            for fut in done:
                level_hash = futures.pop(fut)
                outcome, worker, started, length = fut.result()
                buffer.append(Result(run_id, level_hash, outcome, length, worker, started))
                if on_result is not None:
                    on_result(level_hash, outcome)
            if len(buffer) >= FLUSH_EVERY_N or time.monotonic() - last_flush >= FLUSH_EVERY_S:
                flush()
        flush()
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        flush()
        raise
    else:
        pool.shutdown(wait=True)
