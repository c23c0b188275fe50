"""Commands that run the distributed services: worker, scheduler, and the database schema."""

from __future__ import annotations

import functools
import sys
import time
from dataclasses import replace
from typing import Any

import click

from packsolve.bounds import COUNT, TIME_LIMIT_S, WHOLE_SECONDS
from packsolve.cli.durations import duration_within
from packsolve.cli.group import Invocation
from packsolve.cli.options import (
    cpus_per_attempt_option,
    err_console,
    setting_option,
    solvers_option,
    warn_without_task_key,
    with_cluster,
    with_database,
    within,
)
from packsolve.errors import BrokerError
from packsolve.settings import Settings


@click.command()
@setting_option(
    "--concurrency",
    "-c",
    type=within(COUNT),
    help="Processes (0 or unset: the number of cores) [env: PACKSOLVE_CONCURRENCY].",
)
@cpus_per_attempt_option
@click.option(
    "--hostname", "-n", default=None, help="Worker name, recorded on every attempt [default: celery@HOST]."
)
@click.option("--loglevel", "-l", default="INFO", show_default=True)
@setting_option(
    "--visibility-timeout",
    type=within(WHOLE_SECONDS),
    help="Seconds before Redis redelivers a task [default: 43200; env: PACKSOLVE_VISIBILITY_TIMEOUT]; "
    "submitters must see the same value.",
)
@solvers_option
@with_cluster("create")
def worker(invocation: Invocation, hostname: str | None, loglevel: str, solvers_file: str | None):
    """Start a Celery worker that runs packsolve attempts.

    It runs the installed kinds' heuristics and only the solver programs declared
    here (--solvers, else ./packsolve.toml): a task names a program and the digest
    of its declaration, never a command. With PACKSOLVE_TASK_KEY set it runs only
    tasks signed with it (or with a key of PACKSOLVE_TASK_KEYS_OLD).
    """
    from packsolve.db.session import database_url as resolve_db
    from packsolve.execution import cores
    from packsolve.external.declaration import load_solvers
    from packsolve.masking import mask_url
    from packsolve.request import check_jobs
    from packsolve.settings import DEFAULT
    from packsolve.worker import start_worker

    # Every pool process uses this very database, whichever source named it.
    database = resolve_db(invocation.settings.database_url)
    settings = replace(invocation.settings, database_url=database)
    per = settings.cpus_per_attempt
    if per is not None:
        # Pinned, the processes follow the CPUs each gets, unless given (and then they must fit).
        concurrency = check_jobs(settings.concurrency or None, per, "--concurrency")
        settings = replace(settings, concurrency=concurrency)
        sets = cores.cpu_sets(per, concurrency, cores.physical_cores(cores.usable_cpus()))
        err_console.print(
            f"{concurrency} pool process(es), each pinned to CPUs of its own: {cores.shown(sets)}"
        )
    if settings.source("database_url") == DEFAULT:
        # The usual mistake on a second machine: its tasks come from another database. Such tasks
        # are refused (deployment id), but the user should not have to find that in the log.
        err_console.print(
            f"[yellow]no PACKSOLVE_DATABASE_URL or --database-url: this worker uses the SQLite file "
            f"{database.removeprefix('sqlite:///')}; it refuses tasks sent from any other "
            "database[/]"
        )
    # Said at every start: which database the results go to, and which broker and queue feed it.
    err_console.print(
        f"this worker writes to {mask_url(database)} "
        f"({settings.source('database_url')}), takes tasks from {mask_url(settings.broker_url)} "
        f"queue {settings.queue}",
        highlight=False,
        markup=False,
        soft_wrap=True,  # one line in a log, whatever the terminal's width
    )
    declared = load_solvers(solvers_file)
    if declared:
        names = ", ".join(sorted(declared))
        err_console.print(f"solver programs declared on this worker: {names}", highlight=False, markup=False)
    warn_without_task_key("this worker runs tasks nobody signed", settings)
    if settings.worker_remote_control:
        err_console.print(
            "[yellow]remote control is on (PACKSOLVE_WORKER_REMOTE_CONTROL): anyone who can write to the "
            "broker can list this worker's tasks, kill them and stop it[/]"
        )
    invocation.engine  # noqa: B018 (opened now: fail early, and migrate, before taking tasks)
    start_worker(settings, hostname, loglevel, declared)


