"""What every command shares: its options, the consoles and printing data (errors: cli/group.py)."""

from __future__ import annotations

import csv
import json
import math
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from packsolve.bounds import Range, shown
from packsolve.cli.durations import RUN_LIMIT
from packsolve.cli.group import Access, accessing, pass_invocation, setting_flag
from packsolve.errors import OptionError
from packsolve.levels import DEFAULT_MAX_BYTES
from packsolve.settings import Settings

err_console = Console(stderr=True)
out_console = Console()

DEFAULT_TIME_LIMIT = 60.0


class _IntRange(click.IntRange):
    def _describe_range(self) -> str:
        return f"{self.min} to {self.max}"


class _FloatRange(click.FloatRange):
    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):  # NaN passes every bound's comparison
            self.fail(f"{value!r} is not a finite number; give one of {self._describe_range()}.", param, ctx)
        return number

    def _describe_range(self) -> str:
        return f"{shown(self.min or 0)} to {shown(self.max or 0)}"  # within() gives both


def within(span: Range, low: float | None = None) -> click.ParamType:
    """Return the click type of a number in span (from low if given): out of it, one line giving the range."""
    start = span.low if low is None else low
    if span.real:
        return _FloatRange(start, span.high)
    return _IntRange(int(start), int(span.high))


# --database-url and --broker-url: the flags only, not passed to the command: they are settings, which
# the command receives resolved in its Invocation (cli/group.py) with their environment variables and
# the [settings] table of ./packsolve.toml (packsolve.settings is the one reader of every setting).
def setting_option(*decls: str, **attrs: Any) -> Callable[[Callable], Callable]:
    """Return click.option for a flag that is a setting (named as the setting): noted, then resolved."""
    return click.option(*decls, default=None, expose_value=False, callback=setting_flag, **attrs)


def database_option(fn: Callable) -> Callable:
    return setting_option(
        "--database-url",
        help="SQLAlchemy URL of the results database [default: sqlite file ./packsolve.db; "
        "env: PACKSOLVE_DATABASE_URL].",
    )(fn)


def broker_option(fn: Callable) -> Callable:
    return setting_option(
        "--broker-url",
        help="Celery broker URL [default: redis://localhost:6379/0; env: PACKSOLVE_BROKER_URL].",
    )(fn)


def with_database(access: Access = "read") -> Callable[[Callable], Callable]:
    """Decorate a command to take --database-url and receive the Invocation first, its engine opened
    for access when first used: read (read-only: commands that only read write nothing, create
    nothing; NoDatabase says where they looked), change (a database that must exist already), or
    create (created and migrated if need be)."""

    def decorate(fn: Callable) -> Callable:
        return database_option(pass_invocation(accessing(access)(fn)))

    return decorate


def with_cluster(access: Access = "change") -> Callable[[Callable], Callable]:
    """As with_database, and --broker-url: for a command that sends to the cluster (Invocation.cluster)."""

    def decorate(fn: Callable) -> Callable:
        return database_option(broker_option(pass_invocation(accessing(access)(fn))))

    return decorate


def destinations(settings: Settings) -> list[str]:
    """Return the lines naming the broker and database a run goes to, saying where a default was used."""
    from packsolve.db.session import database_url as database_in_use
    from packsolve.db.session import shown_database
    from packsolve.masking import mask_url
    from packsolve.settings import DEFAULT

    broker = f"broker {mask_url(settings.broker_url)}"
    database = f"database {shown_database(database_in_use(settings.database_url))}"
    return [
        broker
        + (
            " (the default: PACKSOLVE_BROKER_URL is not set)"
            if settings.source("broker_url") == DEFAULT
            else ""
        ),
        database
        + (
            " (the default: PACKSOLVE_DATABASE_URL is not set)"
            if settings.source("database_url") == DEFAULT
            else ""
        ),
    ]


def cpus_per_attempt_option(fn: Callable) -> Callable:
    """The --cpus-per-attempt flag (the setting cpus_per_attempt) of every command that runs attempts."""
    from packsolve.bounds import COUNT

    return setting_option(
        "--cpus-per-attempt",
        type=within(COUNT),
        help="Pin each attempt to this many CPUs of its own, whole cores, none shared; the processes "
        "follow (0: not pinned) [env: PACKSOLVE_CPUS_PER_ATTEMPT].",
    )(fn)


def format_option(fn: Callable) -> Callable:
    return click.option(
        "--format", "fmt", type=click.Choice(["table", "json", "csv"]), default="table", show_default=True
    )(fn)


def solvers_option(fn: Callable) -> Callable:
    return click.option(
        "--solvers",
        "solvers_file",
        type=click.Path(dir_okay=False),
        default=None,
        help="TOML file declaring external solver programs, usable as heuristics "
        "[default: ./packsolve.toml if there is one].",
    )(fn)


def follow_links_option(fn: Callable) -> Callable:
    return click.option(
        "--follow-links",
        is_flag=True,
        help="Read level files through links that lead out of the pack (refused by default).",
    )(fn)


