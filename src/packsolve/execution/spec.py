"""The attempt as it travels: its limits, the JSON-ready spec on the queue, and the job a child runs."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from packsolve.budget import Budget
from packsolve.external.declaration import ExternalSolver, ProgramRef
from packsolve.outcome import Outcome


@dataclass(frozen=True)
class Limits:
    """Per-attempt limits: wall seconds, expanded nodes, and MB of memory beyond the worker's own."""

    time_limit: float | None = None
    node_limit: int | None = None
    memory_limit_mb: int | None = None

    def hard_time(self) -> float | None:
        """Return wall seconds after which the child is killed: the budget's limit plus a grace."""
        if self.time_limit is None:
            return None
        # The cooperative budget normally stops the search on time; the grace only
        # has to cover a solver stuck in one long step (or one ignoring its budget).
        return self.time_limit + min(5.0, 1.0 + 0.05 * self.time_limit)


@dataclass(frozen=True)
class AttemptSpec:
    """Everything needed to run one attempt; JSON-ready so it can travel on the queue."""

    kind: str
    heuristic: str
    level: Mapping[str, Any]
    limits: Limits = field(default_factory=Limits)
    # The declaration of an external solver program when the heuristic is one. A task carries
    # only its ProgramRef (name and declaration digest); the worker that takes it puts its own
    # declaration of that program back (bound), and resolves the command on its own machine.
    program: ExternalSolver | ProgramRef | None = None

    def to_json(self) -> dict[str, Any]:
        """Return the spec as the JSON object a task carries (limits flattened beside the level)."""
        data = {
            "kind": self.kind,
            "heuristic": self.heuristic,
            "level": dict(self.level),
            "time_limit": self.limits.time_limit,
            "node_limit": self.limits.node_limit,
            "memory_limit_mb": self.limits.memory_limit_mb,
        }
        if isinstance(self.program, ExternalSolver):
            data["program"] = self.program.ref().to_json()
        elif self.program is not None:
            data["program"] = self.program.to_json()
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AttemptSpec:
        """Return the spec to_json wrote (its program a ProgramRef); raise KeyError if a field is wrong."""
        limits = Limits(data.get("time_limit"), data.get("node_limit"), data.get("memory_limit_mb"))
        program = data.get("program")
        try:
            named = None if program is None else ProgramRef.from_json(program)
        except ValueError as exc:
            raise KeyError(f"program: {exc}") from None
        return cls(data["kind"], data["heuristic"], data["level"], limits, named)


# What a solver child runs for one attempt: the kind's solver bound to the parsed level,
# called with the attempt's Budget, under the attempt's limits.
Work = Callable[[Budget], Outcome]
Job = tuple[Work, Limits]
