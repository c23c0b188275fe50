"""Commands that start or stop runs: solve, submit, rerun, cancel (the work is in runs.py)."""

from __future__ import annotations

import sys
from collections import Counter
from typing import Any

import click

from packsolve.cli.options import (
    broker_option,
    database_option,
    err_console,
    format_option,
    handle_errors,
    print_summary,
    run_options,
)

RERUN_DEFAULT_STATUSES = "timeout,error,lost,memout"


def solvers_option(fn: Any) -> Any:
    return click.option(
        "--solvers",
        "solvers_file",
        type=click.Path(dir_okay=False),
        default=None,
        help="TOML file declaring external solver programs, usable as heuristics "
        "[default: ./packsolve.toml if there is one].",
    )(fn)


def _request(opts: dict[str, Any], max_tries: int | None = None) -> Any:
    """Return the validated planning.Request of a command's run options."""
    from packsolve.planning import Request, limits_from_options
    from packsolve.solvers import load_solvers

    return Request(
        kind=opts["kind"],
        heuristic=opts["heuristic"],
        limits=limits_from_options(opts["time_limit"], opts["node_limit"], opts["memory_limit"]),
        label=opts["label"],
        max_tries=max_tries,
        max_file_bytes=int(opts["max_file_mb"] * 2**20),
        solvers=load_solvers(opts["solvers_file"]),
    )


def print_notes(run: Any) -> None:
    """Print what the user should know about how a run was planned (a heuristic not applied to a kind)."""
    for note in run.notes:
        err_console.print(f"[yellow]note:[/] {note}", highlight=False)


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@run_options
@solvers_option
@click.option("--jobs", "-j", type=int, default=None, help="Worker processes [default: number of cores].")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@format_option
@database_option
@handle_errors
def solve(
    paths: tuple[str, ...], jobs: int | None, quiet: bool, fmt: str, database_url: str | None, **opts: Any
):
    """Solve every level under PATHS on a local process pool; results go to the database."""
    from packsolve import runs
    from packsolve.db.session import get_engine

    engine = get_engine(database_url)
    run, jobs = runs.start_local(engine, paths, _request(opts), jobs, sys.argv[1:])
    if run.duplicates:
        err_console.print(f"[dim]{run.duplicates} duplicate level(s) skipped: each level runs once[/]")
    print_notes(run)
    err_console.print(f"run {run.id}: {run.total} level(s), {jobs} process(es)")
    _solve_and_summarise(engine, run, jobs, quiet, fmt)


def _solve_and_summarise(engine: Any, run: Any, jobs: int, quiet: bool, fmt: str) -> None:
    """Solve a new local run (with a progress bar unless quiet), then print its summary; 130 on Ctrl-C."""
    from packsolve import runs

    try:
        if quiet or not run.specs:
            runs.solve_local(engine, run, jobs)
        else:
            _with_progress(engine, run, jobs)
    except runs.Interrupted as exc:
        err_console.print(f"[yellow]interrupted: {exc.cancelled} level(s) not run were marked cancelled[/]")
        print_summary(engine, run.id, fmt)
        sys.exit(130)
    print_summary(engine, run.id, fmt)


def _with_progress(engine: Any, run: Any, jobs: int) -> None:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from packsolve import runs

    counts: Counter[str] = Counter()
    counts["invalid"] = run.invalid

    def describe() -> str:
        return "  ".join(f"{k} {v}" for k, v in sorted(counts.items()) if v) or "starting"

    with Progress(
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        TextColumn("{task.description}"),
        console=err_console,
        transient=False,
    ) as progress:
        task = progress.add_task(describe(), total=run.total, completed=run.invalid)

        def on_result(_hash: str, outcome: Any) -> None:
            counts[outcome.status.value] += 1
            progress.update(task, advance=1, description=describe())

        runs.solve_local(engine, run, jobs, on_result)


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@run_options
@solvers_option
@click.option(
    "--max-tries", type=int, default=None, help="Deliveries of a task before it counts as lost [default: 5]."
)
@click.option(
    "--chunk-size",
    type=click.IntRange(min=0),
    default=0,
    help="Levels per task (0: chosen from past times of the kind, else level sizes) [default: 0].",
)
@database_option
@broker_option
@handle_errors
def submit(
    paths: tuple[str, ...],
    max_tries: int | None,
    chunk_size: int,
    database_url: str | None,
    broker_url: str | None,
    **opts,
):
    """Create a run for the levels under PATHS and enqueue them in tasks of one or more; print the run id."""
    from packsolve import runs
    from packsolve.db.session import get_engine
    from packsolve.queue.app import make_app

    request = _request(opts, max_tries)
    engine = get_engine(database_url)
    run, sent = runs.start_distributed(engine, make_app(broker_url), paths, request, chunk_size, sys.argv[1:])
    print_notes(run)
    err_console.print(
        f"run {run.id}: {run.total} level(s), {sent.tasks} task(s) of up to {sent.chunk_size} enqueued in "
        f"{sent.seconds:.2f} s, {run.invalid} invalid"
    )
    click.echo(run.id)