def run_options(fn: Callable) -> Callable:
    """Options shared by every command that plans a run from level files (solve, submit, check).

    They include --solvers: a declared program is a heuristic like a kind's own, so
    every such command must read the same declarations to plan the same run.
    """
    decorators = [
        click.option("--kind", default=None, help="Only accept levels of this kind."),
        click.option(
            "--heuristic",
            default="default",
            show_default=True,
            help="Solver to use (see `packsolve kinds`, or a program declared with --solvers): a name for "
            "every kind that has it, or per kind: sudoku=dlx,sliding=idastar.",
        ),
        click.option(
            "--time-limit",
            type=RUN_LIMIT,
            default=None,
            help="Wall time per level: seconds, or 500ms, 2s, 1m, 1h (0: no limit), or Nx: N times the "
            "level's expected time from earlier runs (3x; floor 1s, or 3x,10s); the solver is stopped, "
            f"then killed soon after [default: {DEFAULT_TIME_LIMIT:g}s, none when --cpu-limit is given].",
        ),
        click.option(
            "--cpu-limit",
            type=RUN_LIMIT,
            default=None,
            help="CPU time per level of the solver and every process it starts, as --time-limit takes "
            "it (0: none; Nx: of the level's expected CPU time); alone, a wall backstop of 10x it + 5s "
            "still holds.",
        ),
        click.option("--node-limit", type=int, default=None, help="Expanded nodes per level (at least 1)."),
        click.option(
            "--memory-limit",
            type=int,
            default=None,
            help="MB a solver may allocate per level (at least 1).",
        ),
        click.option(
            "--label",
            default=None,
            help="A name for the run, usable instead of its id; unique, not all digits.",
        ),
        click.option(
            "--move-label",
            is_flag=True,
            help="If another run has the --label, take it from that run (instead of an error).",
        ),
        click.option(
            "--max-file-mb",
            type=float,
            default=DEFAULT_MAX_BYTES / 2**20,
            show_default=True,
            help="Level files larger than this are refused (as invalid levels).",
        ),
    ]
    for d in reversed(decorators):
        fn = d(fn)
    return solvers_option(follow_links_option(fn))


def run_request(opts: dict[str, Any], max_tries: int | None = None) -> Any:
    """Return the validated request.Request of run_options' values (OptionError for a bad one).

    The declared solvers (--solvers, else ./packsolve.toml) are read into it.
    """
    from dataclasses import fields, replace

    from packsolve.external.declaration import load_solvers
    from packsolve.request import GivenOptions, request_from_options

    # run_options gives every field but max_tries, which only submit and rerun have.
    given = {f.name: opts[f.name] for f in fields(GivenOptions) if f.name != "max_tries"}
    if given["time_limit"] is None and given["cpu_limit"] is None:
        given["time_limit"] = DEFAULT_TIME_LIMIT  # a CPU limit alone means no wall limit (but its backstop)
    request = request_from_options(GivenOptions(**given, max_tries=max_tries))
    return replace(request, solvers=load_solvers(opts["solvers_file"]), follow_links=opts["follow_links"])


def output_file(path: str, option: str = "--output") -> str:
    """Return path if a file can be written there ('-': stdout); raise OptionError saying what is wrong."""
    if path == "-":
        return path
    target = Path(path)
    folder = target.parent
    if not folder.exists():
        raise OptionError(
            option, f"{path}: the directory {folder} does not exist; create it or write elsewhere"
        )
    if not folder.is_dir():
        raise OptionError(option, f"{path}: {folder} is not a directory")
    if target.is_dir():
        raise OptionError(option, f"{path} is a directory; name a file in it")
    if not os.access(folder, os.W_OK):
        raise OptionError(option, f"{path}: the directory {folder} is not writable; write elsewhere")
    return path


def format_of(path: str, given: str | None, by_suffix: Mapping[str, str], default: str) -> str:
    """Return the format given, else the one path's suffix names, else default for stdout ('-').

    Raise OptionError for a file whose suffix names no format (the message lists the suffixes).
    """
    if given is not None:
        return given
    if path == "-":
        return default
    suffix = Path(path).suffix.lower()
    if suffix not in by_suffix:
        known = ", ".join(sorted(by_suffix))
        raise OptionError(
            "--output", f"{path}: cannot tell the format from its name; end it in {known} or pass --format"
        )
    return by_suffix[suffix]


def emit(data: Any, fmt: str, table: Callable[[Any], Any]) -> None:
    """Print data as JSON, CSV (flat dicts or lists of them; control characters made visible) or a table."""
    if fmt == "json":
        click.echo(json.dumps(data, indent=2, default=str))
    elif fmt == "csv":
        from packsolve.report.text import visible

        rows = [flatten(r) for r in data] if isinstance(data, list) else [flatten(data)]
        # A CSV is read in a terminal too (cat, less): a level's name there moves no cursor.
        rows = [{k: visible(v) if isinstance(v, str) else v for k, v in r.items()} for r in rows]
        if rows:
            writer = csv.DictWriter(sys.stdout, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    else:
        out_console.print(table(data))


def flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Return d with nested dicts as dotted keys and lists as JSON text (one value per CSV cell)."""
    flat: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict):
            flat.update(flatten(v, f"{prefix}{k}."))
        else:
            # Lists (hosts, solutions) as JSON text: a CSV cell holds one value a script can parse.
            flat[f"{prefix}{k}"] = json.dumps(v) if isinstance(v, list) else v
    return flat


def print_summary(engine: Any, run_id: int, fmt: str) -> None:
    """Print the summary of a run in fmt."""
    from packsolve.db.runs import resolve_run
    from packsolve.db.session import session_scope
    from packsolve.report.summary import render_summary, run_summary

    with session_scope(engine) as session:
        summary = run_summary(session, resolve_run(session, run_id))
    emit(summary, fmt, render_summary)


def warn_without_task_key(consequence: str, settings: Settings) -> None:
    """Say loudly, on stderr, that this deployment (the command's settings) has no task key (tasks are
    not authenticated)."""
    from packsolve.queue.protocol import task_keys

    if task_keys(settings).accepted:
        return
    err_console.print(
        f"[bold red]WARNING: no PACKSOLVE_TASK_KEY: {consequence}; anyone who can write to the broker "
        "can queue attempts of your runs. Set the same secret key on every worker, submitter and "
        "scheduler (docs/security.md).[/]"
    )
