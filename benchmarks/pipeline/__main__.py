"""Run the pipeline benchmark's parts (--only PART,...) and write their figures as a Markdown table.

    python -m benchmarks.pipeline                     # all parts, results in benchmarks/results/pipeline.md
    python -m benchmarks.pipeline --only strict --levels 10000 --reps 2

Parts: bare, distributed, local, parallel, scaling, submit, strict (each module's
docstring says what it measures). bare and distributed are run alternately --reps
times, each reported as the best of its runs: the others' load on a shared machine
only ever slows a run down.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path

from benchmarks.harness import RESULTS, load, parser, pg_database, utc_now
from benchmarks.pipeline.bare import bare_celery
from benchmarks.pipeline.distributed import distributed
from benchmarks.pipeline.figures import Figure, best_of
from benchmarks.pipeline.local import local
from benchmarks.pipeline.parallel import gnu_parallel
from benchmarks.pipeline.scaling import scaling
from benchmarks.pipeline.strict import strict
from benchmarks.pipeline.submit import submit_big

# A part measured once, or once on each database (PostgreSQL, then a fresh SQLite file).
Once = Callable[[argparse.Namespace, Path], list[Figure]]
OnBoth = Callable[[argparse.Namespace, Path, str, str], list[Figure]]
PARTS: dict[str, Once | OnBoth] = {
    "bare": bare_celery,
    "distributed": distributed,
    "local": local,
    "parallel": gnu_parallel,
    "scaling": scaling,
    "submit": submit_big,
    "strict": strict,
}
ON_BOTH = {"distributed", "parallel", "scaling", "submit"}
# The throughput parts, repeated --reps times (alternately) and reported as the best of them.
REPEATED = ("bare", "distributed")


def arguments() -> argparse.Namespace:
    """Return the command line's arguments."""
    p = parser(__doc__)
    p.add_argument("--only", default=",".join(PARTS), help=f"comma-separated parts of {tuple(PARTS)}")
    p.add_argument("--levels", type=int, default=2000, help="trivial levels per throughput run")
    p.add_argument("--processes", type=int, default=os.cpu_count() or 2, help="worker processes")
    p.add_argument("--parallel-levels", type=int, default=40, help="levels for the GNU parallel run")
    p.add_argument("--cpu-levels", type=int, default=24, help="levels of the CPU-bound pack (scaling)")
    p.add_argument("--cpu-nodes", type=int, default=200_000, help="node limit of each (scaling)")
    p.add_argument("--reps", type=int, default=3, help="alternating repetitions of the throughput runs")
    p.add_argument("--submit-file", type=Path, help="default: sudoku/tdoku_puzzles2_17_clue.txt of the data")
    redis = os.environ.get("PACKSOLVE_BENCH_REDIS_URL", "redis://127.0.0.1:6379/14")
    p.add_argument("--redis", default=redis, help="the broker (a Redis database of its own)")
    pg = os.environ.get("PACKSOLVE_BENCH_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
    p.add_argument("--pg", default=pg, help="a PostgreSQL database; throwaway ones are made beside it")
    p.add_argument("--out", type=Path, default=RESULTS / "pipeline.md")
    args = p.parse_args()
    unknown = set(args.only.split(",")) - set(PARTS)
    if unknown:
        p.error(f"--only: no part {', '.join(sorted(unknown))}; the parts are {', '.join(PARTS)}")
    return args


def run_part(name: str, args: argparse.Namespace, tmp: Path) -> list[Figure]:
    """Run one part; one on both databases gets a fresh PostgreSQL database, then a fresh SQLite file."""
    if name not in ON_BOTH:
        return PARTS[name](args, tmp)  # type: ignore[call-arg]
    part: OnBoth = PARTS[name]  # type: ignore[assignment]
    with pg_database(args.pg) as url:
        figures = part(args, tmp, url, "PostgreSQL")
    # A fresh file each time: a repetition must not find the history of the one before.
    sqlite = tmp / f"{name}-{uuid.uuid4().hex[:8]}.db"
    return figures + part(args, tmp, f"sqlite:///{sqlite}", "SQLite")


def main() -> None:
    args = arguments()
    asked = [name for name in PARTS if name in args.only.split(",")]
    order = [n for n in asked if n in REPEATED] * args.reps + [n for n in asked if n not in REPEATED]
    figures: list[Figure] = []
    started = utc_now()
    with tempfile.TemporaryDirectory(prefix="packsolve-bench-") as d:
        for name in order:
            print(f"== {name} ({load()})", file=sys.stderr, flush=True)
            new = run_part(name, args, Path(d))
            for f in new:
                print(f.row(), file=sys.stderr, flush=True)
            figures += new
    write_results(args, best_of(figures), started)


def write_results(args: argparse.Namespace, figures: list[Figure], started: str) -> None:
    """Write the figures' table to args.out; a partial run keeps the earlier full run below it."""
    lines = [
        "# Pipeline benchmark",
        "",
        f"`python -m benchmarks.pipeline {' '.join(sys.argv[1:])}` (levels {args.levels}, "
        f"processes {args.processes}) — {started}, "
        f"{os.cpu_count()} cores, Redis {args.redis.rsplit('@', 1)[-1]}.",
        "",
        "| part | what | database | figure | notes |",
        "| --- | --- | --- | --- | --- |",
        *(f.row() for f in figures),
        "",
    ]
    if getattr(args, "costs", None):
        lines += ["Where a one-level task's time goes (strict part, cost_hooks.py):", "", args.costs, ""]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if args.out.exists() and set(args.only.split(",")) != set(PARTS):
        lines += [
            "",
            "(partial run: the parts asked for; an earlier full run follows)",
            "",
            args.out.read_text(),
        ]
    args.out.write_text("\n".join(lines))
    print("\n".join(lines))
    print(json.dumps({"written": str(args.out)}), file=sys.stderr)


if __name__ == "__main__":
    main()
