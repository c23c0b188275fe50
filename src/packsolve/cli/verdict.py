"""The exit code a run that is over earns: 0, or 1 when a level ended in a status named by --fail-on."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from packsolve.outcome import Status

# What --fail-on may name: every final status but solved (a solved level never fails a night).
FAILABLE = tuple(s.value for s in Status if s.final and s is not Status.SOLVED)
SOME_FAILED = 1


def _statuses(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[str, ...]:
    """Return the --fail-on statuses; fail (exit 2, one line) naming one that is not a final status."""
    if not value:
        return ()
    names = tuple(n.strip() for n in value.split(",") if n.strip())
    for name in names:
        if name not in FAILABLE:
            raise click.BadParameter(
                f"{name!r} is not a final status other than solved (choose from: {', '.join(FAILABLE)})"
            )
    return names


def fail_on_option(fn: Callable) -> Callable:
    return click.option(
        "--fail-on",
        "fail_on",
        default=None,
        callback=_statuses,
        metavar="STATUS,...",
        help="Exit 1 once the run is over if any level ended in one of these statuses "
        "(e.g. timeout,error,wrong) [default: exit 0 whatever the levels' outcomes].",
    )(fn)


def exit_code(engine: Any, run_id: int, fail_on: tuple[str, ...]) -> int:
    """Return the exit code of run_id, over: SOME_FAILED (said on stderr) if a level is in fail_on, else 0."""
    if not fail_on:
        return 0
    from packsolve.cli.options import err_console
    from packsolve.db.runs import status_counts
    from packsolve.db.session import session_scope

    with session_scope(engine) as session:
        counts = status_counts(session, run_id)
    failed = {s: counts[s] for s in fail_on if counts.get(s)}
    if not failed:
        return 0
    what = ", ".join(f"{n} level(s) ended {s}" for s, n in failed.items())
    err_console.print(f"run {run_id}: {what} (--fail-on {','.join(fail_on)})", highlight=False, markup=False)
    return SOME_FAILED


def wait_for_end(engine: Any, run_id: int, interval: float = 2.0) -> None:
    """Return once run_id is over: finished, cancelled, or a local run whose solve process is gone."""
    import time

    from packsolve.db.local_runs import solver_alive
    from packsolve.db.models import Run
    from packsolve.db.session import session_scope

    while True:
        with session_scope(engine) as session:
            run = session.get(Run, run_id)
            if run is None or run.finished_at is not None or solver_alive(run) is False:
                return
        time.sleep(interval)
