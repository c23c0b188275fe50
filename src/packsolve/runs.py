"""Starting runs: the only code that creates one, for solve, submit and rerun alike.

Every entry point plans through planning.py, creates the run here (create),
then either solves it on the local pool (solve_local) or sends it to the
broker (send); a run stopped early is resumed into itself (resumption.py).
The CLI only parses options and prints.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from packsolve.attempt import StopReason, tries_cap
from packsolve.db.catalog import claim_label
from packsolve.db.history import settled_before
from packsolve.db.local_runs import stop_pending
from packsolve.db.runs import (
    RunOptions,
    attempts_to_rerun,
    cancel_pending,
    create_run,
    finish_run_if_done,
    mark_sent,
    mark_unsent,
    resolve_run,
)
from packsolve.db.session import session_scope
from packsolve.db.workers import deployment_id, live_workers
from packsolve.errors import BrokerError, DatabaseError, OptionError, PlanError
from packsolve.execution import Limits, cgroups, preparing
from packsolve.execution.relative import RelativeLimits
from packsolve.execution.spec import PendingAttempt
from packsolve.external.provenance import note_programs_run
from packsolve.figures.failures import in_group
from packsolve.figures.finished import make
from packsolve.levels import Level
from packsolve.localpool import LocalWork, Stopped, run_local
from packsolve.masking import mask_argv, mask_text
from packsolve.outcome import Outcome, Status
from packsolve.planning import (
    Plan,
    Reading,
    check_distributed,
    choose_chunk_size,
    hardest_first,
    plan_cells,
    plan_levels,
    plan_request,
    relative_limits,
    run_programs,
    tapered_chunks,
)
from packsolve.request import SHARE, HeuristicMatrix, LocalPool, Request, RerunRequest, SplitAfter, check_jobs
from packsolve.runstate import RunMode
from packsolve.settings import Settings
from packsolve.split_plans import NightShare, night_share, plan_splitting

if TYPE_CHECKING:  # Celery loads with a distributed run only, not for a local solve
    from packsolve.queue.app import Cluster


@dataclass(frozen=True)
class Carried:
    """Levels left out by --skip-solved: decided before with the same heuristic, and in which runs."""

    levels: int = 0
    runs: tuple[int, ...] = ()
    attempts: int = 0  # as many as levels, unless a level is asked with several heuristics (a matrix)

    @property
    def counted(self) -> str:
        """Return what was left out, as a user reads it: "3 level(s)", or "5 attempt(s) of 3 level(s)"."""
        if self.attempts > self.levels:
            return f"{self.attempts} attempt(s) of {self.levels} level(s)"
        return f"{self.levels} level(s)"

    def recorded(self) -> dict[str, Any]:
        """Return what the run's options keep of it (options.carried_over)."""
        return {"levels": self.levels, "attempts": self.attempts, "runs": list(self.runs)}


@dataclass(frozen=True)
class NewRun:
    """A run just created: its id, its pending attempts in pack order, and what was skipped."""

    id: int
    mode: RunMode
    pending: list[PendingAttempt]
    total: int  # attempts, invalid levels included
    duplicates: int
    max_tries: int
    notes: list[str]  # what the user should know about the plan (a heuristic not applied to a kind)
    reading: Reading = field(default_factory=Reading)  # files skipped, duplicates, other kinds
    carried: Carried = field(default_factory=Carried)
    label_moved_from: int | None = None  # the run --move-label took the label from
    resumed: bool = False  # an earlier run's attempts without a result, run again
    sizes: dict[str, int] = field(default_factory=dict, repr=False)  # by level hash, where the plan had them
    split_after: float | None = None  # a local run's --split-after: seconds (split_plans.choose_splits)

    @property
    def invalid(self) -> int:
        """Return how many of the run's levels could not be read (0 for a resumed run: not counted)."""
        return 0 if self.resumed else self.total - len(self.pending)


