"""What happens when a run is stamped finished: a small registry of run-finished hooks.

db.runs.finish_run_if_done stamps a run and calls each hook, in the finishing transaction, in
whichever process finished it (a worker's result flush, a claim, the scheduler, a local solve).
So a hook must be cheap: a few indexed rows at most. Heavy work on a finished run (its medians,
failure groups, level vector, compare pairs: packsolve.figures.snapshots) is never a hook; the
scheduler, the end of a local solve or the first reader do it (dramatiq's after_* hooks are the
model: a hook is told, it does not carry the work).
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Connection, delete
from sqlalchemy.orm import Session

from packsolve.db.models import RunSnapshot

RunFinishedHook = Callable[[Session | Connection, int], None]


def drop_snapshots(db: Session | Connection, run_id: int) -> None:
    """Delete the run's snapshots: any there were made at an earlier finish (a run resumed), now stale."""
    db.execute(delete(RunSnapshot).where(RunSnapshot.run_id == run_id))


# The hooks called, in order, for every run stamped finished.
AFTER_RUN_FINISHED: list[RunFinishedHook] = [drop_snapshots]


def after_run_finished(db: Session | Connection, run_id: int) -> None:
    """Call every run-finished hook for run_id, in the transaction that stamped it."""
    for hook in AFTER_RUN_FINISHED:
        hook(db, run_id)
