"""Commands that start, resume or stop runs: solve, submit, rerun, resume, cancel (the work is in runs.py)."""

from __future__ import annotations

import sys
from typing import Any

import click

from packsolve.bounds import COUNT, TIME_LIMIT_S, Range
from packsolve.cli.durations import RUN_LIMIT, SplitAfterType, duration_within
from packsolve.cli.group import Invocation
from packsolve.cli.notes import print_plan_notes
from packsolve.cli.notify import notify, notify_options
from packsolve.cli.options import (
    cpus_per_attempt_option,
    destinations,
    emit,
    err_console,
    format_option,
    print_summary,
    run_options,
    run_request,
    solvers_option,
    with_cluster,
    with_database,
    within,
)
from packsolve.cli.progress import DEFAULT_EVERY_S, solve_showing_progress
from packsolve.cli.verdict import exit_code, fail_on_option, wait_fail_on_option, wait_for_end, warning_of
from packsolve.request import SplitAfter
from packsolve.runstate import RunMode


def split_after_option(fn: Any) -> Any:
    """--split-after of the commands that solve (solve, submit, rerun): which levels run as parts."""
    return click.option(
        "--split-after",
        type=SplitAfterType(Range(0.001, TIME_LIMIT_S.high, real=TIME_LIMIT_S.real)),
        default=None,
        help="Split a level expected (from its earlier attempts with the heuristic) to take longer than "
        "this into parts the processes (or workers) share, where its kind can split it; a level without "
        "history is split once a first attempt runs this long. share: each process's share of the "
        "night's expected time, 10 s at least (docs/splitting.md).",
    )(fn)


def progress_options(fn: Any) -> Any:
    """Options of every command that solves locally: quiet, and how often to print progress to a log."""
    fn = click.option(
        "--progress-every",
        type=duration_within(TIME_LIMIT_S, low=0.1),
        default=DEFAULT_EVERY_S,
        show_default=True,
        help="Seconds between progress lines when stderr is not a terminal (a log).",
    )(fn)
    return click.option("--quiet", "-q", is_flag=True, help="No progress bar or lines.")(fn)


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@run_options
@click.option(
    "--jobs", "-j", type=int, default=None, help="Worker processes, at least 1 [default: one per core]."
)
@cpus_per_attempt_option
@click.option(
    "--skip-solved",
    is_flag=True,
    help="Leave out levels already solved (or proved unsolvable) with the same heuristic in an earlier run.",
)
@split_after_option
@progress_options
@fail_on_option
@notify_options
@format_option
@with_database("create")
def solve(
    invocation: Invocation,
    paths: tuple[str, ...],
    jobs: int | None,
    skip_solved: bool,
    split_after: SplitAfter | None,
    quiet: bool,
    progress_every: float,
    fail_on: tuple[str, ...],
    notify_command: str | None,
    notify_url: str | None,
    fmt: str,
    **opts: Any,
):
    """Solve every level under PATHS on a local process pool; results go to the database.

    Ctrl-C, or `packsolve cancel RUN` from elsewhere, stops it within a second:
    results so far are kept and `packsolve resume RUN` runs the rest.
    """
    from packsolve import runs
    from packsolve.planning import check_paths, plan_request
    from packsolve.request import LocalPool

    request = run_request(opts)
    # Before the database is touched: a typo costs nothing.
    pool = LocalPool.checked(jobs, invocation.settings.cpus_per_attempt, split_after)
    check_paths(paths)
    plan = plan_request(paths, request)  # a heuristic typo is refused before a database is made
    engine = invocation.engine
    jobs = pool.processes
    try:
        run = runs.start_local(engine, plan, request, pool, sys.argv[1:], skip_solved)
    except runs.NothingToRun as exc:
        err_console.print(str(exc), highlight=False, markup=False, soft_wrap=True)
        return
    print_plan_notes(run)
    what = counted(len(run.pending), len({p.level_hash for p in run.pending}))
    err_console.print(f"run {run.id}: {what} to run, {jobs} process(es)", highlight=False)
    _solve_and_summarise(
        engine, run, jobs, invocation, quiet, fmt, progress_every, fail_on, (notify_command, notify_url)
    )