class NothingToRun(Exception):
    """Nothing is left to run (every level carried over, or resumed already); not an error."""


@dataclass(frozen=True)
class Sent:
    """What send() put on the queue."""

    tasks: int
    chunk_size: int
    seconds: float


class SendFailed(BrokerError):
    """A submit (or resume) could not send every task: the run is kept, marked unsent."""


class SendFailedDatabase(DatabaseError):
    """A submit (or resume) lost its database while sending: the run is kept, marked unsent."""


class Interrupted(Exception):
    """A local run stopped early: Ctrl-C (interrupted) or `packsolve cancel` (cancelled).

    Its attempts without a result were marked cancelled and the run finished;
    `packsolve resume RUN` runs them into the same run.
    """

    def __init__(self, run_id: int, cancelled: int, reason: StopReason = StopReason.INTERRUPTED) -> None:
        super().__init__(f"run {run_id} {reason}: {cancelled} level(s) have no result (marked cancelled)")
        self.run_id = run_id
        self.cancelled = cancelled
        self.reason = reason


@dataclass(frozen=True)
class Origin:
    """Where a new run comes from: the command that asked for it, and where it runs."""

    mode: RunMode
    argv: Sequence[str] = ()  # the command line as given (recorded with passwords masked)
    options: Mapping[str, Any] = field(default_factory=dict)  # more to record: broker, rerun_of, statuses...
    concurrency: int | None = None  # local processes
    parent_id: int | None = None  # the run it reruns
    carried: Carried = Carried()  # levels --skip-solved left out
    # A local run solved by a process the caller starts (`packsolve resume RUN`), not by this one.
    detached: bool = False


def create(engine: Engine, plan: Plan, request: Request, origin: Origin) -> NewRun:
    """Create the run's rows (every attempt exists from here on) and return it; the one way to make a run.

    The label is claimed first (OptionError if another run has it, unless the
    request moves it). A run with nothing to run (every level invalid) is finished at once.
    """
    mode = origin.mode
    max_tries = tries_cap(request.max_tries)
    limits = request.limits
    # The command line as given, secrets masked (packsolve.masking): provenance, never a secret.
    options: dict[str, Any] = {
        "argv": mask_argv(origin.argv),
        **({"paths": list(plan.paths)} if plan.paths else {}),
        # How this machine measures and limits a local run's attempts (a distributed run's: each worker's).
        **({"measurement": cgroups.mode()} if mode == RunMode.LOCAL else {}),
        # --time-limit 3x: the spec (each attempt has its own limit, the run's columns the largest).
        **({"relative": request.relative.to_options()} if request.relative else {}),
    }
    options.update(origin.options)
    notes = list(plan.notes)
    if "split_after" in options and mode == RunMode.LOCAL and (origin.concurrency or 1) < 2:
        options.pop("split_after")  # nothing to record: a resumed run splits nothing either
        notes.append(
            "--split-after splits nothing on one process: a split level's parts need 2 or more (-j 2)"
        )
    elif origin.options.get("split_after") == SHARE:
        share = _night_share(engine, plan, origin)
        options.update(split_after=round(share.seconds, 3), split_share=share.recorded())
        notes.append(share.said())
    row = RunOptions(
        mode=mode,
        heuristic=str(HeuristicMatrix.parse(request.heuristic)),
        kind=request.kind,
        time_limit=limits.time_limit,
        node_limit=limits.node_limit,
        memory_limit_mb=limits.memory_limit_mb,
        cpu_limit=limits.cpu_limit,
        concurrency=origin.concurrency,
        max_tries=max_tries if mode == RunMode.DISTRIBUTED else request.max_tries,
        label=request.label,
        parent_id=origin.parent_id,
        options=options,
        # So resume can tell whether a local run is still going.
        pid=os.getpid() if mode == RunMode.LOCAL and not origin.detached else None,
        # The kinds used (source, version) and the external programs' declarations (they travel in tasks).
        provenance=plan.provenance(),
    )
    try:
        with session_scope(engine) as session:
            moved_from = claim_label(session, request.label, request.move_label)
            run_id = create_run(session, plan.attempts, row)
            finish_run_if_done(session, run_id)
    except IntegrityError:
        # Another run took the label between the check and the insert.
        raise OptionError(
            "--label", f"{request.label!r} was just taken by another run; choose another"
        ) from None
    return NewRun(
        run_id,
        mode,
        plan.pending(limits),
        len(plan.attempts),
        plan.duplicates,
        max_tries,
        notes,
        plan.reading,
        origin.carried,
        moved_from,
        sizes={p.level.hash: p.level.size for p in plan.attempts},
        split_after=options.get("split_after"),
    )


