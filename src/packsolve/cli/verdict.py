"""The exit code a run that is over earns: 0, or 1 when a level ended in a status named by --fail-on.

`solve` and `resume` fail on nothing unless told (a timeout is a result, DESIGN.md); the commands that
wait for a run elsewhere (`submit --wait`, `status --wait`) fail by default on what went wrong with the
tool or the solver, not with a level's difficulty (WAIT_FAIL_ON), as pytest and GNU parallel do.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from packsolve.outcome import Status

# What --fail-on may name: every final status but solved (a solved level never fails a night).
FAILABLE = tuple(s.value for s in Status if s.final and s is not Status.SOLVED)
SOME_FAILED = 1
# The default of the commands that wait: failures of the tool or the solver, not of a level's difficulty.
WAIT_FAIL_ON = "error,wrong,lost"
NONE = "none"  # --fail-on none: exit 0 whatever the levels' outcomes


def _statuses(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[str, ...]:
    """Return the --fail-on statuses; fail (exit 2, one line) naming one that is not a final status."""
    if not value or value.strip() == NONE:
        return ()
    names = tuple(n.strip() for n in value.split(",") if n.strip())
    for name in names:
        if name not in FAILABLE:
            raise click.BadParameter(
                f"{name!r} is not a final status other than solved "
                f"(choose from: {', '.join(FAILABLE)}; or {NONE})"
            )
    return names


def fail_on_option(fn: Callable) -> Callable:
    """--fail-on for solve and resume: no status by default (exit 0 whatever the levels' outcomes)."""
    return click.option(
        "--fail-on",
        "fail_on",
        default=None,
        callback=_statuses,
        metavar="STATUS,...",
        help="Exit 1 once the run is over if any level ended in one of these statuses "
        "(e.g. timeout,error,wrong) [default: exit 0 whatever the levels' outcomes].",
    )(fn)


def wait_fail_on_option(fn: Callable) -> Callable:
    """--fail-on for the commands that wait for a run: WAIT_FAIL_ON by default, `none` for nothing."""
    return click.option(
        "--fail-on",
        "fail_on",
        default=WAIT_FAIL_ON,
        show_default=True,
        callback=_statuses,
        metavar="STATUS,...|none",
        help="Once the run is over, exit 1 if any level ended in one of these statuses; "
        "none: exit 0 whatever the levels' outcomes.",
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
    line = f"run {run_id}: {what} (--fail-on {','.join(fail_on)})"
    err_console.print(line, highlight=False, markup=False, soft_wrap=True)  # one line, however narrow
    return SOME_FAILED


def wait_for_end(
    engine: Any, run_id: int, interval: float = 2.0, say: Callable[[str], None] | None = None
) -> None:
    """Return once run_id is over: finished, cancelled, or a local run whose solve process is gone.

    Meanwhile say (if given) is told each new warning about who serves the run: its tasks refused
    and why, no live worker, a kind nobody offers (report.progress.serving_warnings). A warning is
    new when it differs from every one told before by more than its numbers.
    """
    import re
    import time

    from packsolve.db.local_runs import solver_alive
    from packsolve.db.models import Run
    from packsolve.db.session import session_scope
    from packsolve.report.progress import run_progress, serving_warnings

    told: set[str] = set()
    while True:
        with session_scope(engine) as session:
            run = session.get(Run, run_id)
            if run is None or run.finished_at is not None or solver_alive(run) is False:
                return
            if say is not None:
                for line in serving_warnings(run_progress(session, run)):
                    shape = re.sub(r"\d+", "N", line)
                    if shape not in told:
                        told.add(shape)
                        say(line)
        time.sleep(interval)


def warning_of(run_id: int) -> Callable[[str], None]:
    """Return a `say` for wait_for_end: each warning one yellow line on stderr, naming the run."""
    from packsolve.cli.options import err_console

    def say(line: str) -> None:
        text = f"run {run_id}: {line}"
        err_console.print(text, style="yellow", highlight=False, markup=False, soft_wrap=True)

    return say
