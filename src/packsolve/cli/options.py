"""What every command shares: its options, the consoles, printing data, and turning errors into messages."""

from __future__ import annotations

import csv
import functools
import json
import sys
from collections.abc import Callable
from typing import Any

import click
from rich.console import Console

from packsolve.errors import PacksolveError
from packsolve.levels import DEFAULT_MAX_BYTES

err_console = Console(stderr=True)
out_console = Console()

DEFAULT_TIME_LIMIT = 60.0


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
    """Options shared by every command that starts a run from level files."""
    decorators = [
        click.option("--kind", default=None, help="Only accept levels of this kind."),
        click.option(
            "--heuristic", default="default", show_default=True,
            help="Solver to use (see `packsolve kinds`, or a program declared with --solvers): a name for "
            "every kind that has it, or per kind: sudoku=dlx,sliding=idastar.",
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


def handle_errors(fn: Callable) -> Callable:
    """Turn the errors a user can fix (PacksolveError, an unreachable database) into one-line messages.

    Everything else is a bug and keeps its traceback.
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from sqlalchemy.exc import OperationalError

        try:
            return fn(*args, **kwargs)
        except PacksolveError as exc:
            raise _Failed(str(exc), exc.exit_code) from None
        except OperationalError as exc:
            from packsolve.db.session import database_url, safe_url

            url = safe_url(database_url(kwargs.get("database_url")))
            raise click.ClickException(f"database error at {url}: {exc.orig}") from None

    return wrapper


class _Failed(click.ClickException):
    """A PacksolveError as click prints it: 'Error: message' on stderr, with the error's exit code."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        # click declares exit_code on the class; each error here brings its own.
        setattr(self, "exit_code", exit_code)  # noqa: B010


def emit(data: Any, fmt: str, table: Callable[[Any], Any]) -> None:
    """Print data as JSON, CSV (flat dicts or lists of them) or a rich table."""
    if fmt == "json":
        click.echo(json.dumps(data, indent=2, default=str))
    elif fmt == "csv":
        rows = [flatten(r) for r in data] if isinstance(data, list) else [flatten(data)]
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
