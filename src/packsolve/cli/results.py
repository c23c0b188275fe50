"""Commands that read one run or level: status (with --watch), export, show."""

from __future__ import annotations

import csv
import json
import sys
import time
from typing import TYPE_CHECKING, Any

import click

from packsolve.bounds import TIME_LIMIT_S
from packsolve.cli.durations import duration_within
from packsolve.cli.group import Invocation
from packsolve.cli.options import (
    emit,
    err_console,
    follow_links_option,
    format_of,
    format_option,
    out_console,
    output_file,
    warn_without_task_key,
    with_database,
)
from packsolve.cli.verdict import exit_code, wait_fail_on_option, wait_for_end, warning_of
from packsolve.runstate import RunMode
from packsolve.settings import Settings

if TYPE_CHECKING:  # the report modules load when a command runs, not for every command line
    from packsolve.report.progress import Progress

    class Located(Progress):
        """A run's progress with where it lives: the database read, the broker a submit sent it to."""

        database: str
        broker: str | None


@click.command()
@click.argument("run", required=False)
@click.option("--watch", "-w", is_flag=True, help="Refresh until the run is finished.")
@click.option("--wait", is_flag=True, help="Print nothing until the run is over, then its status once.")
@click.option("--interval", type=duration_within(TIME_LIMIT_S, low=0.1), default=2.0, show_default=True)
@wait_fail_on_option
@format_option
@with_database("read")
def status(
    invocation: Invocation,
    run: str | None,
    watch: bool,
    wait: bool,
    interval: float,
    fail_on: tuple[str, ...],
    fmt: str,
):
    """Show the progress of a run (default: the latest): counts, rate, ETA from the median time so far.

    With --watch the table refreshes until the run is finished; with --format
    json it prints one JSON object per line at every refresh. With --wait it
    returns once the run is over (exit 1 if a level ended in a --fail-on status: error, wrong or
    lost unless told otherwise; --fail-on none exits 0 whatever the outcomes).
    """
    settings, engine = invocation.settings, invocation.engine
    if not wait:
        _status(settings, engine, run, watch, interval, fmt)
        return
    run_id = int(_progress(engine, run)["run"])  # the latest now, even if another starts meanwhile
    wait_for_end(engine, run_id, interval, say=warning_of(run_id))
    _status(settings, engine, str(run_id), False, interval, fmt)  # the status of a run that is over, once
    code = exit_code(engine, run_id, fail_on)
    if code:
        sys.exit(code)


def _status(settings: Settings, engine: Any, run: str | None, watch: bool, interval: float, fmt: str) -> None:
    """Print the run's status once, or refreshed until it is finished (watch); a distributed run's
    warns if the settings have no task key."""
    from packsolve.report.progress import PROGRESS_COLUMNS, progress_row, render_progress

    if _mode(engine, run) == RunMode.DISTRIBUTED:
        warn_without_task_key("this deployment's workers run tasks nobody signed", settings)
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
        p = _progress(engine, run)
        out_console.print(render_progress(p))
        _print_where(p)
        return
    from rich.live import Live

    p = _progress(engine, run)
    _print_where(p)  # once, above the table that refreshes
    with Live(render_progress(p), console=out_console, auto_refresh=False) as live:
        while True:
            p = _progress(engine, run)
            live.update(render_progress(p), refresh=True)
            if p["finished"]:
                break
            time.sleep(interval)
    if not out_console.is_terminal:
        out_console.line()  # a log or a pipe gets whole lines: Live leaves the last one open there


def _mode(engine: Any, ref: str | None) -> str:
    from packsolve.db.runs import resolve_run
    from packsolve.db.session import session_scope

    with session_scope(engine) as session:
        return resolve_run(session, ref).mode


def _progress(engine: Any, ref: str | None) -> Located:
    """Return the run's progress with where it lives: the database read, the broker submit sent it to."""
    from packsolve.db.runs import resolve_run
    from packsolve.db.session import session_scope, shown_database
    from packsolve.report.progress import run_progress

    with session_scope(engine) as session:
        run = resolve_run(session, ref)
        p = run_progress(session, run)
        broker = (run.options or {}).get("broker")
    return {**p, "database": shown_database(engine.url), "broker": broker}


def _print_where(p: Located) -> None:
    """Print the lines naming the run's database and broker, whole (a path or URL is copied from here)."""
    for line in [f"database {p['database']}", *([f"broker {p['broker']}"] if p["broker"] else [])]:
        out_console.print(line, style="dim", soft_wrap=True, highlight=False, markup=False)


EXPORT_SUFFIXES = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json", ".csv": "csv"}


@click.command()
@click.argument("run", default="latest")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["jsonl", "json", "csv"]),
    default=None,
    help="jsonl (one object a line), json (one array) or csv [default: from -o's extension, else jsonl].",
)
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False),
    default="-",
    help="File; .jsonl, .json or .csv picks the format [default: stdout].",
)
@with_database("read")
def export(invocation: Invocation, run: str, fmt: str | None, output: str):
    """Write one record per attempt of RUN ('latest' by default) as JSON lines, a JSON array or CSV."""
    from packsolve.db.runs import resolve_run
    from packsolve.db.session import session_scope
    from packsolve.report.export import WRITERS, export_records

    fmt = format_of(output_file(output), fmt, EXPORT_SUFFIXES, "jsonl")
    with session_scope(invocation.engine) as session:
        run_id = resolve_run(session, run).id
        records = export_records(session, run_id)
        with click.open_file(output, "w", encoding="utf-8") as out:
            n = WRITERS[fmt](records, out)
    if output != "-":
        err_console.print(f"{n} record(s) of run {run_id} written to {output} ({fmt})", highlight=False)


@click.command()
@click.argument("level")
@format_option
@follow_links_option
@with_database("read")
def show(invocation: Invocation, level: str, fmt: str, follow_links: bool):
    """Show LEVEL (a level file, PATH:LINE, a name from a report, or a hash or its prefix).

    Draws it with its best known solution and lists every attempt at it across runs.
    """
    from packsolve.db.session import session_scope
    from packsolve.report.show import level_report, render_level

    with session_scope(invocation.engine) as session:
        rep = level_report(session, level, follow_links)
    if fmt == "csv":
        emit(rep["history"], fmt, lambda r: r)
    elif fmt == "json":
        click.echo(json.dumps(rep, indent=2, ensure_ascii=False))
    else:
        out_console.print(render_level(rep))
