"""Which (run, level) attempts still have a live task in the Redis broker: the reconcile's eyes.

Kombu's Redis transport keeps ready messages in a list named after the queue
(plus one list per priority step) and delivered-but-unacknowledged ones in the
``unacked`` hash, stamped in the ``unacked_index`` sorted set. A ready message
is live; an unacknowledged one is live until its worker should have finished
it (delivery + the hard limit of each attempt it carries + grace).
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from typing import Any

from packsolve.runner import Limits

# Kombu's names (kombu.transport.redis.Channel): the priority separator and the unacked keys.
PRIORITY_SEP = "\x06\x16"
PRIORITY_STEPS = (0, 3, 6, 9)
UNACKED = "unacked"
UNACKED_INDEX = "unacked_index"
_PAGE = 1000


class BrokerUnreadable(RuntimeError):
    """The broker is not a Redis we can inspect (or cannot be reached); nothing can be presumed lost."""


def live_attempts(broker: str, queue: str, task_name: str, grace_s: float) -> set[tuple[int, str]]:
    """Return the (run id, level hash) pairs of every live task; raise BrokerUnreadable on failure."""
    import redis

    if not broker.startswith(("redis://", "rediss://", "unix://")):
        raise BrokerUnreadable(f"cannot inspect a {broker.split(':', 1)[0]} broker")
    try:
        client = redis.Redis.from_url(broker, socket_timeout=30, socket_connect_timeout=10)
        live: set[tuple[int, str]] = set()
        for key in [queue] + [f"{queue}{PRIORITY_SEP}{p}" for p in PRIORITY_STEPS[1:]]:
            for raw in _list_items(client, key):
                live.update(pair for pair, _ in _attempts_with_limits(raw, task_name))
        now = time.time()
        for tag, value in client.hscan_iter(UNACKED, count=_PAGE):
            delivered = client.zscore(UNACKED_INDEX, tag)
            try:
                raw = json.loads(value)[0]
            except (ValueError, TypeError, IndexError, KeyError):
                continue
            for pair, hard in _attempts_with_limits(raw, task_name):
                if delivered is None or hard is None or delivered + hard + grace_s > now:
                    live.add(pair)
        return live
    except redis.RedisError as exc:
        raise BrokerUnreadable(f"cannot read the broker: {exc}") from exc


def _list_items(client: Any, key: str) -> Iterator[Any]:
    start = 0
    while True:
        page = client.lrange(key, start, start + _PAGE - 1)
        if not page:
            return
        yield from page
        start += len(page)


def _attempts_with_limits(raw: Any, task_name: str) -> list[tuple[tuple[int, str], float | None]]:
    """Return ((run, level), cumulative hard seconds up to and including that item) for a message.

    A message that is not one of our JSON tasks (a pickle someone slipped in) yields nothing.
    """
    try:
        message = json.loads(raw) if isinstance(raw, (str, bytes)) else raw
        if message.get("content-type") != "application/json":
            return []
        if (message.get("headers") or {}).get("task") != task_name:
            return []
        body = message["body"]
        if (message.get("properties") or {}).get("body_encoding") == "base64":
            body = base64.b64decode(body)
        args = json.loads(body)[0]
        payload = args[0]
        run_id = int(payload["run"])
        out: list[tuple[tuple[int, str], float | None]] = []
        total: float | None = 0.0
        for item in payload["items"]:
            spec = item.get("spec") or {}
            hard = Limits(spec.get("time_limit")).hard_time()
            total = None if total is None or hard is None else total + hard
            out.append(((run_id, str(item["level"])), total))
        return out
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        return []
