"""Pure value types for the result of one attempt."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Status(StrEnum):
    """Every state an attempt can be in; the same names in files, the CLI and the DB."""

    QUEUED = "queued"
    RUNNING = "running"
    SOLVED = "solved"
    NO_SOLUTION = "no_solution"
    TIMEOUT = "timeout"
    MEMOUT = "memout"
    ERROR = "error"
    INVALID = "invalid"
    WRONG = "wrong"
    LOST = "lost"
    CANCELLED = "cancelled"

    @property
    def final(self) -> bool:
        return self not in (Status.QUEUED, Status.RUNNING)


PENDING = frozenset({Status.QUEUED, Status.RUNNING})
FINAL = frozenset(s for s in Status if s.final)
# Outcomes that count as "the solver finished its job" in summaries.
SUCCESS = frozenset({Status.SOLVED, Status.NO_SOLUTION})
# The same as the strings the attempts' status column holds, for SQL filters.
SUCCESS_VALUES = frozenset(s.value for s in SUCCESS)
# Attempts that never ran a solver: they carry no time and no PAR-2 score.
NOT_RUN_VALUES = frozenset(s.value for s in (Status.QUEUED, Status.RUNNING, Status.INVALID, Status.CANCELLED))


@dataclass(frozen=True)
class SearchStats:
    """Effort spent on one attempt; nodes mean 'states expanded' for every heuristic of a kind."""

    nodes: int = 0
    wall_s: float = 0.0
    cpu_s: float = 0.0
    peak_rss_mb: float = 0.0


@dataclass(frozen=True)
class Outcome:
    """How one attempt ended: status, the solution (JSON-ready) if any, effort and a message.

    stdout and stderr: what the solver printed beyond its answer, as kept (an external program's
    head and tail within the cap, a cut marker between; a built-in solver's log lines): "" for none.

    resume: a best-of-all part of a split level (issue 38) that searched its iteration window
    without an answer: the first iteration bound it did not search (no_solution then means "nothing
    in this window, go on from resume"); None for every other attempt, and for a part searched through.
    """

    status: Status
    solution: Any = None
    stats: SearchStats = field(default_factory=SearchStats)
    message: str = ""
    stdout: str = ""
    stderr: str = ""
    resume: int | None = None

    @property
    def nodes(self) -> int:
        return self.stats.nodes
