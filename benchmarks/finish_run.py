"""Time the transaction that stamps a run finished, on SQLite, at 100,000 and 1,000,000 attempts.

    python -m benchmarks.finish_run [--attempts 100000 1000000] [--reps 3] [--tree OTHER/src]

One run of N attempts is seeded as benchmarks/seed_attempts.py seeds them (every attempt final;
its triggers and indexes dropped first and the indexes made again after, run_figures filled with
one GROUP BY as migration 0014 fills it: the finish reads neither the text index nor the
triggers), its finished_at cleared, then db.runs.finish_run_if_done stamps it in one transaction,
timed from its first statement to its commit: while it runs, every other writer of the SQLite file
waits. The tree measured is the one imported: --tree OTHER/src measures another checkout (e.g.
main's, whose finish also built the run's medians, failure groups, level vector and compare pairs
in that transaction). Where the tree has a read model (packsolve.figures), the snapshots its scheduler
makes afterwards, off that transaction, are timed too.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path


def _load(tree: str | None) -> None:
    """Import packsolve from tree (before benchmarks.seed_attempts puts this checkout's first)."""
    if tree:
        sys.path.insert(0, str(Path(tree).resolve()))
    import packsolve

    print(f"packsolve from {Path(packsolve.__file__).parent.parent.name}/", file=sys.stderr)


def measure(n: int, reps: int) -> dict[str, float]:
    """Seed a run of n attempts in a fresh SQLite file; return the seconds of each step (finish: median)."""
    from sqlalchemy import text

    from benchmarks.seed_attempts import bulk_seeding, level_rows, run_rows, seed_sqlite
    from packsolve.db.migrate import upgrade
    from packsolve.db.runs import finish_run_if_done
    from packsolve.db.session import make_engine, session_scope

    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        engine = make_engine(f"sqlite:///{Path(tmp) / 'finish.db'}")
        upgrade(engine)
        started = time.perf_counter()
        with bulk_seeding(engine):
            seed_sqlite(engine, run_rows(1, n), level_rows(n), random.Random(0))
        out["seed_s"] = time.perf_counter() - started
        times = []
        for _ in range(reps):
            with engine.begin() as conn:
                conn.execute(text("UPDATE runs SET finished_at = NULL, state = 'running' WHERE id = 1"))
            started = time.perf_counter()
            with session_scope(engine) as session:
                assert finish_run_if_done(session, 1)
            times.append(time.perf_counter() - started)
        out["finish_s"] = statistics.median(times)
        try:
            from packsolve.figures.finished import make
        except ImportError:  # a tree without a read model: its finish made everything
            return out
        started = time.perf_counter()
        with session_scope(engine) as session:
            make(session, 1)
        out["snapshots_s"] = time.perf_counter() - started
        engine.dispose()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--attempts", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--tree", help="the src directory of another checkout to measure")
    args = ap.parse_args()
    _load(args.tree)
    for n in args.attempts:
        got = measure(n, args.reps)
        shown = ", ".join(f"{k} {v:.3f}" for k, v in got.items())
        print(f"{n:>9,} attempts: {shown}", flush=True)


if __name__ == "__main__":
    main()
