"""Does packsolve reach 70 % of plain Celery's rate in the steady state, and where does a level's time go?

Strict bare Celery (benchmarks/bare_celery.py: plain Celery, a no-op task counting
itself), the looser bare baseline (the bare part) and packsolve with chunk 1 are run
alternately --reps times on the same Redis, the best of each kept; the steady state is
the rate between 10 % and 90 % of the tasks done. Then one more packsolve run under
the timing hooks of benchmarks/cost_hooks.py gives where a level's cost goes.
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from pathlib import Path

from benchmarks.harness import ROOT, load, pg_database
from benchmarks.pipeline.bare import bare_celery
from benchmarks.pipeline.costs import BARE_STEADY, PK_LOOSE, PK_STEADY, cost_table
from benchmarks.pipeline.figures import Figure, best_of
from benchmarks.pipeline.levels import solved_grids, write_pack
from benchmarks.pipeline.workers import Worker, cpu_seconds, packsolve_worker, submit, wait_run


def steady_rate(times: list[float]) -> float:
    """Return the rate between 10 % and 90 % of the tasks done, from each task's completion time.

    Neither the submit nor the workers' start nor the tail counts.
    """
    times = sorted(times)
    lo, hi = int(0.1 * len(times)), int(0.9 * len(times)) - 1
    return (hi - lo) / (times[hi] - times[lo])


def strict_bare(args: argparse.Namespace, tmp: Path) -> tuple[Figure, float]:
    """Plain Celery (benchmarks/bare_celery.py), its no-op tasks queued first: steady-state tasks/s.

    Each task increments a counter; polled every few milliseconds, the counter
    gives each task's completion time. Also returns the worker main process's CPU s per task.
    """
    import redis
    from celery import Celery

    queue = f"bench-bare-{uuid.uuid4().hex[:8]}"
    counter = f"{queue}:done"
    app = Celery("bare", broker=args.redis)
    app.conf.update(task_default_queue=queue, task_serializer="json")
    with app.producer_or_acquire() as producer, producer.batch(max_size=1000):
        for _ in range(args.levels):
            app.send_task("bare.count", producer=producer)
    r = redis.Redis.from_url(args.redis)
    env = {"BARE_BROKER_URL": args.redis, "BARE_QUEUE": queue}
    argv = [sys.executable, "-m", "benchmarks.bare_celery", str(args.processes)]
    w = Worker(argv, env, tmp / "bare.log")
    done: list[float] = []
    try:
        w.wait_started(args.redis, queue)
        cpu0 = cpu_seconds(w.proc.pid)
        seen = 0
        deadline = time.monotonic() + 600
        while seen < args.levels and time.monotonic() < deadline:
            now, count = time.monotonic(), int(r.get(counter) or 0)
            done += [now] * (count - seen)  # tasks done since the last look: done by now
            seen = count
            time.sleep(0.002)
        main_cpu = (cpu_seconds(w.proc.pid) - cpu0) / args.levels
    finally:
        w.stop()
        r.delete(counter, queue, f"_kombu.binding.{queue}", f"_kombu.binding_permanent.{queue}")
    note = f"{args.levels} tasks, -c {args.processes}, acks late, prefetch 1, {load()}"
    return Figure("strict", BARE_STEADY, "—", steady_rate(done), "tasks/s", note), main_cpu


def packsolve_chunk1(
    args: argparse.Namespace, tmp: Path, db_url: str, pack: Path, timed: bool = False
) -> tuple[list[Figure], int, float]:
    """Solved sudokus, --chunk-size 1, one worker of args.processes: steady-state and loose levels/s.

    The steady state comes from the attempts' finished_at (each stamped when its
    result came back, whatever the write batching). timed runs the worker under
    benchmarks/cost_hooks.py, its totals in tmp/strict-RUN. Returns the figures,
    the run id and the worker's main process CPU s per level.
    """
    from sqlalchemy import select

    from packsolve.db.models import Attempt
    from packsolve.db.session import get_engine

    env = {"PACKSOLVE_DATABASE_URL": db_url, "PACKSOLVE_BROKER_URL": args.redis}
    env["PACKSOLVE_QUEUE"] = f"bench-{uuid.uuid4().hex[:8]}"
    run_id, _, _, _ = submit(pack, env, "--chunk-size", "1")
    name = f"strict-{run_id}"
    (tmp / name).mkdir()
    if timed:
        argv = [sys.executable, str(ROOT / "benchmarks" / "cost_hooks.py"), str(args.processes)]
        w = Worker(argv, {**env, "COST_HOOKS_DIR": str(tmp / name)}, tmp / f"{name}.log")
    else:
        w = packsolve_worker(env, args.processes, tmp, name)
    try:
        t0 = w.wait_started(args.redis, env["PACKSOLVE_QUEUE"])
        cpu0 = cpu_seconds(w.proc.pid)
        t1 = wait_run(db_url, run_id)
        main_cpu = (cpu_seconds(w.proc.pid) - cpu0) / args.levels
        time.sleep(1.0)  # the timed worker's processes write their totals every half second
    finally:
        w.stop()
    with get_engine(db_url).connect() as conn:
        stamps = conn.execute(select(Attempt.finished_at).where(Attempt.run_id == run_id)).scalars().all()
    steady = steady_rate([t.timestamp() for t in stamps if t is not None])
    note = f"{args.levels} levels, chunk 1, one worker --concurrency {args.processes}, {load()}"
    figures = [
        Figure("strict", PK_STEADY, "PostgreSQL", steady, "levels/s", note),
        Figure("strict", PK_LOOSE, "PostgreSQL", args.levels / (t1 - t0), "levels/s", note),
    ]
    return figures, run_id, main_cpu


def strict(args: argparse.Namespace, tmp: Path) -> list[Figure]:
    """Strict bare Celery, the looser bare baseline and packsolve, alternately; then the cost table.

    Each of the three runs args.reps times in turn on the same Redis, best of each
    kept; then one more packsolve run under the timing hooks (benchmarks/cost_hooks.py)
    gives where a level's cost goes (in args.costs, for the results file).
    """
    pack = write_pack(tmp / "strict.sdk", solved_grids(args.levels, seed=19))
    figures: list[Figure] = []
    bare_cpu = []
    with pg_database(args.pg) as url:
        for _ in range(args.reps):
            fig, cpu = strict_bare(args, tmp)
            figures.append(fig)
            bare_cpu.append(cpu)
            figures += bare_celery(args, tmp)
            figures += packsolve_chunk1(args, tmp, url, pack)[0]
            for f in figures[-4:]:
                print(f.row(), file=sys.stderr, flush=True)
        _, run_id, cpu = packsolve_chunk1(args, tmp, url, pack, timed=True)
    best = {f.what: f.value for f in best_of(figures)}
    strict_ratio = best[PK_STEADY] / best[BARE_STEADY]
    loose_ratio = best[PK_LOOSE] / best["no-op tasks"]
    figures += [
        Figure("strict", "ratio, steady state / strict bare", "PostgreSQL", strict_ratio, "x", "goal ≥ 0.7"),
        Figure("strict", "ratio, first message to end / looser bare", "PostgreSQL", loose_ratio, "x", ""),
    ]
    costs = cost_table(tmp / f"strict-{run_id}", args.levels, cpu, min(bare_cpu), best)
    print(costs, file=sys.stderr)
    args.costs = costs
    return figures
