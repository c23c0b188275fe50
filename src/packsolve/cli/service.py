"""Commands that run the distributed services: worker, scheduler, and the database schema."""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import click

from packsolve.bounds import COUNT, TIME_LIMIT_S, WHOLE_SECONDS
from packsolve.cli.options import (
    broker_option,
    database_option,
    err_console,
    handle_errors,
    solvers_option,
    warn_without_task_key,
    within,
)
from packsolve.errors import BrokerError


@click.command()
@click.option(
    "--concurrency",
    "-c",
    type=within(COUNT),
    default=None,
    envvar="PACKSOLVE_CONCURRENCY",
    show_envvar=True,
    help="Processes (0 or unset: the number of cores).",
)
@click.option(
    "--hostname", "-n", default=None, help="Worker name, recorded on every attempt [default: celery@HOST]."
)
@click.option("--loglevel", "-l", default="INFO", show_default=True)
@click.option(
    "--visibility-timeout", type=within(WHOLE_SECONDS), default=None, envvar="PACKSOLVE_VISIBILITY_TIMEOUT",
    show_envvar=True,
    help="Seconds before Redis redelivers a task [default: 43200]; submitters must see the same value.",
)  # fmt: skip
@solvers_option
@database_option
@broker_option
@handle_errors
def worker(concurrency, hostname, loglevel, visibility_timeout, solvers_file, database_url, broker_url):
    """Start a Celery worker that runs packsolve attempts.

    It runs the installed kinds' heuristics and only the solver programs declared
    here (--solvers, else ./packsolve.toml): a task names a program and the digest
    of its declaration, never a command. With PACKSOLVE_TASK_KEY set it runs only
    tasks signed with it (or with a key of PACKSOLVE_TASK_KEYS_OLD).
    """
    from packsolve.db.session import database_url as resolve_db
    from packsolve.db.session import get_engine
    from packsolve.solvers import load_solvers
    from packsolve.worker import start_worker

    url = resolve_db(database_url)
    if not (database_url or os.environ.get("PACKSOLVE_DATABASE_URL")):
        # The usual mistake on a second machine: its tasks come from another database. Such tasks
        # are refused (deployment id), but the user should not have to find that in the log.
        err_console.print(
            f"[yellow]no PACKSOLVE_DATABASE_URL or --database-url: this worker uses the SQLite file "
            f"{url.removeprefix('sqlite:///')}; it refuses tasks sent from any other database[/]"
        )
    os.environ["PACKSOLVE_DATABASE_URL"] = url  # the pool processes read it
    if visibility_timeout:
        os.environ["PACKSOLVE_VISIBILITY_TIMEOUT"] = str(visibility_timeout)  # read by queue.protocol
    declared = load_solvers(solvers_file)
    if declared:
        names = ", ".join(sorted(declared))
        err_console.print(f"solver programs declared on this worker: {names}", highlight=False, markup=False)
    warn_without_task_key("this worker runs tasks nobody signed")
    get_engine(url)  # fail early, and migrate, before taking tasks
    start_worker(broker_url, concurrency, hostname, loglevel, declared)


@click.command()
@click.option("--once", is_flag=True, help="One reconcile pass, then exit (for cron or after an incident).")
@click.option(
    "--interval", type=within(TIME_LIMIT_S), default=30.0, show_default=True, help="Seconds between passes."
)
@click.option(
    "--grace", type=within(TIME_LIMIT_S), default=60.0, show_default=True,
    help="Seconds past its deadline (claim + hard limit) before a running attempt is taken back "
    "whoever holds it; also the longest wait before an empty queue counts as lost tasks.",
)  # fmt: skip
@database_option
@broker_option
@handle_errors
def scheduler(once: bool, interval: float, grace: float, database_url: str | None, broker_url: str | None):
    """Reconcile distributed runs: requeue attempts whose worker or task was lost, finish runs.

    Every worker process keeps a lease (PACKSOLVE_LEASE_TTL seconds, default
    30, renewed every quarter of it). An attempt it claimed, or holds in its
    chunk, is requeued once that lease has lapsed, whatever the time limit:
    within the lease plus one --interval of the worker's death. Queued attempts
    are sent again when the broker's queue is empty yet they were sent over
    5 s ago and no live worker holds them (a broker restarted without
    persistence, a purged queue). An attempt started --max-tries times becomes
    `lost`; one of a cancelled run becomes `cancelled`. Runs whose submit has
    not finished sending are left alone. Several schedulers may run at once.
    With --once, a broker that cannot be asked is an error (exit 1).
    """
    from packsolve.db.session import redact
    from packsolve.queue.app import make_app
    from packsolve.queue.protocol import broker_url as resolve_broker
    from packsolve.scheduler import run_scheduler

    if grace < 0 or interval <= 0:
        raise click.BadParameter("--grace must be >= 0 and --interval > 0")
    app = make_app(broker_url)
    broker = resolve_broker(broker_url)

    def report(r: Any) -> None:
        stamp = time.strftime("%H:%M:%S")
        if r.broker_error:
            err_console.print(
                f"[yellow]{stamp} broker not asked ({r.broker_error}); queued attempts left alone[/]"
            )
        if r.requeued or r.lost or r.cancelled or r.finished or r.forgotten or once:
            extra = (f", cancelled {r.cancelled}" if r.cancelled else "") + (
                f", unacked cleared {r.forgotten}" if r.forgotten else ""
            )
            err_console.print(
                f"{stamp} requeued {r.requeued}, lost {r.lost}, runs finished {r.finished}{extra}"
            )

    def failed(exc: BaseException) -> None:
        first = "".join(redact(str(getattr(exc, "orig", None) or exc)).splitlines()[:1])
        stamp = time.strftime("%H:%M:%S")
        err_console.print(f"[yellow]{stamp} pass failed ({type(exc).__name__}: {first}); retrying[/]")

    try:
        engine = _engine_when_reachable(database_url, once, interval, failed)
        result = run_scheduler(engine, app, broker, grace, interval, once, report, failed)
    except KeyboardInterrupt:
        sys.exit(130)
    if once and result.broker_error:
        # cron must see it: nothing that needs the broker was repaired.
        raise BrokerError(f"the broker at {redact(broker)} could not be asked: {result.broker_error}")


def _engine_when_reachable(database_url: str | None, once: bool, interval: float, failed: Any) -> Any:
    """Return the engine (migrated); in the loop a database down at start is waited for like a failed pass."""
    from sqlalchemy.exc import OperationalError

    from packsolve.db.session import get_engine

    while True:
        try:
            return get_engine(database_url, service=True)
        except OperationalError as exc:  # the scheduler must outlive the incidents it repairs
            if once:
                raise
            failed(exc)
            time.sleep(interval)


@click.group()
def db() -> None:
    """Database schema management."""


@db.command("upgrade")
@database_option
@handle_errors
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
