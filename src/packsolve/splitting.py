"""Solving one level as the parts its kind splits it into (issue 38), one after another or on a local pool.

The pure core of splitting: no database, broker or command line. ``solve_split`` asks the kind
for ``split(level, heuristic, n)`` and runs the parts with the kind's own solver, each under a
Budget made from what is left of the level's limits; combining.Combination hands the parts out
and combines their answers by the rule the split declares, the same rules a run's parts follow
(that module says them): first found stops at the first answer (a pool's other parts are
stopped); best of all runs one round of iteration bounds at a time, the parts sharing a
SharedBound, so an answer found in a round is optimal and the parts still running stop at once.

The level's answer is the part's prefix and its answer, checked by the kind's ``verify``; its
nodes are the split's and every part's, its CPU time this process's and its pool's. A kind or
heuristic without a split is solved unsplit, as one part. Runs do not call it (the benchmarks
and check_kind do): they run each part as an attempt of its own.

``part_work`` is that way in: one part of a level as an attempt of its own (an AttemptSpec with a
PartSpec), the work a solver child runs for it; the run hands parts out and combines their outcomes
round by round with combining.Combination.
"""

from __future__ import annotations

import multiprocessing
import os
import resource
import signal
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from packsolve.api import Budget, Combine, Outcome, Part, PuzzleKind, SharedBound, Solve, Split, Status
from packsolve.combining import Combination, answer_length
from packsolve.outcome import SearchStats


@dataclass(frozen=True)
class LevelLimits:
    """The limits of the level solved in parts, as an attempt's: wall seconds from the start, and
    nodes and CPU seconds summed over the parts (None: no limit)."""

    time_limit: float | None = None
    node_limit: int | None = None
    cpu_limit: float | None = None


@dataclass(frozen=True)
class PartRun:
    """One run of one part: its index, its Outcome, CPU and wall seconds, and where it stopped.

    ``resume``: the first iteration bound it did not search (best of all), None when its tree is
    searched through or it has an answer. ``pid``: the process it ran in.
    """

    index: int
    outcome: Outcome
    cpu_s: float
    wall_s: float
    resume: int | None = None
    window: tuple[int, int] | None = None
    pid: int = 0


@dataclass
class SplitRun:
    """The level's Outcome and how: the split (None: solved unsplit), every part's runs, the rounds."""

    outcome: Outcome
    split: Split | None = None
    runs: list[PartRun] = field(default_factory=list)
    rounds: int = 0


# What a pool's processes share, set before they fork (the kind's functions need not pickle).
_STATE: dict[str, Any] = {}


def _install(kind: PuzzleKind, heuristic: str, bound: SharedBound | None) -> None:
    _STATE.update(solve=kind.solver(heuristic)[1], bound=bound)


def _run_part(
    task: tuple[int, Any, tuple[int, int] | None, float | None, int | None, float | None],
) -> PartRun:
    index, level, window, deadline, node_limit, cpu_limit = task
    # The level's deadline, not the time left when the part was handed out: a part a pool starts
    # late gets what is left then (CLOCK_MONOTONIC is the machine's, the same in every process).
    time_limit = None if deadline is None else deadline - time.monotonic()
    if time_limit is not None and time_limit <= 0:
        late = Outcome(Status.TIMEOUT, message="the level's wall time limit passed before this part began")
        return PartRun(index, late, 0.0, 0.0, None, window, os.getpid())
    budget = Budget(time_limit, node_limit, cpu_limit)
    bound: SharedBound | None = _STATE["bound"]
    if bound is not None:
        bound.window = window
        bound.resume = None
        budget.bound = bound
    cpu0, wall0 = time.process_time(), time.monotonic()
    out = _STATE["solve"](level, budget)
    resume = bound.resume if bound is not None and out.status == Status.NO_SOLUTION else None
    cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
    return PartRun(index, out, cpu, wall, resume, window, os.getpid())


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def solve_split(
    kind: PuzzleKind,
    level: Any,
    heuristic: str | None = None,
    *,
    parts: int = 8,
    processes: int = 1,
    limits: LevelLimits | None = None,
) -> SplitRun:
    """Solve level as at least ``parts`` parts on ``processes`` processes (1: in this process, in order).

    The parts are handed out and their answers combined by combining.Combination, as a run's are:
    a best-of-all round is run whole before the next is handed out; a first-found level stops at
    its first answer. ``limits``: the level's (a part stops at the level's deadline and gets the
    nodes and CPU left when it is handed out, so parts running side by side may together pass the
    node or CPU limit by what they spend at once). Past one: timeout. The returned Outcome's
    solution, if any, is checked with ``kind.verify`` (wrong if it fails).
    """
    name, _ = kind.solver(heuristic)
    prepare = kind.preparation(name, level) if kind.preparation else None
    if prepare is not None:
        prepare.run()  # before the clock and before a pool forks, as packsolve prepares outside limits
    wall0, cpu0, child0 = time.monotonic(), time.process_time(), _children_cpu()
    split = kind.split(level, name, parts) if kind.split is not None else None
    # Unsplit: the level is the one part of a first-found split.
    combination = Combination(split or Split(Combine.FIRST_FOUND, (Part(level),)), length=answer_length(kind))
    bound = SharedBound() if combination.best_of_all else None
    run = SplitRun(Outcome(Status.NO_SOLUTION), split)
    _install(kind, name, bound)
    pool = None
    if processes > 1 and combination.count > 1:
        # fork: the workers inherit the kind, the shared bound and any pattern tables loaded above.
        pool = multiprocessing.get_context("fork").Pool(processes)
    try:
        _combine(combination, limits or LevelLimits(), run, pool, bound)
    finally:
        if pool is not None:
            pool.terminate()
            pool.join()
    outcome = combination.outcome
    assert outcome is not None
    if outcome.status == Status.SOLVED:
        why = kind.verify(level, outcome.solution)
        if why is not None:
            outcome = Outcome(
                Status.WRONG, outcome.solution, message=f"the parts' combined answer is wrong: {why}"
            )
    stats = SearchStats(
        nodes=combination.nodes,
        wall_s=time.monotonic() - wall0,
        cpu_s=time.process_time() - cpu0 + _children_cpu() - child0,
    )
    run.outcome = Outcome(outcome.status, outcome.solution, stats, outcome.message)
    run.rounds = combination.rounds
    return run


