"""Figures kept between requests, on the application (app.state.caches): one set per dashboard.

Finished runs' figures are kept: once a run is finished its attempts no longer
change. A run's key holds its finish time, label and state, so a resume (which
reopens it), a relabel or a cancel makes new figures; a run still going is never
kept there, only read at most every few seconds (Recent).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")
# Entries kept (summaries, counts, failure groups: a few kilobytes each).
SIZE = 512
# Live figures slow to compute (rate, ETA, workers) are read at most this often, however many pages poll.
RECENT_TTL_S = 5.0


class Recent:
    """Values computed at most once per `ttl` seconds per key, shared by every page that asks.

    Live pages poll every 2 s; what is slow to compute and changes slowly (rate,
    ETA, workers) is read at most every few seconds, whatever the number of pages open.
    """

    def __init__(self, ttl: float) -> None:
        self.ttl = ttl
        self._entries: dict[Hashable, tuple[float, Any]] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable, compute: Callable[[], T]) -> T:
        now = time.monotonic()
        with self._lock:
            found = self._entries.get(key)
            if found is not None and now - found[0] < self.ttl:
                return found[1]  # type: ignore[no-any-return]
        value = compute()
        with self._lock:
            self._entries = {k: v for k, v in self._entries.items() if now - v[0] < self.ttl}
            self._entries[key] = (now, value)
        return value


class FinishedRuns:
    """A small LRU of figures computed from finished runs."""

    def __init__(self, size: int = SIZE) -> None:
        self._entries: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()
        self._size = size

    def get(self, runs: Any, what: Hashable, compute: Callable[[], T]) -> T:
        """Return compute() for runs (a Run or a sequence of them); kept only if every one is finished."""
        group = runs if isinstance(runs, list | tuple) else [runs]
        if any(r.finished_at is None for r in group):
            return compute()
        return self.keep((tuple((r.id, r.finished_at, r.label, r.state) for r in group), what), compute)

    def keep(self, key: Hashable, compute: Callable[[], T]) -> T:
        """Return the value kept under key, else compute() kept there (the caller's key says what changes)."""
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                return self._entries[key]  # type: ignore[no-any-return]
        value = compute()
        with self._lock:
            self._entries[key] = value
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)
        return value


@dataclass(frozen=True)
class Caches:
    """What one dashboard keeps between requests: finished runs' figures, and live figures a few seconds."""

    finished: FinishedRuns = field(default_factory=FinishedRuns)
    recent: Recent = field(default_factory=lambda: Recent(RECENT_TTL_S))
