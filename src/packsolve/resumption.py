"""Resuming runs: a local run stopped early, or a distributed one whose submit stopped, goes on into itself.

Nothing here creates a run (runs.py does): the attempts left without a result are
built again by planning.stored_pending, as rerun and the scheduler build them.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from packsolve.attempt import tries_cap
from packsolve.db.local_runs import Resume, attempts_without_result, reopen, solver_alive
from packsolve.db.models import Run
from packsolve.db.runs import pending_of, resolve_run
from packsolve.db.session import session_scope
from packsolve.errors import PlanError
from packsolve.execution.spec import PendingAttempt
from packsolve.external.declaration import Solvers
from packsolve.figures.level_stats import forget_run
from packsolve.masking import mask_argv
from packsolve.outcome import Status
from packsolve.planning import check_runnable, declarations, run_programs, stored_pending
from packsolve.request import check_jobs
from packsolve.runs import NewRun, NothingToRun, Sent, send
from packsolve.runstate import RunMode

if TYPE_CHECKING:  # Celery loads with a distributed run only, not for a local solve
    from packsolve.queue.app import Cluster


def resume_local(
    engine: Engine, ref: str, jobs: int | None, argv: Sequence[str], solvers: Solvers | None = None
) -> tuple[NewRun, int]:
    """Queue again the attempts of a local run that have no final result; return it and its processes.

    Those are the attempts a Ctrl-C, a `cancel` or a crash left without a result;
    they run into the same run, with its heuristics, programs and limits (jobs: the
    run's concurrency unless given; solvers: programs declared now, over the recorded).
    Raise PlanError for a distributed run, one still being solved on this machine or
    one whose program is declared nowhere; NothingToRun if every level has a result.
    """
    with session_scope(engine) as session:
        run, pending = _resumable(session, ref, solvers)
        processes = check_jobs(jobs if jobs is not None else run.concurrency)
        # Programs declared again are recorded: a later resume or rerun finds them.
        declared = declarations(run_programs(run, solvers)) if solvers else None
        resume = Resume(os.getpid(), mask_argv(argv), declared)
        reopen(session, run.id, [p.key for p in pending], resume)
        forget_run(session, run.id)  # its figures change: `hardest --all` must fold it again
        max_tries = tries_cap(run.max_tries)
        split_after = (run.options or {}).get("split_after")
        new = NewRun(
            run.id, RunMode.LOCAL, pending, run.total, 0, max_tries, [], resumed=True, split_after=split_after
        )
    return new, processes


def check_local(engine: Engine, ref: str, solvers: Solvers | None = None) -> tuple[int, int]:
    """Return the id of the local run ref names and how many attempts resuming it would run; change nothing.

    Raise what resume_local raises for a run it would refuse (PlanError, NothingToRun): a caller
    that leaves the solving to a `packsolve resume` it starts tells the user before starting it.
    """
    with session_scope(engine) as session:
        run, pending = _resumable(session, ref, solvers)
        return run.id, len(pending)


def _resumable(session: Session, ref: str, solvers: Solvers | None) -> tuple[Run, list[PendingAttempt]]:
    """Return the local run ref names and its attempts to run again; raise as resume_local says."""
    run = resolve_run(session, ref)
    if run.mode != RunMode.LOCAL:
        raise PlanError(f"run {run.id} is distributed: resume it with resume_distributed")
    if run.finished_at is None and solver_alive(run):
        raise PlanError(
            f"run {run.id} is still being solved by process {run.pid} on this machine; "
            f"wait for it, or stop it with `packsolve cancel {run.id}` first"
        )
    rows = attempts_without_result(session, run.id)
    if not rows:
        raise NothingToRun(f"run {run.id} has a final result for every level: nothing to resume")
    # By level, then only these attempts: another heuristic's attempt of a level may have its result.
    wanted = {(a.level_hash, a.heuristic) for a, _ in rows}
    hashes = list(dict.fromkeys(a.level_hash for a, _ in rows))
    pending = [p for p in stored_pending(session, run, hashes, solvers) if p.key in wanted]
    check_runnable(run.id, pending)
    return run, pending


def resume_distributed(
    engine: Engine, cluster: Cluster, ref: str, chunk_size: int = 0, solvers: Solvers | None = None
) -> Sent:
    """Send again the queued attempts of a distributed run whose submit stopped before it had sent them all.

    A run whose submit finished is resumed by `packsolve scheduler` (it resends
    what the broker lost): PlanError says so. The broker is checked first.
    """
    with session_scope(engine) as session:
        run = resolve_run(session, ref)
        run_id, unsent = run.id, run.sent_at is None
        queued = {
            (a.level_hash, a.heuristic) for a, _ in pending_of(session, run.id) if a.status == Status.QUEUED
        }
        hashes = list(dict.fromkeys(h for h, _ in queued))
        # Only the queued attempts: a matrix run's other heuristic of a level may have its result.
        pending = (
            [p for p in stored_pending(session, run, hashes, solvers) if p.key in queued] if unsent else []
        )
        max_tries = tries_cap(run.max_tries)
    if not unsent:
        raise PlanError(
            f"run {run_id} was sent in full: `packsolve scheduler` resends what the broker or a worker "
            f"lost (run it, or `packsolve scheduler --once`); its cancelled levels run again with "
            f"`packsolve rerun {run_id} --status cancelled`"
        )
    cluster.check_reachable()
    cluster.check_signing(engine)
    # Some of these tasks may be in the broker already (sent before the submit stopped): a worker
    # that meets an attempt twice runs it once, the second task finds it claimed or final.
    unsent_run = NewRun(run_id, RunMode.DISTRIBUTED, pending, len(pending), 0, max_tries, [])
    return send(engine, cluster, unsent_run, chunk_size)
