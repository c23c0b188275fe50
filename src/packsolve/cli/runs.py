"""`packsolve runs`: list the runs, label one, delete one."""

from __future__ import annotations

import sys

import click

from packsolve.bounds import COUNT
from packsolve.cli.group import Invocation, invocation_of
from packsolve.cli.options import database_option, emit, err_console, format_option, with_database, within
from packsolve.errors import PlanError


@click.group(invoke_without_command=True)
@click.option("--limit", type=within(COUNT, low=1), default=20, show_default=True, help="Newest runs shown.")
@click.option("--all", "all_runs", is_flag=True, help="Every run.")
@format_option
@database_option
@click.pass_context
def runs(ctx: click.Context, limit: int, all_runs: bool, fmt: str) -> None:
    """List the runs, newest first: id, label, state, mode, packs, heuristic, solved/total, created, took.

    `packsolve runs label RUN LABEL` names a run, `packsolve runs delete RUN` deletes one.
    """
    if ctx.invoked_subcommand is not None:
        return
    from packsolve.db.session import session_scope, shown_database
    from packsolve.report.runs_list import render_runs, run_rows

    # Not @with_database (which resolves the settings as the command starts): with a subcommand, its
    # own flags are noted after this runs.
    engine = invocation_of(ctx).open("read")
    with session_scope(engine) as session:
        rows = run_rows(session, None if all_runs else limit)
    emit(rows, fmt, lambda r: render_runs(r, shown_database(engine.url)))


@runs.command("label")
@click.argument("run")
@click.argument("label")
@click.option("--move-label", is_flag=True, help="If another run has LABEL, take it from that run.")
@with_database("change")
def runs_label(invocation: Invocation, run: str, label: str, move_label: bool) -> None:
    """Name RUN LABEL (unique, not all digits); '-' removes its label."""
    from packsolve.db.catalog import relabel
    from packsolve.db.runs import resolve_run
    from packsolve.db.session import session_scope
    from packsolve.request import check_label

    new = None if label == "-" else check_label(label)
    with session_scope(invocation.engine) as session:
        run_id = resolve_run(session, run).id
        taken_from = relabel(session, run_id, new, move_label)
    moved = f" (taken from run {taken_from})" if taken_from is not None else ""
    click.echo(f"run {run_id}: " + (f"label {new!r}{moved}" if new else "no label"))


@runs.command("delete")
@click.argument("run")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@with_database("change")
def runs_delete(invocation: Invocation, run: str, yes: bool) -> None:
    """Delete RUN and its attempts (asks first; --yes does not).

    Levels stay, and so does their history in every other run; reruns of RUN
    stay too, no longer linked to it. A run still going must be cancelled first.
    """
    from packsolve.db.catalog import delete_run
    from packsolve.db.runs import resolve_run, status_counts
    from packsolve.db.session import session_scope

    engine = invocation.engine
    with session_scope(engine) as session:
        target = resolve_run(session, run)
        run_id, label, finished = target.id, target.label, target.finished_at is not None
        attempts = sum(status_counts(session, run_id).values())
    if not finished:
        raise PlanError(f"run {run_id} is still going: `packsolve cancel {run_id}` first, then delete it")
    what = f"run {run_id}" + (f" ({label})" if label else "") + f" and its {attempts} attempt(s)"
    if not yes:
        if not sys.stdin.isatty():
            raise PlanError(f"not deleting {what} without a confirmation: add --yes")
        click.confirm(f"Delete {what}? Levels and other runs stay.", abort=True, err=True)
    with session_scope(engine) as session:
        delete_run(session, run_id)
    err_console.print(f"deleted {what}", highlight=False, markup=False)
