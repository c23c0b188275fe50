"""How many trivial levels per second the local process pool solves into SQLite, and `packsolve solve`.

Chunk 1 against the automatic chunk through packsolve's own functions, then the whole
command end to end (start-up, parsing, writing).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from benchmarks.harness import load, run_packsolve
from benchmarks.pipeline.figures import Figure
from benchmarks.pipeline.levels import solved_grids, write_pack


def local(args: argparse.Namespace, tmp: Path) -> list[Figure]:
    """Trivial levels on the local process pool with SQLite: chunk 1 vs automatic, and the CLI end to end."""
    from packsolve import runs
    from packsolve.db.session import get_engine
    from packsolve.execution import Limits
    from packsolve.planning import plan_run
    from packsolve.request import Request
    from packsolve.runstate import RunMode
    from packsolve.settings import current

    pack = write_pack(tmp / "trivial-local.sdk", solved_grids(args.levels, seed=11))
    engine = get_engine(f"sqlite:///{tmp / 'local.db'}")
    figures = []
    for chunk in (1, None):
        run = runs.create(engine, plan_run([pack]), Request(limits=Limits(60)), runs.Origin(RunMode.LOCAL))
        start = time.monotonic()
        runs.solve_local(engine, run, args.processes, current(), chunk_size=chunk)
        rate = args.levels / (time.monotonic() - start)
        how = "chunk 1" if chunk == 1 else "automatic chunk"
        note = f"{args.levels} levels, {args.processes} processes, {load()}"
        figures.append(Figure("packsolve local", f"solved sudokus, {how}", "SQLite", rate, "levels/s", note))
    env = {"PACKSOLVE_DATABASE_URL": f"sqlite:///{tmp / 'local-cli.db'}"}
    argv = ["solve", str(pack), "--quiet", "--jobs", str(args.processes), "--format", "json"]
    _, _, wall, _ = run_packsolve(argv, env)
    what = "`packsolve solve PACK`, end to end (start-up, parse, write)"
    figures.append(Figure("packsolve local", what, "SQLite", args.levels / wall, "levels/s", load()))
    return figures
