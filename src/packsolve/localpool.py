"""Local mode: run a run's pending attempts on a process pool, the parent writing to the database."""

from __future__ import annotations

import multiprocessing
import os
import socket
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from datetime import datetime, timedelta

from sqlalchemy import Engine

from packsolve.db.attempts import Result, record
from packsolve.db.models import utcnow
from packsolve.db.session import session_scope
from packsolve.execution import AttemptSpec, execute_attempts, solution_length
from packsolve.outcome import Outcome

# Results are written in batches: one transaction per result would make SQLite the bottleneck.
FLUSH_EVERY_S = 0.5
FLUSH_EVERY_N = 200


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
    solver child. On KeyboardInterrupt the results so far are kept and the
    exception re-raised.
    """
    # forkserver: the pool's processes must not inherit this process's threads or DB connections.
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["packsolve.execution"])
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
        futures: dict[Future, list[str]] = {}
        chunks = [specs[i : i + chunk_size] for i in range(0, len(specs), chunk_size)]
        queue = list(reversed(chunks))
        # Keep only a few tasks per process in flight so Ctrl-C stops promptly.
        window = max(1, jobs) * 2
        while queue or futures:
            while queue and len(futures) < window:
                chunk = queue.pop()
                futures[pool.submit(_attempts, [spec for _, _, spec in chunk])] = [h for h, _, _ in chunk]
            done, _ = wait(futures, timeout=FLUSH_EVERY_S, return_when=FIRST_COMPLETED)
            for fut in done:
                hashes = futures.pop(fut)
                for level_hash, (outcome, worker, started, finished, length) in zip(
                    hashes, fut.result(), strict=True
                ):
                    buffer.append(Result(run_id, level_hash, outcome, length, worker, started, finished))
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