def _solve_and_summarise(
    engine: Any,
    run: Any,
    jobs: int,
    invocation: Invocation,
    quiet: bool,
    fmt: str,
    every: float,
    fail_on: tuple[str, ...] = (),
    notify_to: tuple[str | None, str | None] = (None, None),
) -> None:
    """Solve a local run (its results written as the invocation's settings say), then print its summary;
    exit 130 after Ctrl-C, 1 after `packsolve cancel`.

    Once it is over, notify_to (command, URL) get its summary, and the exit is 1
    if a level ended in a status of fail_on (verdict.exit_code).
    """
    from packsolve import runs
    from packsolve.attempt import StopReason

    try:
        solve_showing_progress(engine, run, jobs, invocation.settings, quiet, every)
    except runs.Interrupted as exc:
        what = exc.reason.value if exc.reason is StopReason.INTERRUPTED else "cancelled by `packsolve cancel`"
        err_console.print(
            f"[yellow]run {exc.run_id} {what}: {exc.cancelled} level(s) have no result (marked cancelled); "
            f"`packsolve resume {exc.run_id}` runs them into the same run[/]",
            highlight=False,
            soft_wrap=True,
        )
        print_summary(engine, run.id, fmt)
        notify(engine, run.id, *notify_to)
        sys.exit(130 if exc.reason is StopReason.INTERRUPTED else 1)
    print_summary(engine, run.id, fmt)
    notify(engine, run.id, *notify_to)
    code = exit_code(engine, run.id, fail_on)
    if code:
        sys.exit(code)


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@run_options
@click.option(
    "--max-tries", type=int, default=None, help="Deliveries of a task before it counts as lost [default: 5]."
)
@click.option(
    "--chunk-size",
    type=within(COUNT),
    default=0,
    help="Levels per task (0: chosen from past times of the kind, else level sizes) [default: 0].",
)
@click.option(
    "--wait",
    is_flag=True,
    help="Return once the workers finished the run; exit 1 if a level ended in a --fail-on status "
    "(--notify waits too).",
)
@click.option(
    "--skip-solved",
    is_flag=True,
    help="Leave out levels already solved (or proved unsolvable) with the same heuristic in an earlier run.",
)
@split_after_option
@wait_fail_on_option
@notify_options
@with_cluster("create")
def submit(
    invocation: Invocation,
    paths: tuple[str, ...],
    max_tries: int | None,
    chunk_size: int,
    skip_solved: bool,
    split_after: SplitAfter | None,
    wait: bool,
    fail_on: tuple[str, ...],
    notify_command: str | None,
    notify_url: str | None,
    **opts,
):
    """Create a run for the levels under PATHS and enqueue them in tasks of one or more; print the run id."""
    from packsolve import runs
    from packsolve.planning import check_paths

    request = run_request(opts, max_tries)
    check_paths(paths)
    cluster = invocation.cluster
    try:
        run, sent = runs.start_distributed(
            lambda: invocation.engine,
            cluster,
            paths,
            request,
            runs.Sending(chunk_size, skip_solved, split_after),
            sys.argv[1:],
        )
    except runs.NothingToRun as exc:
        err_console.print(str(exc), highlight=False, markup=False, soft_wrap=True)
        return
    engine = invocation.engine  # the one start_distributed opened
    print_plan_notes(run)
    err_console.print(
        f"run {run.id}: {counted(run.total, len(run.sizes))}, {sent.tasks} task(s) of up to "
        f"{sent.chunk_size} enqueued in {sent.seconds:.2f} s, {run.invalid} invalid",
        highlight=False,
    )
    for line in destinations(invocation.settings):
        err_console.print(line, highlight=False, markup=False, soft_wrap=True)
    click.echo(run.id)
    if wait or notify_command or notify_url:
        sys.stdout.flush()  # the id is known before the night is over
        _await_and_notify(engine, run.id, (notify_command, notify_url))
        code = exit_code(engine, run.id, fail_on)
        if code:
            sys.exit(code)


def _await_and_notify(engine: Any, run_id: int, notify_to: tuple[str | None, str | None]) -> None:
    """Wait until the workers finished run_id, then send its summary to notify_to (command, URL)."""
    if any(notify_to):
        err_console.print(f"waiting for run {run_id} to end, to notify", highlight=False)
    wait_for_end(engine, run_id, say=warning_of(run_id))
    notify(engine, run_id, *notify_to)


