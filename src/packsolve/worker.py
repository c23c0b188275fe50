"""`packsolve worker`: the Celery app with packsolve's one task, and starting it.

Each pool process makes its queue.consumer.WorkerProcess at its start, from the settings the
app's configuration carries; the task only hands its payload to it: admitted (signature,
database, declared programs), then run. A task this worker cannot serve goes back to the queue's
tail after a wait (its refusal recorded, see consumer.refuse), one that nobody
can is dropped, each with one line in the log.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from celery import Celery, signals
from celery.exceptions import Reject

from packsolve.execution import cores
from packsolve.external.declaration import Solvers
from packsolve.queue import consumer, protocol
from packsolve.queue.admission import Refused
from packsolve.queue.app import make_app
from packsolve.queue.revokes import request_class
from packsolve.settings import Settings

PROCESS_INIT = "packsolve-process-init"  # the dispatch id of the pool processes' start handler


def worker_app(settings: Settings, hostname: str, declared: Solvers | None = None) -> Celery:
    """Return the app of `packsolve worker`: make_app's settings plus the attempt task.

    hostname: the worker's node name, recorded on every attempt; declared: the solver
    programs this worker's owner declared, the only ones it runs. Each pool process
    makes its WorkerProcess of these at its start.
    """
    app = make_app(settings=settings)
    # A pool process this worker kills on request (revoke with terminate; remote control must be
    # on) costs its attempts no try (queue.revokes).
    request = request_class(settings.database_url, hostname, settings.db_patience)

    # max_retries None: a refused task is sent back (retry) as often as it takes; consumer.refuse drops it.
    @app.task(
        name=protocol.TASK_NAME,
        bind=True,
        acks_late=True,
        reject_on_worker_lost=True,
        Request=request,
        max_retries=None,
    )
    def attempt(self: Any, payload: Any) -> None:
        process = consumer.this_process()
        try:
            task = process.admit(payload)
        except Refused as refused:
            back_in = process.refuse(payload, refused, self.request.retries) if refused.requeue else None
            if back_in is None:
                raise Reject(refused.reason, requeue=False) from None
            # Sent again to the queue's tail with a countdown, this delivery acknowledged: never back
            # at the head (RabbitMQ would redeliver it at once), never a pool process waiting.
            raise self.retry(countdown=back_in) from None
        redelivered = bool((self.request.delivery_info or {}).get("redelivered"))
        process.run_task(task, redelivered)

    pinned = _cpu_sets(settings)

    def process_init(**_: Any) -> None:
        """Pin this pool process to its CPUs (pinned), forget engines inherited from the parent (a pooled
        connection must never cross a fork), then make this pool process's WorkerProcess, which takes
        its lease at once, so `status` sees a live worker before it has any task."""
        from billiard.process import current_process

        from packsolve.db.session import forget_engines

        # Celery numbers its pool processes 0 .. concurrency-1, and a process it starts again in
        # place of one that ended takes that one's number: its CPUs too.
        index = getattr(current_process(), "index", None)
        if pinned and index is not None and index < len(pinned):
            cores.pin(pinned[index])
        forget_engines()
        consumer.start_process(settings, hostname, declared)

    # One handler, this app's: an app made again in this process (a test) replaces the last one's.
    signals.worker_process_init.disconnect(dispatch_uid=PROCESS_INIT)
    signals.worker_process_init.connect(process_init, weak=False, dispatch_uid=PROCESS_INIT)
    return app


def _cpu_sets(settings: Settings) -> list[frozenset[int]]:
    """Return the CPUs of each pool process, by its number (empty: not pinned)."""
    if settings.cpus_per_attempt is None:
        return []
    usable = cores.physical_cores(cores.usable_cpus())
    return cores.cpu_sets(settings.cpus_per_attempt, settings.concurrency or 1, usable)


# How Celery's line for a task sent again (celery.app.trace.LOG_RETRY) begins.
RETRY_LINE = "Task %(name)s[%(id)s] retry"


class _QuietRejects(logging.Filter):
    """Drop Celery's own line for each task refused (rejected, or sent back: retry): the consumer's line
    said why, once a minute."""

    def filter(self, record: logging.LogRecord) -> bool:
        if (getattr(record, "data", None) or {}).get("description") == "rejected":
            return False
        return not str(record.msg).startswith(RETRY_LINE)


def start_worker(
    settings: Settings, hostname: str | None, loglevel: str, declared: Solvers | None = None
) -> None:
    """Run a Celery worker on this deployment's queue until it is stopped, as settings say.

    It runs only the programs declared (and built-in heuristics of installed kinds).
    """
    from celery.utils.nodenames import default_nodename

    argv = [
        "worker",
        f"--loglevel={loglevel}",
        "-Q",
        settings.queue,
        "--pool=prefork",
        "--without-gossip",
        "--without-mingle",
        f"--concurrency={settings.concurrency or os.cpu_count() or 1}",
    ]
    if not settings.worker_remote_control:
        # Heartbeats are events only a monitor (Flower, over remote control) reads. They are sent
        # from the event loop, which each one blocks while the broker is down.
        argv.append("--without-heartbeat")
    if hostname:
        argv.append(f"--hostname={hostname}")
    logging.getLogger("celery.app.trace").addFilter(_QuietRejects())
    # The node name Celery gives this worker, recorded on every attempt its pool processes run.
    worker_app(settings, default_nodename(hostname), declared).worker_main(argv)


@signals.worker_process_shutdown.connect
def _stop_process(**_: Any) -> None:
    """Write what this pool process still holds before it exits (warm shutdown, max-tasks-per-child),
    then end its lease, so the scheduler takes back at once anything it still held."""
    consumer.stop_process()
