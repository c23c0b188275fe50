"""The attempt as it travels: its limits, the JSON-ready spec on the queue, and the job a child runs."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from packsolve.budget import Budget
from packsolve.external.declaration import ExternalSolver, ProgramRef
from packsolve.outcome import Outcome

# A job with a CPU limit and no wall limit is still stopped at this many times its CPU limit of
# wall time (plus WALL_BACKSTOP_EXTRA_S): a solver that sleeps or waits forever uses no CPU, and
# must not hold a night. Generous: under a load of 8 a solver gets about 1/4 of a core.
WALL_BACKSTOP_FACTOR = 10.0
WALL_BACKSTOP_EXTRA_S = 5.0


@dataclass(frozen=True)
class Limits:
    """Per-attempt limits: wall seconds, expanded nodes, MB of memory beyond the worker's own, and
    CPU seconds of the attempt's whole process tree (the solver child's job and what it starts)."""

    time_limit: float | None = None
    node_limit: int | None = None
    memory_limit_mb: int | None = None
    cpu_limit: float | None = None

    @classmethod
    def of_run(cls, run: Any) -> Limits:
        """Return the limits a stored run (a row with the runs table's limit columns) was given."""
        return cls(run.time_limit, run.node_limit, run.memory_limit_mb, getattr(run, "cpu_limit", None))

    def with_own(self, time_limit: float | None, cpu_limit: float | None) -> Limits:
        """Return these limits with an attempt's own wall and CPU limits over them (None: keep these).

        An attempt of a relative run (--time-limit 3x) has its own; every other attempt its run's.
        """
        return Limits(
            self.time_limit if time_limit is None else time_limit,
            self.node_limit,
            self.memory_limit_mb,
            self.cpu_limit if cpu_limit is None else cpu_limit,
        )

    @classmethod
    def widest(cls, limits: Iterable[Limits]) -> Limits:
        """Return limits no attempt under any of these exceeds: the largest wall and CPU limits (a None
        one, no limit, wins), the first's nodes and memory. What a task of several attempts may take."""
        given = list(limits)
        if not given:
            return cls()

        def most(values: list[float | None]) -> float | None:
            return None if any(v is None for v in values) else max(v for v in values if v is not None)

        return cls(
            most([lim.time_limit for lim in given]),
            given[0].node_limit,
            given[0].memory_limit_mb,
            None if all(lim.cpu_limit is None for lim in given) else most([lim.cpu_limit for lim in given]),
        )

    def wall_limit(self) -> float | None:
        """Return the wall seconds the attempt may take: the wall limit, else the CPU limit's backstop."""
        if self.time_limit is not None:
            return self.time_limit
        if self.cpu_limit is not None:
            return WALL_BACKSTOP_FACTOR * self.cpu_limit + WALL_BACKSTOP_EXTRA_S
        return None

    def wall_is_backstop(self) -> bool:
        """Return whether the wall time the attempt may take is the CPU limit's backstop, not one given."""
        return self.time_limit is None and self.cpu_limit is not None

    def hard_time(self) -> float | None:
        """Return wall seconds after which the child is killed: the wall limit (or backstop) plus a grace."""
        wall = self.wall_limit()
        if wall is None:
            return None
        # The cooperative budget normally stops the search on time; the grace only
        # has to cover a solver stuck in one long step (or one ignoring its budget).
        return wall + self.grace(wall)

    def hard_cpu(self) -> float | None:
        """Return CPU seconds after which the tree is killed: the CPU limit plus a grace; None without one."""
        if self.cpu_limit is None:
            return None
        return self.cpu_limit + self.grace(self.cpu_limit)

    def grace(self, limit: float | None = None) -> float:
        """Return how long past a cooperative limit (default: the wall limit) the hard one is."""
        base = self.time_limit if limit is None else limit
        return min(5.0, 1.0 + 0.05 * (base or 0.0))


@dataclass(frozen=True)
class PartSpec:
    """Which part of a split level an attempt searches, and (best of all) how far this time.

    ``index``: 0-based, into the parts ``kind.split(level, heuristic, of)`` gives; ``count``: how
    many parts that split gave when the run planned it (a split is deterministic: a child whose split
    gives another count ends the attempt ``error``). Best of all only: ``window``, the iteration
    bounds (lengths of the whole level) this run of the part searches (SharedBound.window; None:
    the part whole), and ``best``, the shortest whole-level answer known when the part was handed
    out, which the part prunes with.
    """

    index: int
    of: int
    count: int
    window: tuple[int, int] | None = None
    best: int | None = None

    def to_json(self) -> dict[str, Any]:
        """Return the part as the JSON object a task's spec carries under "part"."""
        window = None if self.window is None else list(self.window)
        return {"index": self.index, "of": self.of, "count": self.count, "window": window, "best": self.best}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PartSpec:
        """Return the part to_json wrote; raise KeyError or TypeError if a field is missing or malformed."""
        window = data.get("window")
        if window is not None:
            lo, hi = window  # a window of other than two numbers is malformed (TypeError, ValueError)
            window = (lo, hi)
        return cls(data["index"], data["of"], data["count"], window, data.get("best"))


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
    # A part of a split level (issue 38); None: the level whole, as every attempt before.
    part: PartSpec | None = None

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
        if self.limits.cpu_limit is not None:  # only when given: a worker of an older version reads the rest
            data["cpu_limit"] = self.limits.cpu_limit
        if isinstance(self.program, ExternalSolver):
            data["program"] = self.program.ref().to_json()
        elif self.program is not None:
            data["program"] = self.program.to_json()
        if self.part is not None:  # only when set: a spec without one is a task of earlier versions
            data["part"] = self.part.to_json()
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AttemptSpec:
        """Return the spec to_json wrote (its program a ProgramRef); raise KeyError if a field is wrong."""
        limits = Limits(
            data.get("time_limit"), data.get("node_limit"), data.get("memory_limit_mb"), data.get("cpu_limit")
        )
        program = data.get("program")
        try:
            named = None if program is None else ProgramRef.from_json(program)
        except ValueError as exc:
            raise KeyError(f"program: {exc}") from None
        part = data.get("part")
        try:
            which = None if part is None else PartSpec.from_json(part)
        except ValueError as exc:
            raise KeyError(f"part: {exc}") from None
        return cls(data["kind"], data["heuristic"], data["level"], limits, named, which)


# What a solver child runs for one attempt: the kind's solver bound to the parsed level,
# called with the attempt's Budget, under the attempt's limits.
Work = Callable[[Budget], Outcome]
Job = tuple[Work, Limits]


@dataclass(frozen=True, slots=True)
class PendingAttempt:
    """One attempt to make: its level (by hash), its spec, and the name the run lists the level under.

    What a plan hands to the local pool or the queue, and what a task carries. A task carries the
    level hash and the spec only: an attempt decoded from one has no name (None).
    """

    level_hash: str
    spec: AttemptSpec
    name: str | None = None

    @property
    def key(self) -> tuple[str, str]:
        """Return (level hash, heuristic): which attempt of its run this is (a run may try a level with
        several heuristics)."""
        return self.level_hash, self.spec.heuristic