def _night_share(engine: Engine, plan: Plan, origin: Origin) -> NightShare:
    """Return --split-after share worked out for the plan (split_plans.night_share; its seconds are
    recorded with the run, so a resumed run splits as it began). The processes are the local run's, or
    a distributed run's live worker processes when it is sent."""
    keys = [(p.level.hash, p.level.kind, p.heuristic) for p in plan.attempts if p.level.valid]
    with session_scope(engine) as session:
        processes = origin.concurrency or len(live_workers(session))
        if not processes:
            raise OptionError(
                "--split-after",
                "share divides the night among the live worker processes, and none is live: start the "
                "workers first, or give a duration (e.g. --split-after 10m)",
            )
        share = night_share(session, keys, processes)
    if share is None:
        raise OptionError(
            "--split-after",
            f"share needs earlier attempts of the run's levels to know the night's length, and none of its "
            f"{len(keys)} attempt(s) has one: give a duration (e.g. --split-after 10m)",
        )
    return share


def start_local(
    engine: Engine,
    plan: Plan,
    request: Request,
    pool: LocalPool,
    argv: Sequence[str],
    skip_solved: bool = False,
) -> NewRun:
    """Create a local run of the plan (plan_request's) for pool (recorded with the run); return it.

    skip_solved leaves out levels already decided (solved, or proved to have
    none) with the same heuristic in an earlier run; raise NothingToRun if that leaves none.
    """
    carried = Carried()
    options: dict[str, Any] = {}
    if pool.cpus_per_attempt is not None:
        options["cpus_per_attempt"] = pool.cpus_per_attempt
    if pool.split_after is not None:
        options["split_after"] = pool.split_after
    if skip_solved:
        plan, carried = _without_settled(engine, plan)
        options["carried_over"] = carried.recorded()
    plan, request = with_relative_limits(engine, plan, request)
    origin = Origin(RunMode.LOCAL, argv, options, concurrency=pool.processes, carried=carried)
    return create(engine, plan, request, origin)


def with_relative_limits(engine: Engine, plan: Plan, request: Request) -> tuple[Plan, Request]:
    """Return plan and request with each attempt's own limit of a relative --time-limit or --cpu-limit
    (planning.relative_limits: OptionError if a level has no history); unchanged without one."""
    if not request.relative:
        return plan, request
    with session_scope(engine) as session:
        return relative_limits(session, plan, request)


def _without_settled(engine: Engine, plan: Plan) -> tuple[Plan, Carried]:
    """Return the plan without the levels decided before with the same heuristic, and what was carried."""
    with session_scope(engine) as session:
        settled = settled_before(session, [p.key for p in plan.attempts if p.level.valid])
    if not settled:
        return plan, Carried()
    kept = [p for p in plan.attempts if p.key not in settled or not p.level.valid]
    levels = len({h for h, _ in settled})
    carried = Carried(levels, tuple(sorted(set(settled.values()))), len(settled))
    if not kept:
        runs = ", ".join(str(r) for r in carried.runs)
        raise NothingToRun(
            f"all {carried.counted} were decided before with the same heuristic (run(s) {runs}): "
            "nothing to run (leave out --skip-solved to run them again)"
        )
    return replace(plan, attempts=kept), carried


