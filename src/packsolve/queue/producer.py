"""Sending attempts to the broker as tasks, and checking that the broker can be reached."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Engine

from packsolve.db.session import session_scope
from packsolve.db.workers import signing_hosts
from packsolve.errors import BrokerError, UsageError
from packsolve.masking import mask_url
from packsolve.queue import protocol
from packsolve.queue.protocol import PendingAttempt


def check_broker(app: Any) -> None:
    """Connect to the app's broker once; raise BrokerError naming it if it cannot be reached."""
    try:
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=2, interval_start=0.2, interval_step=0.5)
    except Exception as exc:
        raise BrokerError(f"cannot reach the broker at {mask_url(app.conf.broker_url)}: {exc}") from None


def unsigned_sender(engine: Engine, app: Any) -> str | None:
    """Return why tasks sent with the app would all be refused (it has no task key and live workers run
    only signed tasks), or None."""
    if protocol.task_keys(app.conf.packsolve_settings).current is not None:
        return None
    with session_scope(engine) as session:
        hosts = signing_hosts(session)
    if not hosts:
        return None
    shown = ", ".join(hosts[:3]) + (f" and {len(hosts) - 3} more" if len(hosts) > 3 else "")
    return (
        f"no PACKSOLVE_TASK_KEY here, but this deployment's workers ({shown}) run only signed tasks: "
        "every task sent from here would be refused; set PACKSOLVE_TASK_KEY to the workers' key"
    )


def check_signing(engine: Engine, app: Any) -> None:
    """Raise UsageError (see unsigned_sender) if every task sent with the app would be refused unsigned."""
    problem = unsigned_sender(engine, app)
    if problem is not None:
        raise UsageError(problem)


def enqueue(
    app: Any,
    run_id: int,
    pending: Sequence[PendingAttempt],
    max_tries: int,
    chunk_size: int = 1,
    deployment: str | None = None,
) -> int:
    """Send the attempts as tasks of chunk_size over one connection; return tasks sent.

    deployment is the id of the database the run lives in: a worker of another database refuses
    the tasks instead of running them against the wrong one. Each task is
    signed with the task key of the app's settings (PACKSOLVE_TASK_KEY) when it is set.

    Messages are pipelined to Redis in batches (kombu's Producer.batch: one round
    trip per thousand tasks), so enqueueing 50,000 levels takes seconds.
    """
    if chunk_size < 1:
        raise ValueError("chunk size must be at least 1")
    queue = app.conf.task_default_queue
    key = protocol.task_keys(app.conf.packsolve_settings).current
    sent = 0
    with app.producer_or_acquire() as producer:
        # Declared once here instead of once per message (declare=[] below).
        producer.maybe_declare(app.amqp.queues[queue])
        with producer.batch(max_size=1000):
            for i in range(0, len(pending), chunk_size):
                chunk = pending[i : i + chunk_size]
                soft, hard = protocol.celery_limits(chunk[0].spec.limits, len(chunk))
                first = chunk[0].name or chunk[0].level_hash[:12]
                app.send_task(
                    protocol.TASK_NAME,
                    args=[protocol.encode(run_id, chunk, max_tries, deployment, key)],
                    soft_time_limit=soft,
                    time_limit=hard,
                    producer=producer,
                    declare=[],
                    # Celery would repr the whole payload for logs and Flower; this says as much.
                    argsrepr=f"run {run_id}: {len(chunk)} level(s) from {first}",
                    kwargsrepr="{}",
                )
                sent += 1
    return sent
