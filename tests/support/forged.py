"""Tasks put on the queue by hand, as anyone who can write to the broker can: forged, altered, replayed."""

from __future__ import annotations

import json
import os
import uuid
from typing import Any

from packsolve.queue.protocol import TASK_NAME


def _queue() -> str:
    return os.environ.get("PACKSOLVE_QUEUE") or "packsolve"


def publish_json(broker: str, payload: dict) -> None:
    """Put a JSON task on the queue as Celery's protocol 2 writes it (no pickle anywhere)."""
    from kombu import Connection, Exchange, Producer, Queue

    queue = Queue(_queue(), Exchange(_queue(), "direct"), routing_key=_queue())
    task_id = str(uuid.uuid4())
    body = json.dumps([[payload], {}, {"callbacks": None, "errbacks": None, "chain": None, "chord": None}])
    with Connection(broker) as conn:
        Producer(conn).publish(
            body,
            exchange=queue.exchange,
            routing_key=_queue(),
            declare=[queue],
            content_type="application/json",
            content_encoding="utf-8",
            headers={"lang": "py", "task": TASK_NAME, "id": task_id, "root_id": task_id, "argsrepr": "()"},
        )


def sent_bodies(database: str, run_id: int, key: str | None = None) -> list[dict[str, Any]]:
    """Return the bodies `packsolve submit --chunk-size 1` sent for the run's levels, in pack order.

    The same as the sender's (signed with key if given): what a broker writer who kept a copy of
    them can send again, or alter.
    """
    from sqlalchemy import select

    from packsolve.attempt import tries_cap
    from packsolve.db.models import Attempt, Run
    from packsolve.db.session import get_engine, session_scope
    from packsolve.db.workers import deployment_id
    from packsolve.planning import stored_pending
    from packsolve.queue.protocol import encode

    with session_scope(get_engine(database)) as session:
        run = session.get(Run, run_id)
        assert run is not None
        hashes = list(session.scalars(select(Attempt.level_hash).where(Attempt.run_id == run_id)))
        pending = stored_pending(session, run, hashes)  # in pack order
        deployment = deployment_id(session)
        max_tries = tries_cap(run.max_tries)
    secret = key.encode() if key else None
    return [json.loads(json.dumps(encode(run_id, [p], max_tries, deployment, secret))) for p in pending]