def _combine(
    combination: Combination, limits: LevelLimits, run: SplitRun, pool: Any, bound: SharedBound | None
) -> None:
    """Run the parts the combination hands out, round by round, until it decides the level."""
    parts = combination.split.parts
    while combination.outcome is None:
        handed = combination.hand_out()
        left = _left(limits, combination)
        # Nothing handed out while undecided: parts run in order stopped with the level's limits spent.
        if not handed or left is None:
            combination.timed_out()
            return
        tasks = [(h.index, parts[h.index].level, h.window, *left) for h in handed]
        results = (
            _in_order(tasks, limits, combination) if pool is None else pool.imap_unordered(_run_part, tasks)
        )
        for part_run in results:
            run.runs.append(part_run)
            outcome = _whole(part_run, parts[part_run.index], combination.count)
            if bound is not None and outcome.status == Status.SOLVED:
                # The parts still running see it within a few thousand nodes, and stop: none is shorter.
                bound.offer(combination.length(outcome.solution))
            combination.took(part_run.index, outcome)
            if combination.outcome is not None:
                return  # decided: the parts not yet run are not needed (a pool's are stopped)


def _left(limits: LevelLimits, spent: Combination) -> tuple[float | None, int | None, float | None] | None:
    """Return (the level's deadline, nodes, CPU s left) for a part handed out now (Combination.left), or
    None when one is spent: a part a pool starts late gets the time left when it starts (_run_part)."""
    left = spent.left(limits.time_limit, limits.node_limit, limits.cpu_limit)
    if left is None:
        return None
    wall, nodes, cpu = left
    return (None if wall is None else time.monotonic() + wall), nodes, cpu


def _in_order(tasks: list[Any], limits: LevelLimits, spent: Combination) -> Any:
    """Run the parts here one after another, each with the limits left when it starts, while some are."""
    for index, level, window, *_ in tasks:
        left = _left(limits, spent)
        if left is None:
            return
        yield _run_part((index, level, window, *left))


def _whole(part_run: PartRun, part: Part, count: int) -> Outcome:
    """Return a part's run as the Combination takes it: the level's Outcome (_level_outcome), its CPU
    and wall time the part's as measured."""
    out = part_run.outcome
    stats = replace(out.stats, cpu_s=part_run.cpu_s, wall_s=part_run.wall_s)
    note = f"part {part_run.index + 1} of {count}"
    return _level_outcome(replace(out, stats=stats), part, note, part_run.resume)


def _level_outcome(out: Outcome, part: Part, note: str, resume: int | None) -> Outcome:
    """Return a part's Outcome as the whole level's: its answer combined with the part's prefix (wrong
    if it is not a list of steps), its message after note ("part i of n"), and, searched without an
    answer, resume (where its search stopped)."""
    message = f"{note}: {out.message}" if out.message else note
    if out.status == Status.SOLVED:
        try:
            return replace(out, solution=part.combine(out.solution), message=message)
        except TypeError as exc:
            return replace(
                out, status=Status.WRONG, message=f"{note}: its answer is not a list of steps: {exc}"
            )
    return replace(out, message=message, resume=resume)


class PartAsked(Protocol):
    """Which part of a split level to search (execution.spec.PartSpec is one): its 0-based index into
    the parts ``split(level, heuristic, of)`` gives, how many that split gave when the part was planned,
    and (best of all) the iteration window to search and the best whole-level length known."""

    @property
    def index(self) -> int: ...
    @property
    def of(self) -> int: ...
    @property
    def count(self) -> int: ...
    @property
    def window(self) -> tuple[int, int] | None: ...
    @property
    def best(self) -> int | None: ...


