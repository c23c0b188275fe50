"""The packsolve command line: thin click wrappers around the modules that do the work."""

from __future__ import annotations

import functools
import json
import os
import sys
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import click
from rich.console import Console

from packsolve import __version__
from packsolve.levels import DEFAULT_MAX_BYTES

err_console = Console(stderr=True)
out_console = Console()

DEFAULT_TIME_LIMIT = 60.0


def _positive_or_none(value: float | int | None) -> Any:
    return None if value is None or value <= 0 else value


def database_option(fn: Callable) -> Callable:
    return click.option(
        "--database-url",
        envvar="PACKSOLVE_DATABASE_URL",
        default=None,
        show_envvar=True,
        help="SQLAlchemy URL of the results database [default: sqlite file ./packsolve.db].",
    )(fn)


def broker_option(fn: Callable) -> Callable:
    return click.option(
        "--broker-url",
        envvar="PACKSOLVE_BROKER_URL",
        default=None,
        show_envvar=True,
        help="Celery broker URL [default: redis://localhost:6379/0].",
    )(fn)


def format_option(fn: Callable) -> Callable:
    return click.option(
        "--format", "fmt", type=click.Choice(["table", "json", "csv"]), default="table", show_default=True
    )(fn)


def run_options(fn: Callable) -> Callable:
    """Options shared by every command that starts a run."""
    decorators = [
        click.option("--kind", default=None, help="Only accept levels of this kind."),
        click.option(
            "--heuristic", default="default", show_default=True, help="Solver to use; see `packsolve kinds`."
        ),
        click.option(
            "--time-limit", type=float, default=DEFAULT_TIME_LIMIT, show_default=True,
            help="Wall seconds per level (0: none); the solver is stopped, then killed soon after.",
        ),
        click.option("--node-limit", type=int, default=None, help="Expanded nodes per level."),
        click.option("--memory-limit", type=int, default=None, help="MB a solver may allocate per level."),
        click.option("--label", default=None, help="A name for the run, usable instead of its id."),
        click.option(
            "--max-file-mb", type=float, default=DEFAULT_MAX_BYTES / 2**20, show_default=True,
            help="Level files larger than this are refused (as invalid levels).",
        ),
    ]  # fmt: skip
    for d in reversed(decorators):
        fn = d(fn)
    return fn