@click.command()
@click.argument("run")
@click.option(
    "--status",
    "statuses",
    default=None,
    help="Comma-separated statuses of the parent's attempts to run again "
    "[default: the --group's, else timeout,error,lost,memout].",
)
@click.option(
    "--group",
    default=None,
    metavar="KEY",
    help="Exactly the attempts of this failure group (its key, as `report failures` prints it).",
)
@click.option("--kind", default=None, help="Only levels of this kind.")
@click.option("--message", default=None, help="Only attempts whose message holds this text (a substring).")
@click.option(
    "--heuristic",
    default=None,
    help="Solver to use, or per kind (sudoku=dlx,sliding=idastar) [default: parent's].",
)
@click.option(
    "--time-limit",
    type=RUN_LIMIT,
    default=None,
    help="Wall time per level (seconds, or 500ms, 2s, 1m, 1h), 0: none, or Nx: N times the level's "
    "expected time from history (3x: a timed-out level gets N times the limit it failed at; floor 1s, "
    "or 3x,10s) [default: parent's].",
)
@click.option(
    "--cpu-limit",
    type=RUN_LIMIT,
    default=None,
    help="CPU time per level of the solver's process tree, as --time-limit (Nx: of the expected CPU time), "
    "0: none [default: parent's].",
)
@click.option("--node-limit", type=int, default=None, help="Expanded nodes per level [default: parent's].")
@click.option("--memory-limit", type=int, default=None, help="MB per level [default: parent's].")
@click.option("--label", default=None, help="A name for the child run (unique, not all digits).")
@click.option("--move-label", is_flag=True, help="If another run has the --label, take it from that run.")
@click.option("--local", "local", flag_value=True, default=None, help="Run on a local process pool.")
@click.option("--distributed", "local", flag_value=False, help="Enqueue for Celery workers.")
@click.option("--jobs", "-j", type=int, default=None, help="Local processes [default: one per core].")
@cpus_per_attempt_option
@split_after_option
@click.option("--max-tries", type=int, default=None, help="Deliveries before lost [default: 5].")
@progress_options
@solvers_option
@format_option
@notify_options
@with_cluster("change")
def rerun(
    invocation: Invocation,
    run: str,
    statuses: str | None,
    local: bool | None,
    jobs: int | None,
    max_tries: int | None,
    quiet: bool,
    progress_every: float,
    fmt: str,
    notify_command: str | None,
    notify_url: str | None,
    **opts: Any,
):
    """Run RUN's failed levels again as a child run (linked to RUN); print the child's id.

    By default the child runs where the parent did (local or distributed) with
    the parent's heuristic and limits; change them to see what another
    heuristic or more time buys (`packsolve report compare RUN CHILD`).
    """
    from packsolve import runs
    from packsolve.external.declaration import load_solvers
    from packsolve.request import RerunRequest

    request = RerunRequest(
        parent=run,
        statuses=tuple(statuses.split(",")) if statuses is not None else (),
        kind=opts["kind"],
        heuristic=opts["heuristic"],
        time_limit=opts["time_limit"],
        cpu_limit=opts["cpu_limit"],
        node_limit=opts["node_limit"],
        memory_limit=opts["memory_limit"],
        label=opts["label"],
        max_tries=max_tries,
        local=local,
        jobs=jobs,
        cpus_per_attempt=invocation.settings.cpus_per_attempt,
        split_after=opts["split_after"],
        message=opts["message"],
        group=opts["group"],
        move_label=opts["move_label"],
        solvers=load_solvers(opts["solvers_file"]),
    )
    request.check()  # before the database is touched: a typo costs nothing
    engine = invocation.engine
    cluster = invocation.cluster  # connects only if the child is distributed
    child, processes = runs.start_rerun(engine, request, sys.argv[1:], cluster)
    print_plan_notes(child)
    notify_to = (notify_command, notify_url)
    if processes is not None:
        what = counted(child.total, len(child.sizes))
        err_console.print(f"run {child.id}: rerun of {run}, {what}, {processes} process(es)")
        # Progress goes to stderr whatever the format, as solve's does: stdout keeps its one document.
        _solve_and_summarise(
            engine, child, processes, invocation, quiet, fmt, progress_every, notify_to=notify_to
        )
        if fmt != "table":
            return  # the summary printed is the one document on stdout; it names the run
        click.echo(child.id)
        return
    sent = runs.send(engine, cluster, child)
    what = counted(child.total, len(child.sizes))
    err_console.print(f"run {child.id}: rerun of {run}, {what}, {sent.tasks} task(s) enqueued")
    if fmt != "table":  # one document, as the local rerun's summary is
        said = {"run": child.id, "rerun_of": run, "levels": len(child.sizes), "attempts": child.total}
        emit({**said, "tasks": sent.tasks}, fmt, str)
    else:
        click.echo(child.id)
    if any(notify_to):
        sys.stdout.flush()
        _await_and_notify(engine, child.id, notify_to)


