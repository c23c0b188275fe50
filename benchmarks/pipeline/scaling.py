"""Does a CPU-bound pack run twice as fast on 2 worker processes as on 1?

A pack of hard sudokus under the plain heuristic and a fixed node limit (the same
work every level), on 1 worker process against 2; the effective parallelism (solver
CPU seconds / wall seconds) shows what the machine gave.
"""

from __future__ import annotations

import argparse
import uuid
from pathlib import Path

from benchmarks.harness import load
from benchmarks.pipeline.figures import Figure
from benchmarks.pipeline.levels import cpu_bound_pack
from benchmarks.pipeline.workers import first_message, packsolve_worker, submit, wait_run


def scaling(args: argparse.Namespace, tmp: Path, db_url: str, label: str) -> list[Figure]:
    """A CPU-bound pack (hard sudokus, plain, fixed node limit) on 1 worker process vs 2.

    The two are run alternately args.reps times and the best of each kept: on a
    shared machine the others' load moves between runs. Each process is a worker
    of its own (concurrency 1, its own session): with the kernel's autogroup
    scheduling (sched_autogroup_enabled=1) a session gets one share of the CPU
    against other sessions however many processes it runs, so on a busy shared
    machine two processes of one worker cannot show scaling.
    """
    pack = cpu_bound_pack(tmp / f"cpu-{label}.sdk", args.cpu_levels)
    times: dict[int, list[float]] = {1: [], 2: []}
    cpu: dict[int, list[float]] = {1: [], 2: []}
    for _ in range(args.reps):
        for processes in (1, 2):
            wall, solver_s = one_run(args, tmp, db_url, f"cpu-{label}-{processes}", pack, processes)
            times[processes].append(wall)
            cpu[processes].append(solver_s)
    best = {p: min(t) for p, t in times.items()}
    par = {p: max(c / t for c, t in zip(cpu[p], times[p], strict=True)) for p in times}
    note = (
        f"{args.cpu_levels} levels x {args.cpu_nodes:,} nodes, best of {args.reps}: "
        f"1 process {best[1]:.1f} s, 2: {best[2]:.1f} s; "
        f"effective parallelism {par[1]:.2f} vs {par[2]:.2f}; {load()}"
    )
    what = "CPU-bound pack, 2 worker processes vs 1 (one worker each)"
    return [Figure("scaling", what, label, best[1] / best[2], "x", note)]


def one_run(
    args: argparse.Namespace, tmp: Path, db_url: str, name: str, pack: Path, processes: int
) -> tuple[float, float]:
    """Run the pack on `processes` workers of one process each; return (wall s, solver CPU s)."""
    extra = ["--heuristic", "plain", "--node-limit", str(args.cpu_nodes), "--chunk-size", "1"]
    env = {"PACKSOLVE_DATABASE_URL": db_url, "PACKSOLVE_BROKER_URL": args.redis}
    env["PACKSOLVE_QUEUE"] = f"bench-{uuid.uuid4().hex[:8]}"
    # Workers first, all ready, then the tasks: no worker starts late and skews the timing.
    workers = [packsolve_worker(env, 1, tmp, f"{name}-{k}", loglevel="INFO") for k in range(processes)]
    try:
        for w in workers:
            w.wait_logged(" ready.")
        arrived = first_message(args.redis, env["PACKSOLVE_QUEUE"])
        run_id, _, _, _ = submit(pack, env, *extra)
        wall = wait_run(db_url, run_id) - arrived()
    finally:
        for w in workers:
            w.stop()
    return wall, solver_cpu(db_url, run_id)


def solver_cpu(db_url: str, run_id: int) -> float:
    """Return the CPU seconds the run's solver children used."""
    from sqlalchemy import func, select

    from packsolve.db.models import Attempt
    from packsolve.db.session import get_engine, session_scope

    with session_scope(get_engine(db_url)) as s:
        return float(s.scalar(select(func.sum(Attempt.cpu_s)).where(Attempt.run_id == run_id)) or 0.0)