def usage_errors(fn: Callable) -> Callable:
    """Turn the errors a user can fix into click usage errors instead of tracebacks."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from sqlalchemy.exc import OperationalError

        from packsolve.scheduler import PlanError

        try:
            return fn(*args, **kwargs)
        except (PlanError, LookupError) as exc:
            raise click.ClickException(str(exc.args[0] if exc.args else exc)) from None
        except OperationalError as exc:
            from packsolve.db.session import database_url, safe_url

            url = safe_url(database_url(kwargs.get("database_url")))
            raise click.ClickException(f"database error at {url}: {exc.orig}") from None

    return wrapper


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="packsolve")
def cli() -> None:
    """Solve whole packs of puzzle levels in batch, locally or on Celery workers."""


def _limits(time_limit: float | None, node_limit: int | None, memory_limit: int | None) -> Any:
    from packsolve.runner import Limits

    for name, value in (("--node-limit", node_limit), ("--memory-limit", memory_limit)):
        if value is not None and value <= 0:
            raise click.BadParameter(f"{name} must be positive")
    return Limits(_positive_or_none(time_limit), node_limit, memory_limit)


def _create_run(
    engine: Any, paths: tuple[str, ...], mode: str, opts: dict[str, Any], concurrency: int | None
):
    """Plan the run from paths and create its rows; return (run id, plan, limits)."""
    from packsolve.db.queries import RunOptions, create_run
    from packsolve.db.session import redact, session_scope
    from packsolve.scheduler import plan_run

    limits = _limits(opts["time_limit"], opts["node_limit"], opts["memory_limit"])
    plan = plan_run(paths, opts["kind"], opts["heuristic"], int(opts["max_file_mb"] * 2**20))
    options = RunOptions(
        mode=mode,
        heuristic=opts["heuristic"],
        kind=opts["kind"],
        time_limit=limits.time_limit,
        node_limit=limits.node_limit,
        memory_limit_mb=limits.memory_limit_mb,
        concurrency=concurrency,
        max_tries=opts.get("max_tries"),
        label=opts["label"],
        extra={"argv": [redact(a) for a in sys.argv[1:]], "paths": list(paths)},  # no passwords kept
    )
    with session_scope(engine) as session:
        run_id = create_run(session, plan.attempts, options)
    return run_id, plan, limits


@cli.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@run_options
@click.option("--jobs", "-j", type=int, default=None, help="Worker processes [default: number of cores].")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@format_option
@database_option
@usage_errors
def solve(
    paths: tuple[str, ...], jobs: int | None, quiet: bool, fmt: str, database_url: str | None, **opts: Any
):
    """Solve every level under PATHS on a local process pool; results go to the database."""
    from packsolve.db.queries import cancel_pending
    from packsolve.db.session import get_engine, session_scope
    from packsolve.localpool import run_local
    from packsolve.scheduler import planned_specs

    jobs = jobs or os.cpu_count() or 1
    if jobs < 1:
        raise click.BadParameter("--jobs must be at least 1")
    engine = get_engine(database_url)
    run_id, plan, limits = _create_run(engine, paths, "local", opts, jobs)
    specs = planned_specs(plan, limits)  # a new run's pending attempts: no need to read them back
    total = len(plan.attempts)
    counts: Counter[str] = Counter()
    counts["invalid"] = total - len(specs)
    if plan.duplicates:
        err_console.print(f"[dim]{plan.duplicates} duplicate level(s) skipped: each level runs once[/]")
    err_console.print(f"run {run_id}: {total} level(s), {jobs} process(es)")
    try:
        if quiet or not specs:
            run_local(engine, run_id, specs, jobs)
        else:
            _with_progress(engine, run_id, specs, jobs, total, counts)
    except KeyboardInterrupt:
        with session_scope(engine) as session:
            n = cancel_pending(session, run_id, "cancelled: the local run was interrupted")
        err_console.print(f"[yellow]interrupted: {n} level(s) not run were marked cancelled[/]")
        _print_summary(engine, run_id, fmt)
        sys.exit(130)
    _print_summary(engine, run_id, fmt)


def _with_progress(engine: Any, run_id: int, specs: list, jobs: int, total: int, counts: Counter) -> None:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from packsolve.localpool import run_local

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
        task = progress.add_task(describe(), total=total, completed=total - len(specs))

        def on_result(_hash: str, outcome: Any) -> None:
            counts[outcome.status.value] += 1
            progress.update(task, advance=1, description=describe())

        run_local(engine, run_id, specs, jobs, on_result)


def _print_summary(engine: Any, run_id: int, fmt: str) -> None:
    from packsolve.db.queries import resolve_run
    from packsolve.db.session import session_scope
    from packsolve.report.summary import render_summary, run_summary

    with session_scope(engine) as session:
        summary = run_summary(session, resolve_run(session, run_id))
    _emit(summary, fmt, lambda s: render_summary(s))


def _emit(data: Any, fmt: str, table: Callable[[Any], Any]) -> None:
    """Print data as JSON, CSV (flat dicts or lists of them) or a rich table."""
    if fmt == "json":
        click.echo(json.dumps(data, indent=2, default=str))
    elif fmt == "csv":
        import csv

        rows = [_flatten(r) for r in data] if isinstance(data, list) else [_flatten(data)]
        if rows:
            writer = csv.DictWriter(sys.stdout, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    else:
        out_console.print(table(data))


def _flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict):
            flat.update(_flatten(v, f"{prefix}{k}."))
        else:
            # Lists (hosts, solutions) as JSON text: a CSV cell holds one value a script can parse.
            flat[f"{prefix}{k}"] = json.dumps(v) if isinstance(v, list) else v
    return flat


@cli.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@run_options
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
@usage_errors
def submit(
    paths: tuple[str, ...],
    max_tries: int | None,
    chunk_size: int,
    database_url: str | None,
    broker_url: str | None,
    **opts,
):
    """Create a run for the levels under PATHS and enqueue them in tasks of one or more; print the run id."""
    from packsolve.db.queries import mark_sent
    from packsolve.db.session import get_engine, safe_url, session_scope
    from packsolve.scheduler import (
        DEFAULT_MAX_TRIES,
        choose_chunk_size,
        enqueue,
        hardest_first,
        max_chunk_for,
        planned_specs,
    )
    from packsolve.worker import DEFAULT_VISIBILITY_TIMEOUT, make_app
    from packsolve.worker import broker_url as resolve_broker

    limits = _limits(opts["time_limit"], opts["node_limit"], opts["memory_limit"])
    hard = limits.hard_time()
    if hard is not None and hard > DEFAULT_VISIBILITY_TIMEOUT / 2:
        raise click.BadParameter("--time-limit must stay below 6 hours (Redis visibility timeout)")
    if chunk_size > max_chunk_for(limits):
        cap = max_chunk_for(limits)
        raise click.BadParameter(f"at most {cap} per task under this time limit", param_hint="--chunk-size")
    app = make_app(broker_url)
    try:
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=2, interval_start=0.2, interval_step=0.5)
    except Exception as exc:
        raise click.ClickException(
            f"cannot reach the broker at {safe_url(resolve_broker(broker_url))}: {exc}"
        ) from None
    engine = get_engine(database_url)
    max_tries = max_tries or DEFAULT_MAX_TRIES
    run_id, plan, limits = _create_run(engine, paths, "distributed", {**opts, "max_tries": max_tries}, None)
    with session_scope(engine) as session:
        # Longest expected first: the overnight makespan is set by the hardest levels started last.
        specs = hardest_first(session, run_id, planned_specs(plan, limits))
        chunk_size = chunk_size or choose_chunk_size(session, specs)
    started = time.monotonic()
    sent = enqueue(app, run_id, specs, max_tries, chunk_size)
    with session_scope(engine) as session:
        mark_sent(session, run_id)  # the scheduler's grace for queued attempts counts from here
    err_console.print(
        f"run {run_id}: {len(plan.attempts)} level(s), {sent} task(s) of up to {chunk_size} enqueued in "
        f"{time.monotonic() - started:.2f} s, {len(plan.attempts) - len(specs)} invalid"
    )
    click.echo(run_id)


@cli.command()
@click.option(
    "--concurrency",
    "-c",
    type=int,
    default=None,
    envvar="PACKSOLVE_CONCURRENCY",
    show_envvar=True,
    help="Processes (0 or unset: the number of cores).",
)
@click.option(
    "--hostname", "-n", default=None, help="Worker name, recorded on every attempt [default: celery@HOST]."
)
@click.option("--loglevel", "-l", default="INFO", show_default=True)
@click.option("--visibility-timeout", type=int, default=None, help="Seconds before Redis redelivers a task.")
@database_option
@broker_option
@usage_errors
def worker(concurrency, hostname, loglevel, visibility_timeout, database_url, broker_url):
    """Start a Celery worker that runs packsolve attempts."""
    from packsolve.db.session import database_url as resolve_db
    from packsolve.db.session import get_engine
    from packsolve.worker import DEFAULT_VISIBILITY_TIMEOUT, QUEUE, make_app

    url = resolve_db(database_url)
    os.environ["PACKSOLVE_DATABASE_URL"] = url  # the pool processes read it
    get_engine(url)  # fail early, and migrate, before taking tasks
    app = make_app(broker_url, visibility_timeout or DEFAULT_VISIBILITY_TIMEOUT)
    argv = [
        "worker",
        f"--loglevel={loglevel}",
        "-Q",
        QUEUE,
        "--pool=prefork",
        "--without-gossip",
        "--without-mingle",
    ]
    argv.append(f"--concurrency={concurrency or os.cpu_count() or 1}")
    if hostname:
        argv.append(f"--hostname={hostname}")
    app.worker_main(argv)


@cli.command()
@click.argument("run", required=False)
@click.option("--watch", "-w", is_flag=True, help="Refresh until the run is finished.")
@click.option("--interval", type=float, default=2.0, show_default=True)
@format_option
@database_option
@usage_errors
def status(run: str | None, watch: bool, interval: float, fmt: str, database_url: str | None):
    """Show the progress of a run (default: the latest): counts, rate, ETA from the median time so far.

    With --watch the table refreshes until the run is finished; with --format
    json it prints one JSON object per line at every refresh.
    """
    import csv

    from packsolve.db.session import get_engine
    from packsolve.report.progress import PROGRESS_COLUMNS, progress_row, render_progress

    engine = get_engine(database_url)
    if fmt != "table":
        # One JSON object (or CSV row, stable columns) per refresh: a script can follow the run.
        writer = csv.DictWriter(sys.stdout, fieldnames=PROGRESS_COLUMNS) if fmt == "csv" else None
        if writer:
            writer.writeheader()
        while True:
            p = _progress(engine, run)
            if writer:
                writer.writerow(progress_row(p))
                sys.stdout.flush()
            else:
                click.echo(json.dumps(p, indent=None if watch else 2))
            if not watch or p["finished"]:
                return
            time.sleep(interval)
    if not watch:
        out_console.print(render_progress(_progress(engine, run)))
        return
    from rich.live import Live

    with Live(render_progress(_progress(engine, run)), console=out_console, auto_refresh=False) as live:
        while True:
            p = _progress(engine, run)
            live.update(render_progress(p), refresh=True)
            if p["finished"]:
                break
            time.sleep(interval)


def _progress(engine: Any, ref: str | None) -> dict[str, Any]:
    from packsolve.db.queries import resolve_run
    from packsolve.db.session import session_scope
    from packsolve.report.progress import run_progress

    with session_scope(engine) as session:
        return run_progress(session, resolve_run(session, ref))


@cli.group()
def report() -> None:
    """Reports computed from the database."""


@report.command("summary")
@click.argument("run", required=False)
@format_option
@database_option
@usage_errors
def report_summary(run: str | None, fmt: str, database_url: str | None):
    """Solved X of Y, counts per status, CPU and wall time of RUN (default: latest)."""
    from packsolve.db.queries import resolve_run
    from packsolve.db.session import get_engine, session_scope

    engine = get_engine(database_url)
    with session_scope(engine) as session:
        run_id = resolve_run(session, run).id
    _print_summary(engine, run_id, fmt)


@cli.command()
@click.argument("run", default="latest")
@click.option("--format", "fmt", type=click.Choice(["jsonl", "csv"]), default="jsonl", show_default=True)
@click.option("--output", "-o", type=click.Path(dir_okay=False), default="-", help="File [default: stdout].")
@database_option
@usage_errors
def export(run: str, fmt: str, output: str, database_url: str | None):
    """Write one record per attempt of RUN ('latest' by default) as JSON lines or CSV."""
    from packsolve.db.queries import resolve_run
    from packsolve.db.session import get_engine, session_scope
    from packsolve.report.export import export_records, write_csv, write_jsonl

    engine = get_engine(database_url)
    with session_scope(engine) as session:
        run_id = resolve_run(session, run).id
        records = export_records(session, run_id)
        with click.open_file(output, "w", encoding="utf-8") as out:
            n = (write_jsonl if fmt == "jsonl" else write_csv)(records, out)
    if output != "-":
        err_console.print(f"{n} record(s) of run {run_id} written to {output}")


@cli.command()
@click.argument("run")
@database_option
@usage_errors
def cancel(run: str, database_url: str | None):
    """Cancel RUN: its queued attempts become cancelled and workers skip them."""
    from packsolve.db.queries import resolve_run
    from packsolve.db.session import get_engine, session_scope
    from packsolve.scheduler import cancel_run

    engine = get_engine(database_url)
    with session_scope(engine) as session:
        run_row = resolve_run(session, run)
        n = cancel_run(session, run_row.id)
    click.echo(f"run {run_row.id}: {n} queued attempt(s) cancelled")


@cli.command()
def kinds() -> None:
    """List the puzzle kinds, their heuristics and defaults."""
    from rich.table import Table

    from packsolve.puzzles import KINDS

    t = Table("kind", "heuristics", "default", "native formats", "what it is")
    for name, kind in KINDS.items():
        t.add_row(name, ", ".join(kind.solvers), kind.default, " ".join(kind.native), kind.description)
    out_console.print(t)


@cli.command()
@click.argument("kind")
@click.option("--size", required=True, help="Size spec of the kind, e.g. 8x8 or 60.")
@click.option("--count", type=int, default=10, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--output", "-o", type=click.Path(dir_okay=False), default="-", help="JSONL file [default: stdout]."
)
def generate(kind: str, size: str, count: int, seed: int, output: str) -> None:
    """Generate COUNT levels of KIND as JSON lines (reproducible for a seed)."""
    from packsolve.levels import canonical_json
    from packsolve.puzzles import get_kind

    try:
        k = get_kind(kind)
    except KeyError as exc:
        raise click.BadParameter(str(exc.args[0]), param_hint="KIND") from None
    if k.generate is None:
        raise click.BadParameter(f"kind {kind!r} has no generator", param_hint="KIND")
    try:
        levels = k.generate(size, count, seed)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--size") from None
    with click.open_file(output, "w", encoding="utf-8") as out:
        for level in levels:
            out.write(canonical_json({**level, "kind": k.name}) + "\n")


@cli.group()
def db() -> None:
    """Database schema management."""


@db.command("upgrade")
@database_option
@usage_errors
def db_upgrade(database_url: str | None) -> None:
    """Apply the Alembic migrations up to the newest revision."""
    from packsolve.db.migrate import current_revision, upgrade
    from packsolve.db.session import database_url as resolve_db
    from packsolve.db.session import make_engine, safe_url

    url = resolve_db(database_url)
    engine = make_engine(url)
    applied = upgrade(engine)
    state = "upgraded to" if applied else "already at"
    click.echo(f"{safe_url(url)}: {state} revision {current_revision(engine)}")


# Command modules that attach themselves to the groups above (kept apart so each stays small).
from packsolve import cli_ops, cli_reports  # noqa: E402, F401


def main() -> None:
    cli(prog_name="packsolve")


if __name__ == "__main__":
    main()
