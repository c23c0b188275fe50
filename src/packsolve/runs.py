"""Starting runs: the only code that creates one, for solve, submit and rerun alike.

Every entry point plans through planning.py, creates the run here (create),
then either solves it on the local pool (solve_local) or sends it to the
broker (send). The CLI only parses options and prints.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine

from packsolve.db.programs import recorded
from packsolve.db.runs import (
    RunOptions,
    attempts_to_rerun,
    cancel_pending,
    create_run,
    mark_sent,
    resolve_run,
)
from packsolve.db.session import redact, session_scope
from packsolve.errors import OptionError, PlanError
from packsolve.execution import Limits
from packsolve.levels import Level
from packsolve.localpool import run_local
from packsolve.outcome import Outcome, Status
from packsolve.planning import (
    HeuristicChoice,
    Plan,
    Request,
    Spec,
    check_distributed,
    check_jobs,
    choose_chunk_size,
    hardest_first,
    limits_from_options,
    plan_levels,
    plan_run,
)
from packsolve.queue.producer import check_broker, enqueue
from packsolve.queue.programs import note_programs_run
from packsolve.queue.protocol import DEFAULT_MAX_TRIES
from packsolve.solvers import ExternalSolver, declared_in


@dataclass(frozen=True)
class NewRun:
    """A run just created: its id, its pending attempts in pack order, and what was skipped."""

    id: int
    mode: str
    specs: list[Spec]
    total: int  # attempts, invalid levels included
    duplicates: int
    max_tries: int
    notes: list[str]  # what the user should know about the plan (a heuristic not applied to a kind)

    @property
    def invalid(self) -> int:
        return self.total - len(self.specs)


@dataclass(frozen=True)
class Sent:
    """What send() put on the queue."""

    tasks: int
    chunk_size: int
    seconds: float


class Interrupted(Exception):
    """A local run was interrupted (Ctrl-C); its unrun attempts were marked cancelled."""

    def __init__(self, run_id: int, cancelled: int) -> None:
        super().__init__(f"run {run_id} interrupted: {cancelled} level(s) not run were marked cancelled")
        self.run_id = run_id
        self.cancelled = cancelled


def create(
    engine: Engine,
    plan: Plan,
    request: Request,
    mode: str,
    argv: Sequence[str],
    concurrency: int | None = None,
    parent_id: int | None = None,
    extra: dict[str, Any] | None = None,
) -> NewRun:
    """Create the run's rows (every attempt exists from here on) and return it; the one way to make a run."""
    max_tries = request.max_tries or DEFAULT_MAX_TRIES
    limits = request.limits
    options = RunOptions(
        mode=mode,
        heuristic=str(HeuristicChoice.parse(request.heuristic)),
        kind=request.kind,
        time_limit=limits.time_limit,
        node_limit=limits.node_limit,
        memory_limit_mb=limits.memory_limit_mb,
        concurrency=concurrency,
        max_tries=max_tries if mode == "distributed" else request.max_tries,
        label=request.label,
        parent_id=parent_id,
        # The command line as given, passwords masked: provenance, never a secret. With it, the
        # kinds used (source, version) and the external programs' declarations (they travel in tasks).
        extra={"argv": [redact(a) for a in argv], **plan.provenance(), **(extra or {})},
    )
    with session_scope(engine) as session:
        run_id = create_run(session, plan.attempts, options)
    return NewRun(
        run_id, mode, plan.specs(limits), len(plan.attempts), plan.duplicates, max_tries, plan.notes
    )


def start_local(
    engine: Engine, paths: Sequence[str], request: Request, jobs: int | None, argv: Sequence[str]
) -> tuple[NewRun, int]:
    """Plan paths and create a local run; return it with the number of processes to solve it with."""
    jobs = check_jobs(jobs)
    plan = plan_run(paths, request.kind, request.heuristic, request.max_file_bytes, request.solvers)
    run = create(engine, plan, request, "local", argv, concurrency=jobs, extra={"paths": list(paths)})
    return run, jobs


