"""`packsolve workers`: every worker process on record and its history, and the queues."""

from __future__ import annotations

import click

from packsolve.cli.group import Invocation
from packsolve.cli.options import emit, with_cluster


@click.command()
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@with_cluster("read")
def workers(invocation: Invocation, fmt: str) -> None:
    """Show the workers and their processes, and the queues: depth, oldest task, drain time.

    Each process: its worker and machine, concurrency, declared programs (with the SHA-256 of
    each executable), whether it runs only signed tasks, what it runs now, its lease's age, and
    its history (started, lease lapsed, claims taken back, stopped). A process whose lease
    lapsed with no clean exit (killed, its machine gone) is listed as lost, with the attempts
    taken back from it, for a week. Each queue: tasks waiting in the broker, attempts queued,
    the oldest one's age, attempts done per minute lately and the time to drain at that pace.
    With --format json: one document, {"workers": [...], "queues": [...]}.
    """
    from packsolve.db.session import session_scope, shown_database
    from packsolve.report.workers import process_rows, queue_rows, render_workers, worker_rows

    engine = invocation.engine
    with session_scope(engine) as session:
        processes = process_rows(session)
        queues = queue_rows(session, invocation.settings.queue, invocation.cluster.depth_of)
    data = {"workers": worker_rows(processes), "queues": queues}
    emit(data, fmt, lambda d: render_workers(d["workers"], d["queues"], shown_database(engine.url)))
