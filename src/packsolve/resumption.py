"""Resuming runs: a local run stopped early, or a distributed one whose submit stopped, goes on into itself.

Nothing here creates a run (runs.py does): the attempts left without a result are
built again by planning.stored_specs, as rerun and the scheduler build them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Engine

from packsolve.db.local_runs import attempts_without_result, reopen, solver_alive
from packsolve.db.runs import pending_of, resolve_run
from packsolve.db.session import redact, session_scope
from packsolve.errors import PlanError
from packsolve.outcome import Status
from packsolve.planning import check_jobs, check_runnable, run_programs, stored_specs
from packsolve.queue.producer import check_broker
from packsolve.queue.protocol import DEFAULT_MAX_TRIES
from packsolve.report.level_stats import forget_run
from packsolve.runs import NewRun, NothingToRun, Sent, send
from packsolve.solvers import Solvers


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
        run = resolve_run(session, ref)
        if run.mode != "local":
            raise PlanError(f"run {run.id} is distributed: resume it with resume_distributed")
        options = json.loads(run.options or "{}")
        pid = options.get("pid")
        if run.finished_at is None and solver_alive(run):
            raise PlanError(
                f"run {run.id} is still being solved by process {pid} on this machine; "
                f"wait for it, or stop it with `packsolve cancel {run.id}` first"
            )
        rows = attempts_without_result(session, run.id)
        if not rows:
            raise NothingToRun(f"run {run.id} has a final result for every level: nothing to resume")
        specs = stored_specs(session, run, [a.level_hash for a, _ in rows], solvers)
        check_runnable(run.id, specs)
        processes = check_jobs(jobs if jobs is not None else run.concurrency)
        resumed = [*options.get("resumed", []), {"argv": [redact(a) for a in argv], "levels": len(specs)}]
        extra: dict[str, Any] = {"pid": os.getpid(), "resumed": resumed}
        if solvers:  # declared again: a later resume or rerun finds them recorded
            extra["solvers"] = {n: p.to_json() for n, p in sorted(run_programs(run, solvers).items())}
        reopen(session, run.id, [h for h, _, _ in specs], extra)
        forget_run(session, run.id)  # its figures change: `hardest --all` must fold it again
        max_tries = run.max_tries or DEFAULT_MAX_TRIES
        new = NewRun(run.id, "local", specs, run.total, 0, max_tries, [], resumed=True)
    return new, processes


def resume_distributed(
    engine: Engine, app: Any, ref: str, chunk_size: int = 0, solvers: Solvers | None = None
) -> Sent:
    """Send again the queued attempts of a distributed run whose submit stopped before it had sent them all.

    A run whose submit finished is resumed by `packsolve scheduler` (it resends
    what the broker lost): PlanError says so. The broker is checked first.
    """
    with session_scope(engine) as session:
        run = resolve_run(session, ref)
        run_id, unsent = run.id, run.sent_at is None
        hashes = [a.level_hash for a, _ in pending_of(session, run.id) if a.status == Status.QUEUED.value]
        specs = stored_specs(session, run, hashes, solvers) if unsent else []
        max_tries = run.max_tries or DEFAULT_MAX_TRIES
    if not unsent:
        raise PlanError(
            f"run {run_id} was sent in full: `packsolve scheduler` resends what the broker or a worker "
            f"lost (run it, or `packsolve scheduler --once`); its cancelled levels run again with "
            f"`packsolve rerun {run_id} --status cancelled`"
        )
    check_broker(app)
    # Some of these tasks may be in the broker already (sent before the submit stopped): a worker
    # that meets an attempt twice runs it once, the second task finds it claimed or final.
    return send(engine, app, NewRun(run_id, "distributed", specs, len(specs), 0, max_tries, []), chunk_size)
