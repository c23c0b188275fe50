"""The figures every report shares: PAR-2, medians, hosts from worker names (pure, no database)."""

from __future__ import annotations

import statistics
from collections.abc import Iterable

from packsolve.outcome import NOT_RUN_VALUES, SUCCESS_VALUES


def par2(status: str, wall_s: float | None, time_limit: float | None) -> float | None:
    """Return the PAR-2 score of one attempt, or None if it never ran a solver.

    A decided attempt (solved, or no_solution proved) scores its wall time; any
    other final one scores twice the run's time limit, or twice its own wall time
    when the run had no time limit (the SAT competition's penalised runtime).
    """
    if status in NOT_RUN_VALUES:
        return None
    if status in SUCCESS_VALUES:
        return wall_s or 0.0
    return 2.0 * (time_limit if time_limit else (wall_s or 0.0))


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
