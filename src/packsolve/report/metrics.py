"""The figures every report shares: medians, hosts from worker names (pure; PAR-2 is figures.par2)."""

from __future__ import annotations

import statistics
from collections.abc import Iterable


def median(values: Iterable[float | None]) -> float | None:
    """Return the median of the values that are not None, or None if there are none."""
    xs = [v for v in values if v is not None]
    return statistics.median(xs) if xs else None


def host_of(worker: str | None) -> str | None:
    """Return the machine of a worker name ('celery@host', 'local@host:pid'), or None."""
    if not worker:
        return None
    host = worker.split("@", 1)[1] if "@" in worker else worker
    return host.rsplit(":", 1)[0] if ":" in host else host


def rounded(x: float | None, digits: int = 4) -> float | None:
    """Return x rounded for display in JSON, None stays None."""
    return None if x is None else round(x, digits)
