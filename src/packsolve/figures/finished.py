"""Making what readers keep of a finished run, off the finishing transaction.

db.runs.finish_run_if_done only stamps a run (and calls its cheap hooks, db.run_hooks). The
snapshots of a finished run (figures.snapshots) are made here: by the scheduler each pass for the
runs that lack them (catch_up), by a local solve when it ends (make), and otherwise by their first
reader. Each is made in the caller's transaction, never in a worker's result flush.
"""

from __future__ import annotations

from sqlalchemy import Connection, select
from sqlalchemy.orm import Session

from packsolve.db.models import Run
from packsolve.db.run_counts import fold
from packsolve.figures import snapshots
from packsolve.figures.compare_pairs import keep_rerun_pairs
from packsolve.figures.failures import store_groups
from packsolve.figures.run_figures import store_final
from packsolve.figures.run_vectors import store_vector

# Runs made per scheduler pass: one run of a million attempts takes 20 s or more (benchmarks/
# finish_run.py); a backlog (a database upgraded with many finished runs) is worked off a run a
# pass, so that each pass still requeues lost work and finishes runs on time.
PER_PASS = 1


def make(db: Session | Connection, run_id: int) -> None:
    """Make and keep the finished run's snapshots: vector, failure groups, rerun pairs, then FINAL.

    FINAL comes last: catch_up takes a run with a FINAL that holds as made. Nothing for a run going.
    """
    if db.execute(select(Run.finished_at).where(Run.id == run_id)).scalar() is None:
        return
    fold(db, run_id)
    if snapshots.kept(db, run_id, snapshots.VECTOR) is None:  # a compare may have packed it already
        store_vector(db, run_id)
    store_groups(db, run_id)
    keep_rerun_pairs(db, run_id)
    store_final(db, run_id)


def catch_up(session: Session, limit: int = PER_PASS) -> list[int]:
    """Make the snapshots of up to limit finished runs lacking them, newest first; return those runs."""
    done = snapshots.missing(session, limit)
    for run_id in done:
        make(session, run_id)
        session.commit()
    return done
