"""The stable interface for puzzle-kind authors: everything a kind, built in or plug-in, imports.

A kind module builds one ``KIND = PuzzleKind(...)`` from the names in
``__all__`` and from no other packsolve module: its parser raises
``LevelError``, its solvers are wrapped by ``solver`` and return
``solved(...)`` / ``no_solution(...)``, or let ``Budget.charge`` raise
``BudgetExhausted``. The built-in kinds take these names from here too, so the rest of
packsolve can be rearranged without breaking a plug-in. This module imports
only the pure core (budget, outcome, errors).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from packsolve.budget import Budget, BudgetExhausted
from packsolve.errors import LevelError, UnknownHeuristic
from packsolve.outcome import Outcome, SearchStats, Status

__all__ = [
    "Budget",
    "BudgetExhausted",
    "FormatReader",
    "LevelError",
    "Outcome",
    "PuzzleKind",
    "SearchStats",
    "Solve",
    "Status",
    "field_of",
    "no_solution",
    "solved",
    "solver",
]


class Solve(Protocol):
    """A solver: (level value, budget) -> Outcome; never raises on an exhausted budget."""

    def __call__(self, level: Any, budget: Budget) -> Outcome: ...


# A reader of one of a kind's own text formats: yields (line number, level JSON
# object or the LevelError that line produced), so one bad line never spoils its file.
FormatReader = Callable[[str], Iterator[tuple[int, "dict[str, Any] | LevelError"]]]


def _default_length(solution: Any) -> int | None:
    return len(solution) if isinstance(solution, (list, str)) else None


@dataclass(frozen=True)
class PuzzleKind:
    """One puzzle kind: parsing, solvers by heuristic name, verification and pictures.

    ``parse`` takes the level's JSON object (the ``kind`` field may be present)
    and returns the kind's level value or raises LevelError. ``canonical``
    turns that value back into the JSON object whose hash is the level's
    identity, so two spellings of one level are one level. ``formats`` maps a
    file suffix (``".sdk"``) to the reader of the kind's own text format.
    """

    name: str
    parse: Callable[[Mapping[str, Any]], Any]
    canonical: Callable[[Any], dict[str, Any]]
    solvers: Mapping[str, Solve]
    default: str
    verify: Callable[[Any, Any], str | None]
    render: Callable[[Any, Any], str]
    svg: Callable[[Any, Any], str]
    size: Callable[[Any], int]
    length: Callable[[Any], int | None] = _default_length
    formats: Mapping[str, FormatReader] = field(default_factory=dict)
    description: str = ""
    # Optional level generator for `packsolve generate KIND`: (size spec such as
    # "8x8" or "60", count, seed) -> level JSON objects, reproducible for a seed.
    generate: Callable[[str, int, int], list[dict[str, Any]]] | None = None

    def solver(self, heuristic: str | None) -> tuple[str, Solve]:
        """Return (resolved name, solve) for a heuristic; raise UnknownHeuristic naming the choices."""
        name = self.default if heuristic in (None, "", "default") else heuristic
        try:
            return name, self.solvers[name]
        except KeyError:
            choices = ", ".join(sorted(self.solvers))
            raise UnknownHeuristic(
                f"kind {self.name!r} has no heuristic {name!r} (choose from: {choices}, default)"
            ) from None


def solver(fn: Callable[[Any, Budget], Any]) -> Solve:
    """Wrap a search function into a Solve that never raises on an exhausted budget.

    The wrapped function returns an Outcome, or raises BudgetExhausted, which
    becomes ``Outcome(timeout)``. Node counts always come from the budget, so
    every heuristic counts the same way. A function that returns anything but
    an Outcome raises TypeError.
    """

    @functools.wraps(fn)
    def solve(level: Any, budget: Budget) -> Outcome:
        try:
            out = fn(level, budget)
        except BudgetExhausted as exc:
            return Outcome(Status.TIMEOUT, stats=SearchStats(nodes=budget.nodes), message=str(exc))
        if not isinstance(out, Outcome):
            raise TypeError(f"solver {fn.__name__} returned {type(out).__name__}, not Outcome")
        return Outcome(out.status, out.solution, SearchStats(nodes=budget.nodes), out.message)

    return solve


def solved(solution: Any, message: str = "") -> Outcome:
    """Return the Outcome of a found solution (the solver wrapper adds the node count)."""
    return Outcome(Status.SOLVED, solution, message=message)


def no_solution(reason: str) -> Outcome:
    """Return the Outcome of a level proved to have no solution, saying why."""
    return Outcome(Status.NO_SOLUTION, None, message=reason)


def field_of(data: Mapping[str, Any], key: str, kind: str) -> Any:
    """Return data[key]; raise LevelError naming the kind and the missing field."""
    if not isinstance(data, Mapping):
        raise LevelError(f"a {kind} level must be a JSON object, not {type(data).__name__}")
    if key not in data:
        raise LevelError(f"{kind} level has no {key!r} field")
    return data[key]
