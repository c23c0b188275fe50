"""How many trivial levels per second go through submit -> one worker of N processes -> database.

Chunk 1 (one level a task) and the automatic chunk, on PostgreSQL and SQLite; timed
from the worker's first message to the run's last result, and once more with the
submit included.
"""

from __future__ import annotations

import argparse
import uuid
from pathlib import Path

from benchmarks.harness import load
from benchmarks.pipeline.figures import Figure
from benchmarks.pipeline.levels import solved_grids, write_pack
from benchmarks.pipeline.workers import packsolve_worker, submit, wait_run


def distributed(args: argparse.Namespace, tmp: Path, db_url: str, label: str) -> list[Figure]:
    """Trivial levels through submit -> one worker of N processes -> database, chunk 1 then automatic."""
    pack = write_pack(tmp / "trivial.sdk", solved_grids(args.levels))
    figures = []
    for chunk_arg in ("1", "0"):
        env = {"PACKSOLVE_DATABASE_URL": db_url, "PACKSOLVE_BROKER_URL": args.redis}
        env["PACKSOLVE_QUEUE"] = f"bench-{uuid.uuid4().hex[:8]}"
        run_id, chunk, sub_wall, _ = submit(pack, env, "--chunk-size", chunk_arg)
        w = packsolve_worker(env, args.processes, tmp, f"dist-{label}-{chunk}")
        try:
            t0 = w.wait_started(args.redis, env["PACKSOLVE_QUEUE"])
            t1 = wait_run(db_url, run_id)
        finally:
            w.stop()
        how = "chunk 1" if chunk_arg == "1" else f"automatic chunk ({chunk})"
        note = f"{args.levels} levels, {args.processes} processes, submit {sub_wall:.1f} s, {load()}"
        rate, with_submit = args.levels / (t1 - t0), args.levels / (t1 - t0 + sub_wall)
        figures += [
            Figure("packsolve distributed", f"solved sudokus, {how}", label, rate, "levels/s", note),
            Figure("packsolve distributed", f"same, submit included, {how}", label, with_submit, "levels/s"),
        ]
    return figures
