"""What the reconcile reads of a Redis broker beyond its queue's depth (queue.app.Cluster.depth):
its unacknowledged leftovers.

The database decides what was sent and who holds it (db.reconcile); from the
broker the scheduler only needs to know whether any task still waits in the
queue (Cluster.depth), and which of Redis's unacknowledged tasks it may delete.

Kombu's Redis transport keeps delivered-but-unacknowledged messages in the
``unacked`` hash, stamped in the ``unacked_index`` sorted set, and puts them
back in the queue only after the visibility timeout (12 hours). A killed
worker's messages would sit there that long: once their attempts are final or
were sent again, the scheduler deletes them (forget_unacked).
"""

from __future__ import annotations

import functools
import json
import logging
from dataclasses import dataclass

from packsolve.errors import BrokerError
from packsolve.queue.protocol import Task, decode_message

log = logging.getLogger("packsolve.scheduler")

# Kombu's names (kombu.transport.redis.Channel) for the unacknowledged messages.
UNACKED = "unacked"
UNACKED_INDEX = "unacked_index"
_PAGE = 1000


class BrokerUnreadable(BrokerError):
    """The broker cannot be asked (unreachable, or refused the question); nothing can be presumed lost."""


@dataclass(frozen=True)
class Unacked:
    """One of our tasks delivered by Redis and not acknowledged: its attempts (run id, level hash,
    heuristic: a run may try a level with several), and when it was delivered."""

    tag: str
    attempts: tuple[tuple[int, str, str], ...]
    delivered: float | None  # epoch seconds
    deployment: str | None  # the database that sent it


def unacked_messages(broker: str, queue: str) -> list[Unacked]:
    """Return the tasks of our queue in a Redis broker's unacknowledged set ([] for other brokers).

    Kombu keeps one such set per Redis database, shared by every queue in it:
    entries of other queues (another deployment sharing the Redis) are left out.
    Raise BrokerUnreadable if Redis cannot be read.
    """
    if not broker.startswith(("redis://", "rediss://", "unix://")):
        return []
    import redis

    try:
        client = redis.Redis.from_url(broker, socket_timeout=30, socket_connect_timeout=10)
        out: list[Unacked] = []
        for tag, value in client.hscan_iter(UNACKED, count=_PAGE):
            task = _ours(tag, value, queue)
            if task is None:
                continue
            attempts = tuple((task.run_id, *item.key) for item in task.items)
            out.append(Unacked(tag.decode(), attempts, client.zscore(UNACKED_INDEX, tag), task.deployment))
        return out
    except redis.RedisError as exc:
        raise BrokerUnreadable(f"cannot read the broker's unacknowledged tasks: {exc}") from exc


def _ours(tag: bytes, value: bytes, queue: str) -> Task | None:
    """Return the task of one entry of the unacknowledged set if it is one of our queue's, else None.

    Whatever is in the broker is data anyone who can write to it may have written: an entry that
    cannot be read (not JSON, nested too deep to parse, a tag that is no UTF-8) is skipped, and
    said once, never fatal to the scheduler.
    """
    try:
        tag.decode()
        raw, _exchange, routing_key = json.loads(value)
        return decode_message(raw) if routing_key == queue else None
    except (ValueError, TypeError, IndexError, KeyError, RecursionError) as exc:  # UnicodeDecodeError too
        _say_unreadable(tag, f"{type(exc).__name__}: {str(exc)[:200]}")
        return None


@functools.lru_cache(maxsize=4096)
def _say_unreadable(tag: bytes, problem: str) -> None:
    """Log an unreadable entry of the unacknowledged set; its cache makes it once per process and entry."""
    log.warning("skipped an unreadable entry %r of Redis's %r hash: %s", tag[:40], UNACKED, problem)


def forget_unacked(broker: str, tags: list[str]) -> int:
    """Delete these unacknowledged tasks from a Redis broker (never redelivered); return how many."""
    if not tags:
        return 0
    import redis

    try:
        client = redis.Redis.from_url(broker, socket_timeout=30, socket_connect_timeout=10)
        with client.pipeline() as pipe:
            pipe.hdel(UNACKED, *tags)
            pipe.zrem(UNACKED_INDEX, *tags)
            removed, _ = pipe.execute()
        return int(removed)
    except redis.RedisError as exc:
        raise BrokerUnreadable(f"cannot clear the broker's unacknowledged tasks: {exc}") from exc