def prepare_local(engine: Engine, run: NewRun, say: Callable[[str], None]) -> None:
    """Do what the run's pending attempts' heuristics need once per machine (tables to build), here,
    before the pool starts, outside every attempt's limits; say(line) tells what takes a while.

    What cannot be prepared ends its attempts as errors saying why (execution.preparing). On Ctrl-C
    (or SIGTERM) meanwhile, the pending attempts are marked cancelled, the run is finished, and
    Interrupted is raised, as solve_local does.
    """
    try:
        with _terminate_interrupts():
            preparing.prepare((p.spec for p in run.pending), say)
    except KeyboardInterrupt:
        with session_scope(engine) as session:
            n = stop_pending(session, run.id, [], "cancelled: the local run was interrupted")
        raise Interrupted(run.id, n, StopReason.INTERRUPTED) from None


def solve_local(
    engine: Engine,
    run: NewRun,
    jobs: int,
    settings: Settings,
    on_result: Callable[[str, Outcome], None] | None = None,
    chunk_size: int | None = None,
) -> None:
    """Solve the run's pending attempts on a local process pool, recording each result (as settings say).

    Attempts go to the pool longest expected first, as submit sends them (planning.hardest_first), in
    chunks of chunk_size (None: chosen like submit's, from past times or level sizes, and then one
    expected to take half a second or more in a chunk of its own). On Ctrl-C, or once `packsolve
    cancel` marked the run, the pool stops at once: results so far are kept,
    the attempts with none are marked cancelled (saying whether they had
    started), the run is finished, and Interrupted is raised.
    """
    if not run.pending:
        return
    note_programs_run(engine, run.id, f"local@{socket.gethostname()}", [p.spec for p in run.pending])
    try:
        with _terminate_interrupts():
            run_local(engine, run.id, _local_work(engine, run, jobs, chunk_size), jobs, settings, on_result)
    except Stopped as stop:
        why = (
            "cancelled by the user"
            if stop.reason is StopReason.CANCELLED
            else "cancelled: the local run was interrupted"
        )
        with session_scope(engine) as session:
            n = stop_pending(session, run.id, stop.in_flight, why)
        raise Interrupted(run.id, n, stop.reason) from None
    else:
        _snapshot(engine, run.id)


