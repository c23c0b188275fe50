"""`packsolve worker`: the Celery app with packsolve's one task, and starting it.

The task only hands its payload to queue.admission (signature, database, declared programs),
then to queue.consumer, which does the work; a task this worker cannot serve goes back to the broker
unacknowledged, one that nobody can is dropped, each with one line in the log.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

from celery import Celery, signals
from celery.exceptions import Reject

from packsolve.queue import admission, consumer, protocol
from packsolve.queue.app import make_app
from packsolve.solvers import Solvers


def worker_app(broker: str | None = None, declared: Solvers | None = None) -> Celery:
    """Return the app of `packsolve worker`: make_app's settings plus the attempt task.

    declared: the solver programs this worker's owner declared, the only ones it runs.
    """
    app = make_app(broker)
    programs = dict(declared or {})
    keys = protocol.task_keys()

    @app.task(name=protocol.TASK_NAME, bind=True, acks_late=True, reject_on_worker_lost=True)
    def attempt(self: Any, payload: Any) -> None:
        try:
            task = admission.admit(payload, programs, keys, consumer.with_db_retry)
        except admission.Refused as refused:
            if not refused.requeue:
                admission.REFUSALS.drop(refused.reason)
                raise Reject(refused.reason, requeue=False) from None
            time.sleep(admission.REFUSALS.refuse(refused.reason))
            # Back to the broker, not acknowledged: a worker that can run it will.
            raise Reject(refused.reason, requeue=True) from None
        admission.REFUSALS.accepted()
        hostname = self.request.hostname or f"worker@{os.uname().nodename}"
        redelivered = bool((self.request.delivery_info or {}).get("redelivered"))
        consumer.run_task(task, hostname, redelivered)

    return app


class _QuietRejects(logging.Filter):
    """Drop Celery's own line for each task refused: the consumer's line said why, once a minute."""

    def filter(self, record: logging.LogRecord) -> bool:
        return (getattr(record, "data", None) or {}).get("description") != "rejected"


def start_worker(
    broker: str | None,
    concurrency: int | None,
    hostname: str | None,
    loglevel: str,
    declared: Solvers | None = None,
) -> None:
    """Run a Celery worker on this deployment's queue until it is stopped (PACKSOLVE_DATABASE_URL set).

    It runs only the programs declared (and built-in heuristics of installed kinds).
    """
    from celery.utils.nodenames import default_nodename

    global _HOSTNAME
    _HOSTNAME = default_nodename(hostname)  # the node name Celery uses; its pool processes inherit it
    argv = [
        "worker",
        f"--loglevel={loglevel}",
        "-Q",
        protocol.queue_name(),
        "--pool=prefork",
        "--without-gossip",
        "--without-mingle",
        f"--concurrency={concurrency or os.cpu_count() or 1}",
    ]
    if hostname:
        argv.append(f"--hostname={hostname}")
    logging.getLogger("celery.app.trace").addFilter(_QuietRejects())
    worker_app(broker, declared).worker_main(argv)


@signals.worker_process_shutdown.connect
def _flush_results(**_: Any) -> None:
    """Write what this pool process still holds before it exits (warm shutdown, max-tasks-per-child).

    Then end its lease, so the scheduler takes back at once anything it still held.
    """
    consumer.flush_results()
    consumer.retire_lease()


_HOSTNAME: str | None = None


@signals.worker_process_init.connect
def _fresh_engines(**_: Any) -> None:
    """Forget engines inherited from the parent (a pooled connection must never cross a fork), then
    take this pool process's lease, so `status` sees a live worker before it has any task."""
    from packsolve.db.session import forget_engines

    forget_engines()
    if _HOSTNAME is not None:
        consumer.take_lease_early(_HOSTNAME)
