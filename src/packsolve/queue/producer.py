"""Sending attempts to the broker as tasks, and checking that the broker can be reached."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

from packsolve.errors import BrokerError
from packsolve.execution import AttemptSpec
from packsolve.queue import protocol


def check_broker(app: Any) -> None:
    """Connect to the app's broker once; raise BrokerError naming it if it cannot be reached."""
    try:
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=2, interval_start=0.2, interval_step=0.5)
    except Exception as exc:
        raise BrokerError(
            f"cannot reach the broker at {protocol.shown_broker(app.conf.broker_url)}: {exc}"
        ) from None


def enqueue(
    app: Any,
    run_id: int,
    specs: Sequence[tuple[str, str, AttemptSpec]],
    max_tries: int,
    chunk_size: int = 1,
    deployment: str | None = None,
) -> int:
    """Send (level hash, name, spec) attempts as tasks of chunk_size over one connection; return tasks sent.

    deployment is the id of the database the run lives in: a worker of another database refuses
    the tasks (unacknowledged) instead of running them against the wrong one. Each task is
    signed with PACKSOLVE_TASK_KEY when it is set (protocol.task_keys).

    Messages are pipelined to Redis in batches (one round trip per thousand
    tasks) where kombu supports it, so enqueueing 50,000 levels takes seconds.
    """
    if chunk_size < 1:
        raise ValueError("chunk size must be at least 1")
    queue = app.conf.task_default_queue
    key = protocol.task_keys().current
    sent = 0
    with app.producer_or_acquire() as producer:
        # Declared once here instead of once per message (declare=[] below).
        producer.maybe_declare(app.amqp.queues[queue])
        batch = getattr(producer, "batch", None)  # kombu >= 5.7
        with batch(max_size=1000) if batch is not None else contextlib.nullcontext():
            for i in range(0, len(specs), chunk_size):
                chunk = specs[i : i + chunk_size]
                soft, hard = protocol.celery_limits(chunk[0][2].limits, len(chunk))
                app.send_task(
                    protocol.TASK_NAME,
                    args=[
                        protocol.encode(run_id, [(h, s) for h, _name, s in chunk], max_tries, deployment, key)
                    ],
                    soft_time_limit=soft,
                    time_limit=hard,
                    producer=producer,
                    declare=[],
                    # Celery would repr the whole payload for logs and Flower; this says as much.
                    argsrepr=f"run {run_id}: {len(chunk)} level(s) from {chunk[0][1]}",
                    kwargsrepr="{}",
                )
                sent += 1
    return sent
