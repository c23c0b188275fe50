"""How long `packsolve submit` of the 49,158-line 17-clue file takes: wall and CPU seconds.

Automatic chunk and chunk 1; nobody runs the tasks (the queue is deleted afterwards).
"""

from __future__ import annotations

import argparse
import uuid
from pathlib import Path

from benchmarks.harness import load, public_data
from benchmarks.pipeline.figures import Figure
from benchmarks.pipeline.workers import submit


def submit_big(args: argparse.Namespace, tmp: Path, db_url: str, label: str) -> list[Figure]:
    """`packsolve submit` of the 49,158-line 17-clue file: wall and CPU seconds, automatic chunk, chunk 1."""
    import redis

    figures = []
    path = args.submit_file or public_data("sudoku", "tdoku_puzzles2_17_clue.txt")
    n = sum(1 for ln in path.read_text().splitlines() if ln.strip())
    for chunk_arg in ("0", "1"):
        env = {"PACKSOLVE_DATABASE_URL": db_url, "PACKSOLVE_BROKER_URL": args.redis}
        env["PACKSOLVE_QUEUE"] = f"bench-{uuid.uuid4().hex[:8]}"
        _, chunk, wall, cpu = submit(path, env, "--chunk-size", chunk_arg)
        note = f"{cpu:.1f} s CPU, {load()}"
        figures.append(Figure("submit", f"{n:,} levels, chunk {chunk}", label, wall, "s", note))
        redis.Redis.from_url(args.redis).delete(env["PACKSOLVE_QUEUE"])  # nobody will run them
    return figures
