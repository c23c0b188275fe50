"""CLI commands for operating runs: scheduler (reconcile), rerun."""

from __future__ import annotations

import sys
import time
from typing import Any

import click

from packsolve.cli import (
    _print_summary,
    broker_option,
    cli,
    database_option,
    err_console,
    format_option,
    usage_errors,
)

RERUN_DEFAULT_STATUSES = "timeout,error,lost,memout"


@cli.command()
@click.option("--once", is_flag=True, help="One reconcile pass, then exit (for cron or after an incident).")
@click.option("--interval", type=float, default=30.0, show_default=True, help="Seconds between passes.")
@click.option(
    "--grace", type=float, default=60.0, show_default=True,
    help="Seconds past an attempt's deadline (or since it was queued) before it is presumed lost.",
)  # fmt: skip
@database_option
@broker_option
@usage_errors
def scheduler(once: bool, interval: float, grace: float, database_url: str | None, broker_url: str | None):
    """Reconcile distributed runs: requeue attempts whose task was lost, mark hopeless ones lost, finish runs.

    An attempt is requeued when it is running past its deadline (start + hard
    limit) plus --grace, or queued for longer than --grace with no task for it
    in the broker (a broker restarted without persistence drops its queue).
    Each requeue counts; past the run's --max-tries the attempt becomes `lost`
    with the reason. Several schedulers may run at once.
    """
    from packsolve.db.session import get_engine
    from packsolve.scheduler import run_scheduler
    from packsolve.worker import broker_url as resolve_broker
    from packsolve.worker import make_app

    if grace < 0 or interval <= 0:
        raise click.BadParameter("--grace must be >= 0 and --interval > 0")
    engine = get_engine(database_url)
    app = make_app(broker_url)
    broker = resolve_broker(broker_url)

    def report(r: Any) -> None:
        stamp = time.strftime("%H:%M:%S")
        if r.broker_error:
            err_console.print(
                f"[yellow]{stamp} broker not inspected ({r.broker_error}); queued attempts left alone[/]"
            )
        if r.requeued or r.lost or r.finished or once:
            err_console.print(f"{stamp} requeued {r.requeued}, lost {r.lost}, runs finished {r.finished}")

    def failed(exc: BaseException) -> None:
        from packsolve.db.session import redact

        first = "".join(redact(str(getattr(exc, "orig", None) or exc)).splitlines()[:1])
        stamp = time.strftime("%H:%M:%S")
        err_console.print(f"[yellow]{stamp} pass failed ({type(exc).__name__}: {first}); retrying[/]")

    try:
        run_scheduler(engine, app, broker, grace, interval, once, report, failed)
    except KeyboardInterrupt:
        sys.exit(130)


@cli.command()
@click.argument("run")
@click.option(
    "--status",
    "statuses",
    default=RERUN_DEFAULT_STATUSES,
    show_default=True,
    help="Comma-separated statuses of the parent's attempts to run again.",
)
@click.option("--kind", default=None, help="Only levels of this kind.")
@click.option("--heuristic", default=None, help="Solver to use [default: parent's].")
@click.option("--time-limit", type=float, default=None, help="Wall seconds per level [default: parent's].")
@click.option("--node-limit", type=int, default=None, help="Expanded nodes per level [default: parent's].")
@click.option("--memory-limit", type=int, default=None, help="MB per level [default: parent's].")
@click.option("--label", default=None, help="A name for the child run.")
@click.option("--local", "local", flag_value=True, default=None, help="Run on a local process pool.")
@click.option("--distributed", "local", flag_value=False, help="Enqueue for Celery workers.")
@click.option("--jobs", "-j", type=int, default=None, help="Local processes [default: number of cores].")
@click.option("--max-tries", type=int, default=None, help="Deliveries before lost [default: 5].")
@format_option
@database_option
@broker_option
@usage_errors
def rerun(run: str, statuses: str, local: bool | None, jobs: int | None, max_tries: int | None, fmt: str,
          database_url: str | None, broker_url: str | None, **opts: Any):  # fmt: skip
    """Run RUN's failed levels again as a child run (linked to RUN); print the child's id.

    By default the child runs where the parent did (local or distributed) with
    the parent's heuristic and limits; change them to see what another
    heuristic or more time buys (`packsolve report compare RUN CHILD`).
    """
    from packsolve.db.session import get_engine, redact, session_scope
    from packsolve.outcome import Status
    from packsolve.scheduler import (
        DEFAULT_MAX_TRIES,
        choose_chunk_size,
        create_rerun,
        enqueue,
        hardest_first,
        pending_specs,
    )

    wanted = [s.strip() for s in statuses.split(",") if s.strip()]
    valid = {s.value for s in Status if s.final}
    bad = [s for s in wanted if s not in valid]
    if not wanted or bad:
        raise click.BadParameter(
            f"unknown final status {', '.join(bad) or '(none)'}; choose from {', '.join(sorted(valid))}"
        )
    engine = get_engine(database_url)
    with session_scope(engine) as session:
        child, parent_mode, limits = create_rerun(
            session, run, wanted, opts["kind"], opts["heuristic"], opts["time_limit"], opts["node_limit"],
            opts["memory_limit"], opts["label"], max_tries, [redact(a) for a in sys.argv[1:]],
        )  # fmt: skip
        specs = pending_specs(session, child, limits)
        total = len(specs)
    local = parent_mode == "local" if local is None else local
    if local:
        import os

        from packsolve.localpool import run_local

        jobs = jobs or os.cpu_count() or 1
        err_console.print(f"run {child}: rerun of {run}, {total} level(s), {jobs} process(es)")
        try:
            run_local(engine, child, specs, jobs)
        except KeyboardInterrupt:
            from packsolve.db.queries import cancel_pending

            with session_scope(engine) as session:
                cancel_pending(session, child, "cancelled: the local run was interrupted")
            sys.exit(130)
        _print_summary(engine, child, fmt)
        click.echo(child)
        return
    from packsolve.worker import make_app

    app = make_app(broker_url)
    with session_scope(engine) as session:
        specs = hardest_first(session, child, specs)
        chunk = choose_chunk_size(session, specs)
    sent = enqueue(app, child, specs, max_tries or DEFAULT_MAX_TRIES, chunk)
    with session_scope(engine) as session:
        from packsolve.db.queries import mark_sent

        mark_sent(session, child)
    err_console.print(f"run {child}: rerun of {run}, {total} level(s), {sent} task(s) enqueued")
    click.echo(child)
