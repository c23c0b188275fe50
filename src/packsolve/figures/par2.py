"""PAR-2, the SAT competition's penalised runtime: the one definition, in Python and its SQL twin.

A decided attempt (solved, or no_solution proved) scores its wall time; any other final one that
ran a solver scores twice the run's time limit, or twice its own wall time when the run had no time
limit. The limit that applies is the wall limit; a run with a CPU limit alone (--cpu-limit) scores
twice that (par2_limit). An attempt with limits of its own (a relative run's, --time-limit 3x) scores
twice its own limit, in the same order: its own wall limit, the run's, its own CPU limit, the run's.
An attempt that never ran a solver (queued, cancelled before it ran, ...) has no PAR-2.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import case, func, select

from packsolve.db.models import Attempt
from packsolve.outcome import NOT_RUN_VALUES, SUCCESS_VALUES


def par2_limit(run: Any, attempt: Any = None) -> float | None:
    """Return the limit a run's undecided attempt scores twice: its wall limit, else its CPU limit;
    given the attempt (a row with its own time_limit and cpu_limit), its own limits first."""
    own_time = getattr(attempt, "time_limit", None)
    own_cpu = getattr(attempt, "cpu_limit", None)
    return own_time or run.time_limit or own_cpu or getattr(run, "cpu_limit", None)


def par2_limit_sql(run_table: Any, attempt_table: Any = None) -> Any:
    """Return par2_limit as a SQL expression of a runs table (or the Run model), and of the attempts
    table (or the Attempt model) if given: own wall, run's wall, own CPU, run's CPU limit."""
    if attempt_table is None:
        return func.coalesce(run_table.time_limit, run_table.cpu_limit)
    return func.coalesce(
        attempt_table.time_limit, run_table.time_limit, attempt_table.cpu_limit, run_table.cpu_limit
    )


def own_penalties(conn: Any, run: Any) -> dict[tuple[str, str, str], float]:
    """Return {(kind, heuristic, status): the sum of par2_limit} over a run's attempts that have limits of
    their own and did not decide their level (what they score, halved); empty for a run without any."""
    own = Attempt.time_limit.is_not(None) | Attempt.cpu_limit.is_not(None)
    limit = func.coalesce(Attempt.time_limit, run.time_limit, Attempt.cpu_limit, run.cpu_limit)
    rows = conn.execute(
        select(Attempt.kind, Attempt.heuristic, Attempt.status, func.sum(limit))
        .where(Attempt.run_id == run.id, own, Attempt.status.not_in(SUCCESS_VALUES | NOT_RUN_VALUES))
        .group_by(Attempt.kind, Attempt.heuristic, Attempt.status)
    ).all()
    return {(k, h, str(s)): float(total) for k, h, s, total in rows if total is not None}


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