@click.command()
@click.argument("run")
@click.option("--jobs", "-j", type=int, default=None, help="Local processes [default: the run's].")
@cpus_per_attempt_option
@progress_options
@solvers_option
@fail_on_option
@format_option
@notify_options
@with_cluster("change")
def resume(
    invocation: Invocation,
    run: str,
    jobs: int | None,
    quiet: bool,
    progress_every: float,
    fmt: str,
    notify_command: str | None,
    notify_url: str | None,
    solvers_file: str | None,
    fail_on: tuple[str, ...],
):
    """Run the levels of RUN that have no final result, into RUN itself.

    Those are the levels a Ctrl-C, a `packsolve cancel` or a crash left
    without a result (cancelled before or while they ran, or still queued); the
    run keeps its heuristics and limits, and the solver programs it recorded
    (declared again by --solvers or ./packsolve.toml, those win). Levels with a
    result are not run again. A distributed run whose submit stopped before sending every task (the
    broker went away) is sent again to the workers.
    """
    from packsolve import resumption, runs
    from packsolve.db.runs import resolve_run
    from packsolve.db.session import session_scope
    from packsolve.external.declaration import load_solvers
    from packsolve.report.provenance import cpus_per_attempt
    from packsolve.request import check_jobs

    pinned = invocation.settings.cpus_per_attempt
    if jobs is not None or pinned is not None:
        jobs = check_jobs(jobs, pinned)  # pinned: the processes follow, whatever the run had
    solvers = load_solvers(solvers_file)
    notify_to = (notify_command, notify_url)
    engine = invocation.engine
    with session_scope(engine) as session:
        found = resolve_run(session, run)
        mode, recorded = found.mode, cpus_per_attempt(found)
    if mode == RunMode.LOCAL and recorded is not None and recorded != pinned:
        # Its summary says how it was pinned at its creation: a resume that runs otherwise says so.
        err_console.print(
            f"[yellow]run {run} was made with each attempt pinned to {recorded} CPU(s) of its own; "
            f"this resume {'does not pin' if pinned is None else f'pins {pinned}'} "
            f"(give --cpus-per-attempt {recorded} to keep it)[/]"
        )
    if mode == RunMode.DISTRIBUTED:
        sent = resumption.resume_distributed(engine, invocation.cluster, run, solvers=solvers)
        err_console.print(
            f"run {run}: sent {sent.tasks} task(s) of its queued levels; the workers take it from here"
        )
        if notify_command or notify_url:
            with session_scope(engine) as session:
                run_id = resolve_run(session, run).id
            _await_and_notify(engine, run_id, notify_to)
        return
    try:
        resumed, processes = resumption.resume_local(engine, run, jobs, sys.argv[1:], solvers)
    except runs.NothingToRun as exc:
        err_console.print(str(exc), highlight=False, markup=False)
        return
    err_console.print(
        f"run {resumed.id}: resuming {len(resumed.pending)} of {resumed.total} level(s), "
        f"{processes} process(es)"
    )
    _solve_and_summarise(
        engine, resumed, processes, invocation, quiet, fmt, progress_every, fail_on, notify_to
    )


@click.command()
@click.argument("run")
@with_database("change")
def cancel(invocation: Invocation, run: str):
    """Cancel RUN: its queued attempts become cancelled; workers skip them, a local solve stops.

    A local `packsolve solve` of RUN stops within a second and keeps every
    result that finished; `packsolve resume RUN` runs the rest later.
    """
    from packsolve import runs

    done = runs.cancel(invocation.engine, run)
    if done.finished_before:
        click.echo(f"run {done.run_id} is finished already: nothing to cancel")
    elif done.mode == RunMode.LOCAL:
        click.echo(
            f"run {done.run_id} cancelled: {done.cancelled} level(s) had no result yet; its "
            "`packsolve solve` stops within a second and keeps what finishes before "
            f"(`packsolve resume {done.run_id}` runs the rest)"
        )
    else:
        click.echo(f"run {done.run_id}: {done.cancelled} queued attempt(s) cancelled")


def counted(attempts: int, levels: int) -> str:
    """Return how many levels a run tries, and how many attempts where a matrix (--heuristic a,b) tries
    some level with several heuristics: both counts said."""
    if not levels or levels >= attempts:  # levels 0: not known (a run resumed)
        return f"{attempts} level(s)"
    return f"{attempts} attempt(s) ({levels} level(s))"