# The bounds the parts of best-of-all levels share between the processes of one machine, by
# shared_key: made by the run's executor before its processes start, handed to each (share_bounds).
_SHARED: dict[str, SharedBound] = {}


def shared_key(level_hash: str, heuristic: str) -> str:
    """Return the key of a split level's shared bound: its attempt (level and heuristic)."""
    return f"{level_hash}:{heuristic}"


def share_bounds(bounds: Mapping[str, SharedBound]) -> None:
    """Make this process (and the solver children it forks) search the parts of these levels with
    these bounds, shared with the processes that got them too: an answer one part finds, offered to
    its level's bound, stops the others within a few thousand nodes."""
    _SHARED.clear()
    _SHARED.update(bounds)


def part_work(
    kind: PuzzleKind, level: Any, heuristic: str, part: PartAsked, key: str | None = None
) -> Callable[[Budget], Outcome] | str:
    """Return the work that searches one part of level (called with the attempt's Budget), or why not.

    The work solves the part's sub-level with the heuristic's solver and returns the whole level's
    Outcome: a part's answer combined with its prefix (``part.combine``), for the kind's ``verify``
    to check on the level; its nodes the part's own (the split's are the caller's to count, once).
    Best of all: the part searches with the SharedBound share_bounds gave for key, or one of its
    own, on ``budget.bound``, the part's best offered to it and its window set, and a part that
    searched its window without an answer
    ends no_solution with ``resume`` (SharedBound.resume: at or past the best, nothing shorter is
    left in the part; None, its tree is searched through). First found ignores window and best.
    Why not (one line): a kind or heuristic
    that does not split this level, an index past the parts, a split that gives another count than
    the one planned (splits must be deterministic), or a split that fails.
    """
    name, solve = kind.solver(heuristic)
    if part.index >= part.count:
        return f"part index {part.index} is past the {part.count} parts planned (0 to {part.count - 1})"
    if kind.split is None:
        return f"kind {kind.name} does not split levels: run the level whole, without a part"
    try:
        split = kind.split(level, name, part.of)
    except Exception as exc:  # a kind's bug must not take the worker down
        return f"splitting the level into {part.of} parts failed: {type(exc).__name__}: {exc}"
    if split is None:
        return f"heuristic {name} of kind {kind.name} does not split this level: run it whole, without a part"
    if len(split.parts) != part.count:
        return (
            f"splitting the level into {part.of} parts gave {len(split.parts)}, the run planned "
            f"{part.count}: a split must give the same parts everywhere (the same packsolve on every machine)"
        )
    shared = split.combine == Combine.BEST_OF_ALL
    note = f"part {part.index + 1} of {part.count}"
    window = part.window if shared else None
    return _PartWork(solve, split.parts[part.index], shared, window, part.best, note, key)


# How often a first-found part looks whether another part of its level has found an answer.
FOUND_POLL_S = 0.02


def _stop_once_found(bound: SharedBound) -> None:
    """In the solver child of a first-found part: end this process once any part of the level has an
    answer (offered to the level's shared bound by the executor), whatever its search is doing (a
    native search included); the executor, which decided the level already, counts it as stopped."""

    def watch() -> None:
        while bound.best() is None:
            time.sleep(FOUND_POLL_S)
        os.kill(os.getpid(), signal.SIGKILL)

    if id(bound) in _WATCHED:  # a kept child running the level's parts one after another: once
        return
    _WATCHED.add(id(bound))
    threading.Thread(target=watch, name="packsolve-part-found", daemon=True).start()


# The bounds a watcher of this process (a solver child) looks at already (_stop_once_found).
_WATCHED: set[int] = set()


@dataclass(frozen=True)
class _PartWork:
    """One part's work, as a solver child runs it (picklable, as the kind's solver is, for a kept child)."""

    solve: Solve
    part: Part
    shared: bool  # best of all: search with a SharedBound of its own
    window: tuple[int, int] | None
    best: int | None
    note: str  # "part i of n", before the solver's message
    key: str | None = None  # its level's shared bound, where share_bounds gave one (shared_key)

    def __call__(self, budget: Budget) -> Outcome:
        """Search the part under budget; return the whole level's Outcome (see part_work)."""
        bound = None
        if not self.shared and self.key in _SHARED:
            _stop_once_found(_SHARED[self.key])
        if self.shared:
            # This machine's bound of the level, or the part's own: its best came with it.
            bound = _SHARED.get(self.key or "") or SharedBound(shared=False)
            if self.best is not None:
                bound.offer(self.best)
            bound.window = self.window
            bound.resume = None  # a shared bound's, left by the part this process ran before
            budget.bound = bound
        out = self.solve(self.part.level, budget)
        resume = bound.resume if bound is not None and out.status == Status.NO_SOLUTION else None
        return _level_outcome(out, self.part, self.note, resume)