@click.command()
@click.argument("run")
@click.option(
    "--status",
    "statuses",
    default=RERUN_DEFAULT_STATUSES,
    show_default=True,
    help="Comma-separated statuses of the parent's attempts to run again.",
)
@click.option("--kind", default=None, help="Only levels of this kind.")
@click.option(
    "--heuristic",
    default=None,
    help="Solver to use, or per kind (sudoku=dlx,sliding=idastar) [default: parent's].",
)
@click.option("--time-limit", type=float, default=None, help="Wall seconds per level [default: parent's].")
@click.option("--node-limit", type=int, default=None, help="Expanded nodes per level [default: parent's].")
@click.option("--memory-limit", type=int, default=None, help="MB per level [default: parent's].")
@click.option("--label", default=None, help="A name for the child run.")
@click.option("--local", "local", flag_value=True, default=None, help="Run on a local process pool.")
@click.option("--distributed", "local", flag_value=False, help="Enqueue for Celery workers.")
@click.option("--jobs", "-j", type=int, default=None, help="Local processes [default: number of cores].")
@click.option("--max-tries", type=int, default=None, help="Deliveries before lost [default: 5].")
@solvers_option
@format_option
@database_option
@broker_option
@handle_errors
def rerun(run: str, statuses: str, local: bool | None, jobs: int | None, max_tries: int | None, fmt: str,
          database_url: str | None, broker_url: str | None, **opts: Any):  # fmt: skip
    """Run RUN's failed levels again as a child run (linked to RUN); print the child's id.

    By default the child runs where the parent did (local or distributed) with
    the parent's heuristic and limits; change them to see what another
    heuristic or more time buys (`packsolve report compare RUN CHILD`).
    """
    from packsolve import runs
    from packsolve.db.session import get_engine
    from packsolve.queue.app import make_app
    from packsolve.solvers import load_solvers

    request = runs.RerunRequest(
        parent=run,
        statuses=tuple(statuses.split(",")),
        kind=opts["kind"],
        heuristic=opts["heuristic"],
        time_limit=opts["time_limit"],
        node_limit=opts["node_limit"],
        memory_limit=opts["memory_limit"],
        label=opts["label"],
        max_tries=max_tries,
        local=local,
        jobs=jobs,
        solvers=load_solvers(opts["solvers_file"]),
    )
    request.checked_statuses()  # before the database is touched: a typo costs nothing
    engine = get_engine(database_url)
    app = make_app(broker_url)  # connects only if the child is distributed
    child, processes = runs.start_rerun(engine, request, sys.argv[1:], app)
    print_notes(child)
    if processes is not None:
        err_console.print(f"run {child.id}: rerun of {run}, {child.total} level(s), {processes} process(es)")
        _solve_and_summarise(engine, child, processes, quiet=True, fmt=fmt)
    else:
        sent = runs.send(engine, app, child)
        err_console.print(
            f"run {child.id}: rerun of {run}, {child.total} level(s), {sent.tasks} task(s) enqueued"
        )
    click.echo(child.id)


@click.command()
@click.argument("run")
@database_option
@handle_errors
def cancel(run: str, database_url: str | None):
    """Cancel RUN: its queued attempts become cancelled and workers skip them."""
    from packsolve import runs
    from packsolve.db.session import get_engine

    run_id, n = runs.cancel(get_engine(database_url), run)
    click.echo(f"run {run_id}: {n} queued attempt(s) cancelled")
