"""Which (run, level) attempts still have a live task in the Redis broker: the reconcile's eyes.

Kombu's Redis transport keeps ready messages in a list named after the queue
(plus one list per priority step) and delivered-but-unacknowledged ones in the
``unacked`` hash, stamped in the ``unacked_index`` sorted set. A ready message
is live; an unacknowledged one is live until its worker should have finished
it (delivery + the hard limit of each attempt it carries + grace).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from packsolve.errors import BrokerError
from packsolve.queue.protocol import decode_message

# Kombu's names (kombu.transport.redis.Channel): the priority separator and the unacked keys.
PRIORITY_SEP = "\x06\x16"
PRIORITY_STEPS = (0, 3, 6, 9)
UNACKED = "unacked"
UNACKED_INDEX = "unacked_index"
_PAGE = 1000


class BrokerUnreadable(BrokerError):
    """The broker is not a Redis we can inspect (or cannot be reached); nothing can be presumed lost."""


@dataclass(frozen=True)
class Message:
    """One of our tasks in the broker: the attempts it carries, and until when it can be live."""

    attempts: tuple[tuple[int, str], ...]
    ready: bool  # still waiting in the queue (else delivered to a worker, not yet acknowledged)
    expires: float | None  # unacknowledged: delivery + its attempts' hard limits + grace (epoch s)


def broker_messages(broker: str, queue: str, grace_s: float) -> list[Message]:
    """Return every task of ours in the broker (queued or unacknowledged); raise BrokerUnreadable."""
    import redis

    if not broker.startswith(("redis://", "rediss://", "unix://")):
        raise BrokerUnreadable(f"cannot inspect a {broker.split(':', 1)[0]} broker")
    try:
        client = redis.Redis.from_url(broker, socket_timeout=30, socket_connect_timeout=10)
        out: list[Message] = []
        for key in [queue] + [f"{queue}{PRIORITY_SEP}{p}" for p in PRIORITY_STEPS[1:]]:
            for raw in _list_items(client, key):
                items = _attempts_with_limits(raw)
                if items:
                    out.append(Message(tuple(pair for pair, _ in items), True, None))
        for tag, value in client.hscan_iter(UNACKED, count=_PAGE):
            try:
                raw = json.loads(value)[0]
            except (ValueError, TypeError, IndexError, KeyError):
                continue
            items = _attempts_with_limits(raw)
            if not items:
                continue
            delivered = client.zscore(UNACKED_INDEX, tag)
            total = items[-1][1]
            expires = None if delivered is None or total is None else delivered + total + grace_s
            out.append(Message(tuple(pair for pair, _ in items), False, expires))
        return out
    except redis.RedisError as exc:
        raise BrokerUnreadable(f"cannot read the broker: {exc}") from exc


def live_attempts(messages: list[Message], presumed_dead: set[tuple[int, str]]) -> set[tuple[int, str]]:
    """Return the attempts some live task still carries.

    A queued task is live. A delivered one is live until it expires, unless one
    of its attempts is presumed dead (running past its deadline): then the
    worker holding it is gone, and so is the rest of its chunk.
    """
    now = time.time()
    live: set[tuple[int, str]] = set()
    for m in messages:
        if m.ready or (
            (m.expires is None or m.expires > now) and not any(a in presumed_dead for a in m.attempts)
        ):
            live.update(m.attempts)
    return live


def _list_items(client: Any, key: str) -> Iterator[Any]:
    start = 0
    while True:
        page = client.lrange(key, start, start + _PAGE - 1)
        if not page:
            return
        yield from page
        start += len(page)


def _attempts_with_limits(raw: Any) -> list[tuple[tuple[int, str], float | None]]:
    """Return ((run, level), cumulative hard seconds up to and including that item) for a message.

    A message that is not one of our JSON tasks (a pickle someone slipped in) yields nothing.
    """
    task = decode_message(raw)
    if task is None:
        return []
    out: list[tuple[tuple[int, str], float | None]] = []
    total: float | None = 0.0
    for level_hash, spec in task.items:
        hard = spec.limits.hard_time()
        total = None if total is None or hard is None else total + hard
        out.append(((task.run_id, level_hash), total))
    return out
