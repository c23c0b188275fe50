"""How many levels per second GNU parallel gets running one `packsolve solve FILE` per level.

The way many users batch a command line tool: N at a time, each level a process of
its own, into the same database.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import time
from pathlib import Path

from benchmarks.harness import PACKSOLVE, load
from benchmarks.pipeline.figures import Figure
from benchmarks.pipeline.levels import solved_grids, write_pack


def gnu_parallel(args: argparse.Namespace, tmp: Path, db_url: str, label: str) -> list[Figure]:
    """GNU parallel running one `packsolve solve FILE` per level, N at a time: levels/s."""
    binary = shutil.which("parallel")
    if binary is None:
        skipped = "skipped: `parallel` not installed"
        return [Figure("GNU parallel", skipped, label, 0, "", "apt-get install parallel")]
    folder = tmp / f"one-per-file-{label}"
    folder.mkdir()
    grids = solved_grids(args.parallel_levels, seed=12)
    files = [str(write_pack(folder / f"{i:05d}.sdk", [grid])) for i, grid in enumerate(grids)]
    solve = [*PACKSOLVE, "solve", "--quiet", "--jobs", "1", "--format", "json", "{}"]
    cmd = [binary, "-j", str(args.processes), "--halt", "now,fail=1", *solve, ":::", *files]
    from packsolve.db.session import get_engine

    get_engine(db_url)  # the schema exists before: `packsolve db upgrade` once, as a user would
    start = time.monotonic()
    env = {**os.environ, "PACKSOLVE_DATABASE_URL": db_url}
    res = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.monotonic() - start
    if res.returncode != 0:
        raise RuntimeError(f"GNU parallel failed:\n{res.stderr[-3000:]}")
    note = f"{args.parallel_levels} levels, -j {args.processes}, {load()}"
    what = "one `packsolve solve FILE` per level"
    return [Figure("GNU parallel", what, label, args.parallel_levels / wall, "levels/s", note)]
