"""Time the dashboard's compare page on a database seeded with two finished runs (runs 1 and 2).

    python -m benchmarks.seed_attempts URL --runs 2 --levels 1000000
    python -m benchmarks.dashboard_compare URL [--reps 10] [--finish]

Through benchmarks/dashboard.py's `packsolve serve --read-only`: the compare of the two runs with
no figures kept yet (its first request is the aggregate over both runs' attempts) and its filters;
then with run 2 still going (finished_at cleared); with --finish, run 2 made a rerun of run 1 and
stamped finished as a solve, the scheduler or a worker stamps it (finish_run_if_done, timed), its
snapshots made as the scheduler's next pass makes them (figures.finished.make, timed), then its
compare. Run 2's finished_at and parent are put back at the end. The tree measured is the one
imported: PYTHONPATH=OTHER/src measures another (the server is started with the same path).
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import datetime
from typing import Any

from sqlalchemy import delete, select, update

from benchmarks import dashboard
from packsolve.db.models import Run, RunSnapshot
from packsolve.db.runs import finish_run_if_done
from packsolve.db.session import database_url, get_engine, session_scope
from packsolve.figures.finished import make

FINISHED = [
    ("compare of the two runs, the pair's figures not kept", "/compare?runs=1,2"),
    ("compare, only levels whose status differs", "/compare?runs=1,2&differs=1"),
    ("compare, kind sudoku", "/compare?runs=1,2&kind=sudoku"),
]
GOING = [("compare of the two runs, run 2 still going", "/compare?runs=1,2")]
RERUN = [("compare of the rerun with its parent, kept when it was stamped finished", "/compare?runs=1,2")]


def serve(url: str, pages: list[tuple[str, str]], reps: int) -> None:
    """Time pages through a fresh server (dashboard.main prints a line per page)."""
    dashboard.PAGES[:] = pages
    sys.argv[1:] = [url, "--reps", str(reps)]
    dashboard.main()


def set_run2(engine: Any, **values: Any) -> None:
    with session_scope(engine) as session:
        session.execute(update(Run).where(Run.id == 2).values(**values))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("url")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--finish", action="store_true", help="also time the finish of run 2 as a rerun of run 1")
    args = ap.parse_args()
    engine = get_engine(database_url(args.url))
    with session_scope(engine) as session:
        finished: datetime | None = session.scalar(select(Run.finished_at).where(Run.id == 2))
        parent = session.scalar(select(Run.parent_id).where(Run.id == 2))
        session.execute(delete(RunSnapshot).where(RunSnapshot.name.startswith("compare/")))
    try:
        serve(args.url, FINISHED, args.reps)
        set_run2(engine, finished_at=None)
        serve(args.url, GOING, args.reps)
        if args.finish:
            set_run2(engine, parent_id=1)
            started = time.perf_counter()
            with session_scope(engine) as session:
                assert finish_run_if_done(session, 2)
            print(f"run 2 stamped finished: {time.perf_counter() - started:.2f} s")
            started = time.perf_counter()
            with session_scope(engine) as session:
                make(session, 2)
            print(f"its snapshots made, its pair with run 1 kept: {time.perf_counter() - started:.2f} s")
            serve(args.url, RERUN, args.reps)
    finally:
        set_run2(engine, finished_at=finished, parent_id=parent)


if __name__ == "__main__":
    main()