def solve_local(
    engine: Engine,
    run: NewRun,
    jobs: int,
    on_result: Callable[[str, Outcome], None] | None = None,
    chunk_size: int | None = None,
) -> None:
    """Solve the run's pending attempts on a local process pool, recording each result.

    Attempts go to the pool in chunks of chunk_size (None: chosen like
    submit's, from past times or level sizes). On Ctrl-C the results so far
    are kept, the attempts not run are marked cancelled, and Interrupted is raised.
    """
    if not run.specs:
        return
    if chunk_size is None:
        with session_scope(engine) as session:
            chunk_size = choose_chunk_size(session, run.specs)
        # Every process needs a few chunks, or one slow chunk decides the run's end.
        chunk_size = max(1, min(chunk_size, -(-len(run.specs) // (jobs * 4))))
    note_programs_run(engine, run.id, f"local@{socket.gethostname()}", [spec for _, _, spec in run.specs])
    try:
        run_local(engine, run.id, run.specs, jobs, chunk_size, on_result)
    except KeyboardInterrupt:
        with session_scope(engine) as session:
            n = cancel_pending(session, run.id, "cancelled: the local run was interrupted")
        raise Interrupted(run.id, n) from None


def start_distributed(
    engine: Engine, app: Any, paths: Sequence[str], request: Request, chunk_size: int, argv: Sequence[str]
) -> tuple[NewRun, Sent]:
    """Check the limits and the broker, plan paths, create a distributed run and send it."""
    check_distributed(request.limits, chunk_size)
    check_broker(app)
    plan = plan_run(paths, request.kind, request.heuristic, request.max_file_bytes, request.solvers)
    run = create(engine, plan, request, "distributed", argv, extra={"paths": list(paths)})
    return run, send(engine, app, run, chunk_size)


def send(engine: Engine, app: Any, run: NewRun, chunk_size: int = 0) -> Sent:
    """Enqueue the run's pending attempts hardest first in tasks of chunk_size (0: chosen); mark them sent."""
    with session_scope(engine) as session:
        # Longest expected first: the overnight makespan is set by the hardest levels started last.
        specs = hardest_first(session, run.id, run.specs)
        chunk_size = chunk_size or choose_chunk_size(session, specs)
    started = time.monotonic()
    tasks = enqueue(app, run.id, specs, run.max_tries, chunk_size) if specs else 0
    with session_scope(engine) as session:
        mark_sent(session, run.id)  # the scheduler's grace for queued attempts counts from here
    return Sent(tasks, chunk_size, time.monotonic() - started)


@dataclass(frozen=True)
class RerunRequest:
    """A rerun as asked: which parent attempts, and the options given (None: the parent's)."""

    parent: str
    statuses: tuple[str, ...]
    kind: str | None = None
    heuristic: str | None = None
    time_limit: float | None = None  # 0 or less: none
    node_limit: int | None = None
    memory_limit: int | None = None
    label: str | None = None
    max_tries: int | None = None
    local: bool | None = None  # None: where the parent ran
    jobs: int | None = None
    solvers: Mapping[str, ExternalSolver] = field(default_factory=dict)  # declared now (over the parent's)

    def checked_statuses(self) -> list[str]:
        """Return the statuses asked for; raise OptionError for none or one that is not final."""
        wanted = [s.strip() for s in self.statuses if s.strip()]
        valid = {s.value for s in Status if s.final}
        bad = [s for s in wanted if s not in valid]
        if not wanted or bad:
            choices = ", ".join(sorted(valid))
            raise OptionError(
                "--status", f"unknown final status {', '.join(bad) or '(none)'}; choose from {choices}"
            )
        return wanted

    def limits(self, parent: Limits) -> Limits:
        """Return the given limits over the parent's; raise OptionError as solve and submit would."""
        given = limits_from_options(self.time_limit, self.node_limit, self.memory_limit)
        return Limits(
            parent.time_limit if self.time_limit is None else given.time_limit,
            parent.node_limit if self.node_limit is None else given.node_limit,
            parent.memory_limit_mb if self.memory_limit is None else given.memory_limit_mb,
        )


def start_rerun(
    engine: Engine, rerun: RerunRequest, argv: Sequence[str], app: Any
) -> tuple[NewRun, int | None]:
    """Create a child run of the parent's attempts in the statuses; return it and its local processes.

    Unset heuristic, limits and max tries are the parent's; it runs where the
    parent did unless rerun.local says otherwise (processes: None when
    distributed). A distributed rerun is checked like a submit (limits,
    broker) before anything is created. Raise PlanError when no attempt matches.
    """
    wanted = rerun.checked_statuses()
    with session_scope(engine) as session:
        parent = resolve_run(session, rerun.parent)
        rows = attempts_to_rerun(session, parent.id, wanted, rerun.kind)
        if not rows:
            raise PlanError(f"run {parent.id} has no attempt with status {', '.join(wanted)}" + (
                f" of kind {rerun.kind}" if rerun.kind else ""))  # fmt: skip
        levels = [_level_of(attempt, row) for attempt, row in rows]
        mode = parent.mode if rerun.local is None else ("local" if rerun.local else "distributed")
        request = Request(
            kind=rerun.kind or parent.kind,
            # The parent's heuristic, unless it named a kind's default: then each kind's default again.
            heuristic=rerun.heuristic or parent.heuristic,
            limits=rerun.limits(Limits(parent.time_limit, parent.node_limit, parent.memory_limit_mb)),
            label=rerun.label,
            max_tries=rerun.max_tries or parent.max_tries,
        )
        parent_id = parent.id
        # The parent's programs as it recorded them, unless declared again now.
        solvers = {**declared_in(recorded(parent, "solvers")), **rerun.solvers}
    processes = check_jobs(rerun.jobs) if mode == "local" else None
    if mode == "distributed":
        check_distributed(request.limits)
        check_broker(app)
    plan = plan_levels(levels, request.heuristic, solvers=solvers)
    extra = {"rerun_of": parent_id, "statuses": wanted}
    return create(engine, plan, request, mode, argv, processes, parent_id, extra), processes


def _level_of(attempt: Any, row: Any) -> Level:
    """Return the Level of a parent's attempt; an invalid one keeps its message."""
    data = json.loads(row.data)
    if attempt.status == Status.INVALID.value:
        return Level(attempt.name, row.kind, data, row.hash, row.size, attempt.message or "invalid level")
    return Level(attempt.name, row.kind, data, row.hash, row.size)


def cancel(engine: Engine, ref: str) -> tuple[int, int]:
    """Cancel the run named ref: its queued attempts become cancelled. Return (run id, how many)."""
    with session_scope(engine) as session:
        run = resolve_run(session, ref)
        return run.id, cancel_pending(session, run.id, "cancelled by the user before it ran")
