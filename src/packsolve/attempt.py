"""One attempt's life outside the solver: what a claim answers, why a local run stops, the result to write.

The state machines an attempt goes through are StrEnums here, one spelling each (their values are
what logs and messages show); the Result both the worker and the local pool write; and the cap on
an attempt's tries. Pure values: no database, no broker.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from packsolve.outcome import Outcome

# How many times an attempt may be started (worker deaths, redeliveries) before it is lost.
# Five, not three: a worker killed while holding a claimed group charges a try to every attempt
# in it, run or not, so an innocent level can meet two or three kills in a bad night.
DEFAULT_MAX_TRIES = 5


def tries_cap(run_max_tries: int | None, default: int = DEFAULT_MAX_TRIES) -> int:
    """Return the cap on an attempt's tries for a run recording run_max_tries (None or 0: default)."""
    return run_max_tries or default


class ClaimVerdict(StrEnum):
    """What a claim answered for one attempt."""

    RUN = "run"  # now running for this worker (it holds the claim's fencing token)
    SKIP = "skip"  # final already, or held by another worker whose lease is alive
    CANCELLED = "cancelled"  # its run was cancelled: the attempt is now too
    LOST = "lost"  # started max_tries times and never finished: now lost


class StopReason(StrEnum):
    """Why a local run stopped before its end."""

    INTERRUPTED = "interrupted"  # Ctrl-C or `kill PID` of the solve process
    CANCELLED = "cancelled"  # `packsolve cancel` marked the run


# One attempt of a run: its level's hash and its heuristic (a run may try a level with several).
AttemptKey = tuple[str, str]


@dataclass(frozen=True)
class Result:
    """One finished attempt to record."""

    run_id: int
    level_hash: str
    outcome: Outcome
    length: int | None
    worker: str | None
    started_at: datetime | None = None
    finished_at: datetime | None = None  # default: when it is recorded
    # False: never claimed (a tiny attempt that ended before its claim was due); writing the
    # result counts its try, as the claim would have, and lands only while the attempt is queued.
    claimed: bool = True
    # The fencing token of the claim (claim_many's tokens): the result lands only while the
    # attempt is running under that very claim. None: the local pool, whose run is its own.
    token: int | None = None
    # The attempt's heuristic: the local pool and the worker name it (a run may try a level with
    # several, issue 36), and the result lands on that attempt only; None: the run's one attempt of the level.
    heuristic: str | None = None


def began(outcome: Outcome, finished: datetime) -> datetime:
    """Return when an attempt that ended at finished with outcome started: its wall time before."""
    return finished - timedelta(seconds=outcome.stats.wall_s)