def _local_work(engine: Engine, run: NewRun, jobs: int, chunk_size: int | None) -> LocalWork:
    """Return the run's pending attempts longest expected first (with no history: in the pack's
    order) in chunks of chunk_size (None: chosen, and a long one alone: planning.Ordered), the last
    ones smaller (tapered_chunks), but those its --split-after splits (split_plans.plan_splitting:
    run as parts the processes share); a probe runs in its chunk under --split-after as its wall
    limit, and is split if it passes it."""
    with session_scope(engine) as session:
        # Longest expected first: a night whose hardest levels start last ends with them, alone. A
        # first night keeps the pack's order: with no history no level is known to be long enough to
        # go alone, and chunked by count the biggest would share the first chunk, in one process.
        ordered = hardest_first(session, run.id, run.pending, run.sizes or None)
        attempts = ordered.attempts if ordered.by_history else run.pending
        alone = ordered.alone if chunk_size is None else frozenset()  # a size given is kept as given
        if chunk_size is None:
            # Every process needs a few chunks, or one slow chunk decides the run's end.
            chosen = choose_chunk_size(session, run.pending)
            chunk_size = max(1, min(chosen, -(-len(run.pending) // (max(1, jobs) * 4))))
        if run.split_after is None or jobs < 2:
            return LocalWork(tapered_chunks(attempts, chunk_size, jobs, alone))
        splitting = plan_splitting(session, run.pending, run.split_after, jobs)
    split = splitting.split_keys
    whole = [
        replace(p, spec=splitting.probes[p.key].spec()) if p.key in splitting.probes else p
        for p in attempts
        if p.key not in split
    ]
    return LocalWork(tapered_chunks(whole, chunk_size, jobs, alone), splitting.splits, splitting.probes)


@contextlib.contextmanager
def _terminate_interrupts() -> Iterator[None]:
    """Within: SIGTERM raises KeyboardInterrupt as Ctrl-C does, and Ctrl-C does whatever this process
    inherited (a parent that ignored or blocked SIGINT); after: the handlers and the mask as they were."""
    stops = {signal.SIGINT, signal.SIGTERM}
    previous = {sig: signal.getsignal(sig) for sig in stops}
    mask: set[int | signal.Signals] | None = None
    if threading.current_thread() is threading.main_thread():  # else the caller handles signals
        # `kill PID` (a service manager's stop) ends the run as Ctrl-C does, not half-written.
        signal.signal(signal.SIGTERM, _interrupt)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        mask = signal.pthread_sigmask(signal.SIG_UNBLOCK, stops)
    try:
        yield
    finally:
        if mask is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            for sig, handler in previous.items():
                if handler is not None and signal.getsignal(sig) != handler:
                    signal.signal(sig, handler)


def _snapshot(engine: Engine, run_id: int) -> None:
    """Make what readers keep of the run once it finished (figures.finished), after the solve's last write.

    A solve stopped early leaves them to the first reader, as does a failure here: the results are written.
    """
    with contextlib.suppress(SQLAlchemyError), session_scope(engine) as session:
        make(session, run_id)


def _interrupt(signum: int, _frame: Any) -> None:
    """Turn SIGTERM into the KeyboardInterrupt a Ctrl-C raises."""
    raise KeyboardInterrupt(f"signal {signum}")


@dataclass(frozen=True)
class Sending:
    """How submit sends a run: levels per task (0: chosen), whether to skip the (level, heuristic)
    attempts decided before (as start_local's skip_solved: NothingToRun if that leaves none), and
    --split-after (seconds, or SHARE: workers split a level expected to take longer; None: none is split)."""

    chunk_size: int = 0
    skip_solved: bool = False
    split_after: SplitAfter | None = None


def start_distributed(
    open_db: Callable[[], Engine],
    cluster: Cluster,
    paths: Sequence[str],
    request: Request,
    sending: Sending,
    argv: Sequence[str],
) -> tuple[NewRun, Sent]:
    """Check the limits and the broker, plan paths, create a distributed run and send it.

    sending: how (see Sending). The database is opened (open_db(), which may create it) only once
    the checks and the plan passed: an unreachable broker or a bad level leaves no database file behind.
    """
    chunk_size, skip_solved = sending.chunk_size, sending.skip_solved
    check_distributed(request.limits, cluster.visibility_timeout, chunk_size)
    cluster.check_reachable()
    plan = plan_request(paths, request)
    options: dict[str, Any] = {"broker": cluster.shown_broker, "queue": cluster.queue}  # status, `workers`
    if sending.split_after is not None:  # read by the workers (queue.consumer: which levels they split)
        options["split_after"] = sending.split_after
    engine = open_db()
    carried = Carried()
    if skip_solved:
        plan, carried = _without_settled(engine, plan)
        options["carried_over"] = carried.recorded()
    if request.relative:  # the limits known only now, from the levels' history, are checked as above
        plan, request = with_relative_limits(engine, plan, request)
        check_distributed(request.limits, cluster.visibility_timeout, chunk_size)
    cluster.check_signing(engine)
    run = create(engine, plan, request, Origin(RunMode.DISTRIBUTED, argv, options, carried=carried))
    return run, send(engine, cluster, run, chunk_size)


def send(engine: Engine, cluster: Cluster, run: NewRun, chunk_size: int = 0) -> Sent:
    """Enqueue the run's pending attempts hardest first in tasks of chunk_size (0: chosen, and then one
    expected to take half a second or more in a task of its own: planning.Ordered); mark them sent.

    If the broker or the database fails meanwhile, the run stays, unsent (the
    scheduler leaves it alone, `runs` shows it), and SendFailed (or
    SendFailedDatabase) says how to resume or delete it: never half-sent and
    silently run later, never `sending` for good.
    """
    try:
        with session_scope(engine) as session:
            # Longest expected first: the overnight makespan is set by the hardest levels started last.
            ordered = hardest_first(session, run.id, run.pending, run.sizes or None)
            pending = ordered.attempts
            visibility = cluster.visibility_timeout
            alone = frozenset() if chunk_size else ordered.alone  # a size given is kept as given
            chunk_size = chunk_size or choose_chunk_size(session, pending, visibility_timeout=visibility)
            deployment = deployment_id(session)
    except SQLAlchemyError as exc:
        raise _unsent(engine, cluster, run.id, exc, database=True) from None
    started = time.monotonic()
    try:
        tasks = cluster.send(run.id, pending, run.max_tries, chunk_size, deployment, alone) if pending else 0
    except Exception as exc:
        raise _unsent(engine, cluster, run.id, exc, database=False) from None
    try:
        with session_scope(engine) as session:
            mark_sent(session, run.id)  # from here the scheduler looks after the run
    except SQLAlchemyError as exc:
        raise _unsent(engine, cluster, run.id, exc, database=True) from None
    return Sent(tasks, chunk_size, time.monotonic() - started)


def _unsent(
    engine: Engine, cluster: Cluster, run_id: int, exc: Exception, database: bool
) -> BrokerError | DatabaseError:
    """Record the run unsent with the reason (retrying while the database is away, for the cluster's
    unsent_patience); return what to raise."""
    first = "".join(mask_text(str(getattr(exc, "orig", None) or exc)).splitlines()[:1]) or type(exc).__name__
    why = f"the database connection was lost: {first}" if database else first
    deadline = time.monotonic() + cluster.settings.unsent_patience
    recorded = False
    while not recorded:
        try:
            with session_scope(engine) as session:
                mark_unsent(session, run_id, why)
            recorded = True
        except SQLAlchemyError:
            if time.monotonic() > deadline:
                break
            time.sleep(1.0)
    back = "the database" if database else "the broker"
    shown = "it waits, unsent" if recorded else "`packsolve runs` shows it `sending` until then"
    message = (
        f"run {run_id} was not sent in full ({why}): {shown}; once {back} is back, "
        f"`packsolve resume {run_id}` sends it, or `packsolve runs delete {run_id}` removes it"
    )
    return SendFailedDatabase(message) if database else SendFailed(message)


def start_rerun(
    engine: Engine, rerun: RerunRequest, argv: Sequence[str], cluster: Cluster, detached: bool = False
) -> tuple[NewRun, int | None]:
    """Create a child run of the parent's attempts in the statuses; return it and its local processes.

    Unset heuristic, limits and max tries are the parent's; it runs where the
    parent did unless rerun.local says otherwise (processes: None when
    distributed). A distributed rerun is checked like a submit (limits,
    broker) before anything is created. Raise PlanError when no attempt matches.
    detached: a local child is solved by a process the caller starts (`packsolve resume CHILD`,
    the dashboard's way), so this process is not recorded as solving it.
    """
    wanted = rerun.check()
    with session_scope(engine) as session:
        parent = resolve_run(session, rerun.parent)
        rows = attempts_to_rerun(session, parent.id, wanted, rerun.kind)
        if rerun.message:
            rows = [(a, lv) for a, lv in rows if rerun.message in (a.message or "")]
        if rerun.group:
            rows = [(a, lv) for a, lv in rows if in_group(rerun.group, a.status, a.message, a.name)]
        if not rows:
            of_kind = f" of kind {rerun.kind}" if rerun.kind else ""
            holding = f" whose message holds {rerun.message!r}" if rerun.message else ""
            grouped = f" in failure group {rerun.group} (`packsolve report failures {parent.id}`)"
            raise PlanError(
                f"run {parent.id} has no attempt with status {', '.join(wanted)}{of_kind}{holding}"
                + (grouped if rerun.group else "")
            )
        levels = [_level_of(attempt, row) for attempt, row in rows]
        # A matrix parent (a level tried with several heuristics) reruns the cells that failed, each with
        # its own heuristic, unless --heuristic says another.
        cells = (
            [a.heuristic for a, _ in rows]
            if rerun.heuristic is None and HeuristicMatrix.parse(parent.heuristic).is_matrix
            else None
        )
        mode = parent.mode if rerun.local is None else (RunMode.LOCAL if rerun.local else RunMode.DISTRIBUTED)
        request = Request(
            kind=rerun.kind or parent.kind,
            # The parent's heuristic, unless it named a kind's default: then each kind's default again.
            heuristic=rerun.heuristic or parent.heuristic,
            limits=rerun.limits(Limits.of_run(parent)),
            label=rerun.label,
            max_tries=rerun.max_tries or parent.max_tries,
            move_label=rerun.move_label,
            # Nx given now, or the parent's Nx where no limit is given (each level's history again).
            relative=rerun.relative(RelativeLimits.from_options((parent.options or {}).get("relative"))),
        )
        parent_id = parent.id
        # The parent's programs as it recorded them, unless declared again now.
        solvers = run_programs(parent, rerun.solvers)
    processes = check_jobs(rerun.jobs, rerun.cpus_per_attempt) if mode == RunMode.LOCAL else None
    if cells is None:
        # Each level once (a matrix parent failed some levels under several heuristics).
        plan = plan_levels(list({lv.hash: lv for lv in levels}.values()), request.heuristic, solvers=solvers)
    else:
        plan = plan_cells(levels, cells, solvers)
    plan, request = with_relative_limits(engine, plan, request)
    if mode == RunMode.DISTRIBUTED:
        check_distributed(request.limits, cluster.visibility_timeout)
        cluster.check_reachable()
        cluster.check_signing(engine)
    options: dict[str, Any] = {"rerun_of": parent_id, "statuses": wanted}
    if mode == RunMode.LOCAL and rerun.cpus_per_attempt is not None:
        options["cpus_per_attempt"] = rerun.cpus_per_attempt
    if rerun.split_after is not None:
        options["split_after"] = rerun.split_after
    if mode == RunMode.DISTRIBUTED:
        options["broker"], options["queue"] = cluster.shown_broker, cluster.queue
    origin = Origin(mode, argv, options, processes, parent_id, detached=detached)
    return create(engine, plan, request, origin), processes


def _level_of(attempt: Any, row: Any) -> Level:
    """Return the Level of a parent's attempt; an invalid one keeps its message."""
    data = json.loads(row.data)
    if attempt.status == Status.INVALID:
        return Level(attempt.name, row.kind, data, row.hash, row.size, attempt.message or "invalid level")
    return Level(attempt.name, row.kind, data, row.hash, row.size)


@dataclass(frozen=True)
class CancelResult:
    """What cancel did: the run, how many queued attempts it cancelled, whether it had finished already."""

    run_id: int
    mode: RunMode
    cancelled: int
    finished_before: bool


def cancel(engine: Engine, ref: str) -> CancelResult:
    """Cancel the run named ref: its queued attempts become cancelled (a finished run is left alone).

    A local run's own process sees the run cancelled within a second, stops
    its solvers and writes what finished before.
    """
    with session_scope(engine) as session:
        run = resolve_run(session, ref)
        if run.finished_at is not None:
            return CancelResult(run.id, run.mode, 0, True)
        n = cancel_pending(session, run.id, "cancelled by the user before it ran")
        return CancelResult(run.id, run.mode, n, False)
