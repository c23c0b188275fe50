"""PAR-2, the SAT competition's penalised runtime: the one definition, in Python and its SQL twin.

A decided attempt (solved, or no_solution proved) scores its wall time; any other final one that
ran a solver scores twice the run's time limit, or twice its own wall time when the run had no time
limit. The limit that applies is the wall limit; a run with a CPU limit alone (--cpu-limit) scores
twice that (par2_limit). An attempt that never ran a solver (queued, cancelled before it ran, ...)
has no PAR-2.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import case, func

from packsolve.outcome import NOT_RUN_VALUES, SUCCESS_VALUES


def par2_limit(run: Any) -> float | None:
    """Return the limit a run's undecided attempts score twice: its wall limit, else its CPU limit."""
    return run.time_limit or getattr(run, "cpu_limit", None)


def par2_limit_sql(run_table: Any) -> Any:
    """Return par2_limit as a SQL expression of a runs table (or the Run model): wall, else CPU limit."""
    return func.coalesce(run_table.time_limit, run_table.cpu_limit)


def par2(status: str, wall_s: float | None, time_limit: float | None) -> float | None:
    """Return the PAR-2 score of one attempt, or None if it never ran a solver."""
    if status in NOT_RUN_VALUES:
        return None
    if status in SUCCESS_VALUES:
        return wall_s or 0.0
    return 2.0 * (time_limit if time_limit else (wall_s or 0.0))


def par2_sum(status: str | None, count: float, wall_sum: float, time_limit: float | None) -> float | None:
    """Return par2 summed over count attempts of one status whose wall times sum to wall_sum.

    None where no solver ran (no attempt, or a status that never ran), as par2 has it.
    """
    if status is None or status in NOT_RUN_VALUES:
        return None
    if status in SUCCESS_VALUES:
        return wall_sum
    return 2.0 * time_limit * count if time_limit else 2.0 * wall_sum


def par2_sql(status: Any, wall_s: Any, time_limit: Any) -> Any:
    """Return par2 as a SQL expression of an attempt's status and wall_s columns and its run's time_limit.

    Meant for attempts that ran (the caller leaves out NOT_RUN_VALUES): the others have no PAR-2.
    """
    return case(
        (status.in_(SUCCESS_VALUES), func.coalesce(wall_s, 0.0)),
        else_=2.0 * func.coalesce(time_limit, wall_s, 0.0),
    )
