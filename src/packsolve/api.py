"""The stable interface for puzzle-kind authors: everything a kind, built in or plug-in, imports.

A kind module builds one ``KIND = PuzzleKind(...)`` from the names in
``__all__`` and from no other packsolve module: its parser raises
``LevelError``, its solvers are plain functions ``(level, budget) -> Outcome``
wrapped by ``solver``, which return ``solved(...)`` / ``no_solution(...)`` and
call ``budget.charge()`` once per state they expand (past a limit it raises,
and the wrapper turns that into ``Outcome(Status.TIMEOUT)``). A plug-in
distribution names its kind in the entry-point group ``packsolve.kinds``
(``lightsout = "packsolve_lightsout:KIND"``); docs/plugins.md walks through one.

``__all__`` is the stable surface: its names and their signatures change only
with a major version (tests/unit/test_api.py pins them). The other names here
(``field_of``, ``Solve``, ``FormatReader``, ``SearchStats``, ``BudgetExhausted``)
are helpers the built-in kinds share; they may change. This module imports
only the pure core (budget, outcome, errors).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from packsolve.budget import Budget, BudgetExhausted, SharedBound
from packsolve.errors import LevelError, UnknownHeuristic
from packsolve.outcome import Outcome, SearchStats, Status

__all__ = [
    "Budget",
    "Combine",
    "LevelError",
    "Outcome",
    "Part",
    "Preparation",
    "PuzzleKind",
    "SharedBound",
    "Split",
    "Status",
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
class Preparation:
    """Work a heuristic needs done once per machine before it can solve some levels (tables to build).

    packsolve does it outside every attempt's limits, before the attempts that need it start
    (once per `solve`, once per worker process on demand), saying so in one line:
    "building {what} once ({cost}; kept in {where})". ``key`` names the work: two levels whose
    preparations share a key need it done once. ``ready()`` says, cheaply, whether it is done
    on this machine; ``run()`` does it (a no-op when it is done; safe when two processes race) and
    raises (MemoryError, OSError, ...) when it cannot. ``size``: a ``--size`` of ``packsolve
    generate`` for levels that need it, so that ``packsolve kinds --prepare KIND HEURISTIC --size
    SIZE`` does it ahead (named in the message of a preparation that failed).
    """

    key: str
    what: str
    cost: str
    where: str
    ready: Callable[[], bool]
    run: Callable[[], None]
    size: str = ""


class Combine(StrEnum):
    """How the answers of a split level's parts make the level's answer."""

    # A satisfiable search: the first part with an answer gives the level's answer; a level has
    # no answer when no part has one.
    FIRST_FOUND = "first-found"
    # An optimal search: the shortest answer of all parts; the parts share the best length found
    # so far (Budget.bound, a SharedBound) and prune with it.
    BEST_OF_ALL = "best-of-all"


@dataclass(frozen=True)
class Part:
    """One part of a split level: a sub-level and the answer's steps before the sub-level's answer.

    ``level``: a value the heuristic split for searches as it searches a level (its solver is
    called with it); ``prefix``: the steps (in the solution's JSON form) fixed before it. An
    answer of the part combines into the level's answer ``[*prefix, *answer]``, which the kind's
    ``verify`` accepts. ``depth``: what the prefix adds to an answer's length (``len(prefix)``
    unless the kind's ``length`` counts otherwise).
    """

    level: Any
    prefix: tuple[Any, ...] = ()
    depth: int = 0

    def combine(self, answer: Any) -> list[Any]:
        """Return the level's answer made of this part's prefix and the part's answer."""
        return [*self.prefix, *answer]


@dataclass(frozen=True)
class Split:
    """A level split into parts, and the rule that combines their answers.

    Every answer of the level is the combination of an answer of some part (the parts cover the
    level) and no two parts are the same sub-level; for BEST_OF_ALL the shortest combined answer
    is an optimal answer of the level. ``nodes``: the states the split itself expanded.
    """

    combine: Combine
    parts: tuple[Part, ...]
    nodes: int = 0


@dataclass(frozen=True)
class PuzzleKind:
    """One puzzle kind: parsing, solvers by heuristic name, verification and pictures.

    Fields (the first nine are required):

    - ``name``: the kind's stable name in level files (``"kind": name``), the CLI and the database.
    - ``parse(data) -> level``: the level's JSON object (its ``kind`` field may be present) to
      the kind's own level value; raises ``LevelError`` with a message a person can act on.
    - ``canonical(level) -> dict``: the level back as a JSON object; the SHA-256 of its sorted
      JSON is the level's identity, so two spellings of one level are one level.
      ``canonical(parse(canonical(x)))`` must equal ``canonical(x)``.
    - ``solvers``: heuristic name -> solve function ``(level, budget) -> Outcome``, each
      wrapped by ``solver``. ``default``: the name used when none is asked for.
    - ``verify(level, solution) -> str | None``: why a solution (in its JSON form, as stored
      and exported) is wrong, or None if it is right; independent of every solver. Better a
      message than an exception for odd JSON values (either way the answer is stored as wrong).
    - ``render(level, solution) -> str`` (terminal text) and ``svg(level, solution) -> str``
      (an ``<svg>`` document); solution may be None (the level alone).
    - ``size(level) -> int``: a rough measure (cells, squares) to order and estimate levels.
    - ``length(solution) -> int | None``: the solution's length for reports (default: len of
      a list or string).
    - ``formats``: file suffix (``".sdk"``) -> reader of the kind's own text format.
    - ``description``: one line for ``packsolve kinds``.
    - ``generate(size, count, seed) -> [level JSON]``: optional, for ``packsolve generate``.
    - ``size_help``: one line saying what ``--size`` means for ``generate``, with an example
      (``packsolve generate --help`` lists it, and an error about a size repeats it).
    - ``examples``: a few small level JSON objects that ``packsolve check-kind`` and
      ``packsolve.testing.check_kind`` run every heuristic on (each within seconds).
    - ``preparation(heuristic, level) -> Preparation | None``: optional; the once-per-machine
      work (a table to build) the heuristic needs before it solves this level, or None when it
      needs none. packsolve prepares outside every attempt's limits, so an attempt's time
      and memory are the search's alone.
    - ``split(level, heuristic, n) -> Split | None``: optional; the level cut into at least n
      parts (``Part``: a sub-level the same heuristic searches, and the answer's fixed prefix)
      with the rule that combines their answers (``Combine.FIRST_FOUND`` or
      ``Combine.BEST_OF_ALL``), or None when this heuristic or level is not split. A part's
      answer ``a`` makes the level's answer ``[*part.prefix, *a]``, which ``verify`` accepts; for
      best of all, the shortest of them is as short as the unsplit search's answer. A kind
      without ``split`` is never split.
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
    examples: Sequence[Mapping[str, Any]] = ()
    # Last, so that kinds built with positional fields before it keep working.
    size_help: str = ""
    preparation: Callable[[str, Any], Preparation | None] | None = None
    split: Callable[[Any, str, int], Split | None] | None = None

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
    an Outcome raises TypeError. The Solve pickles when fn does (a module-level function, or a
    functools.partial of one with its parameters).
    """
    return _Solver(fn)


class _Solver:
    """solver()'s Solve: an object, not a closure, so that a job holding it pickles (its function by
    name) and goes to a worker's kept solver child; a job that does not pickle forks a fresh child."""

    def __init__(self, fn: Callable[[Any, Budget], Any]) -> None:
        self.fn = fn
        functools.update_wrapper(self, fn)
        if not hasattr(self, "__name__"):  # a functools.partial: named by its function
            self.__name__ = getattr(getattr(fn, "func", fn), "__name__", type(fn).__name__)

    def __call__(self, level: Any, budget: Budget) -> Outcome:
        try:
            out = self.fn(level, budget)
        except BudgetExhausted as exc:
            return Outcome(Status.TIMEOUT, stats=SearchStats(nodes=budget.nodes), message=str(exc))
        if not isinstance(out, Outcome):
            raise TypeError(f"solver {self.__name__} returned {type(out).__name__}, not Outcome")
        return Outcome(out.status, out.solution, SearchStats(nodes=budget.nodes), out.message)

    def __reduce__(self) -> str | tuple[Any, ...]:
        # Used as a decorator, this object is what its module calls the function: pickled by that name.
        name = getattr(self, "__qualname__", None)
        if name and getattr(sys.modules.get(getattr(self, "__module__", "")), name, None) is self:
            return str(name)
        return (_Solver, (self.fn,))


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