@click.command()
@click.option("--once", is_flag=True, help="One reconcile pass, then exit (for cron or after an incident).")
@click.option(
    "--interval",
    type=duration_within(TIME_LIMIT_S),
    default=30.0,
    show_default=True,
    help="Seconds between passes (or 500ms, 2s, 1m).",
)
@click.option(
    "--grace",
    type=duration_within(TIME_LIMIT_S),
    default=60.0,
    show_default=True,
    help="Seconds past its deadline (claim + hard limit) before a running attempt is taken back "
    "whoever holds it; also the longest wait before an empty queue counts as lost tasks.",
)
@with_cluster()
def scheduler(invocation: Invocation, once: bool, interval: float, grace: float):
    """Reconcile distributed runs: requeue attempts whose worker or task was lost, finish runs.

    Every worker process keeps a lease (PACKSOLVE_LEASE_TTL seconds, default
    30, renewed every quarter of it). An attempt it claimed, or holds in its
    chunk, is requeued once that lease has lapsed, whatever the time limit:
    within the lease plus one --interval of the worker's death. Queued attempts
    no live worker holds are sent again when the broker's queue is empty yet
    they were sent over 5 s ago, or when they were sent before a later run whose
    attempts workers have started (the broker hands tasks out in order): a broker
    restarted without persistence, a purged queue. An attempt started --max-tries times becomes
    `lost`; one of a cancelled run becomes `cancelled`. A queued attempt every live
    worker refused (a kind, heuristic or program none has) becomes `error`, saying
    why. Runs whose submit has not finished sending are left alone. Several
    schedulers may run at once. With --once, a broker that cannot be asked is an
    error (exit 1). Without PACKSOLVE_TASK_KEY while live workers run only signed
    tasks, it refuses to start (exit 2): they would refuse all it sends.
    """
    from packsolve.masking import mask_text
    from packsolve.scheduler import Passes, engine_when_reachable, run_scheduler

    if grace < 0 or interval <= 0:
        raise click.BadParameter("--grace must be >= 0 and --interval > 0")
    settings, cluster = invocation.settings, invocation.cluster
    if not once:  # a loop prints only when it repairs something: say at once that it is up, and where
        _say_started(settings, interval, grace)
    passes = Passes(interval, once, functools.partial(_report_pass, once=once), _report_failure)
    try:
        # Its own engine, not the Invocation's: a scheduler waits for a database down at its start.
        engine = engine_when_reachable(settings.database_url, passes)
        result = run_scheduler(engine, cluster, grace, passes)
    except KeyboardInterrupt:
        sys.exit(130)
    if once and result.broker_error:
        # cron must see it: nothing that needs the broker was repaired.
        raise BrokerError(
            f"the broker at {mask_text(settings.broker_url)} could not be asked: {result.broker_error}"
        )


def _say_started(settings: Settings, interval: float, grace: float) -> None:
    """Print the one line a scheduler starts with: its database, its broker and queue, how often it passes."""
    from packsolve.db.session import database_url as resolve_db
    from packsolve.masking import mask_url

    err_console.print(
        f"scheduler: database {mask_url(resolve_db(settings.database_url))}, broker "
        f"{mask_url(settings.broker_url)} queue {settings.queue}, a pass every {interval:g} s "
        f"(grace {grace:g} s); a line for each pass that repairs something",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )


def _report_pass(r: Any, once: bool) -> None:
    """Print a line for a pass that did something (any pass with --once), one if the broker was not asked."""
    stamp = time.strftime("%H:%M:%S")
    if r.broker_error:
        err_console.print(
            f"[yellow]{stamp} broker not asked ({r.broker_error}); queued attempts left alone[/]"
        )
    if r.requeued or r.lost or r.cancelled or r.finished or r.forgotten or r.given_up or r.lapsed or once:
        extra = (
            (f", cancelled {r.cancelled}" if r.cancelled else "")
            + (f", worker processes lost {r.lapsed} (`packsolve workers`)" if r.lapsed else "")
            + (f", unacked cleared {r.forgotten}" if r.forgotten else "")
            + (f", given up (refused by every worker) {r.given_up}" if r.given_up else "")
        )
        err_console.print(f"{stamp} requeued {r.requeued}, lost {r.lost}, runs finished {r.finished}{extra}")


def _report_failure(exc: BaseException) -> None:
    """Print one line for a pass (or a first connection) that failed and is tried again."""
    from packsolve.masking import mask_text

    first = "".join(mask_text(str(getattr(exc, "orig", None) or exc)).splitlines()[:1])
    stamp = time.strftime("%H:%M:%S")
    err_console.print(f"[yellow]{stamp} pass failed ({type(exc).__name__}: {first}); retrying[/]")


@click.group()
def db() -> None:
    """Database schema management."""


@db.command("upgrade")
@with_database("create")
def db_upgrade(invocation: Invocation) -> None:
    """Apply the Alembic migrations up to the newest revision."""
    from packsolve.db.migrate import current_revision, upgrade
    from packsolve.db.session import database_url as resolve_db
    from packsolve.db.session import make_engine
    from packsolve.masking import mask_url

    url = resolve_db(invocation.settings.database_url)
    engine = make_engine(url)  # not the Invocation's: upgrading is what this command is for
    applied = upgrade(engine)
    state = "upgraded to" if applied else "already at"
    click.echo(f"{mask_url(url)}: {state} revision {current_revision(engine)}")
