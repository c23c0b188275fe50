"""Shared helpers of the one-stroke benchmarks: run a heuristic under a real Budget, format tables.

Every solver runs in this one process, one level at a time, under
``Budget(time_limit=...)`` exactly as the runner gives it; wall time is measured
around the solver call and every solution is checked with the kind's verify.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from benchmarks.public_data import public_data
from packsolve.budget import Budget
from packsolve.outcome import Status
from packsolve.puzzles import get_kind

KIND = get_kind("onestroke")
# What `seconds` measures: wall time, or the process's CPU time (CP-SAT's threads included) where a
# benchmark asks for it on a machine too busy for wall time to mean much.
CLOCK = time.perf_counter


@dataclass(frozen=True)
class Run:
    """One heuristic on one level: final status, nodes, wall seconds, and whether verify accepted it."""

    status: str
    nodes: int
    seconds: float
    verified: bool | None  # None when there was no solution to check


def run(level: Any, heuristic: str, time_limit: float, quick: float = 1.0, tries: int = 3) -> Run:
    """Return the Run of one heuristic on one parsed level under a fresh time-limited Budget.

    Runs shorter than `quick` seconds are repeated (`tries` in all) and the
    fastest kept, for every heuristic alike: on a shared two-core machine one
    sub-second timing can be ten times off.
    """
    best = _run_once(level, heuristic, time_limit)
    for _ in range(tries - 1):
        if best.seconds >= quick:
            break
        again = _run_once(level, heuristic, time_limit)
        if again.seconds < best.seconds:
            best = again
    return best


def _run_once(level: Any, heuristic: str, time_limit: float) -> Run:
    solve = KIND.solvers[heuristic]
    budget = Budget(time_limit=time_limit)
    t0 = CLOCK()
    out = solve(level, budget)
    seconds = CLOCK() - t0
    verified = None
    status = out.status
    if status == Status.SOLVED:
        verified = KIND.verify(level, out.solution) is None
        if not verified:
            status = Status.WRONG
    return Run(str(status), out.nodes, seconds, verified)


def warm_up(heuristics: list[str]) -> None:
    """Run each heuristic once on a tiny level, so imports (OR-Tools takes seconds) are not timed."""
    level = KIND.parse({"grid": ["S..", "..."]})
    for h in heuristics:
        run(level, h, 10.0)


def read_real_levels() -> list[tuple[str, list[str], int]]:
    """Return (name, grid rows, published number of paths) for the 75 real levels."""
    levels = []
    for path in sorted(public_data("onestroke").glob("*.txt")):
        source = path.stem.split("_")[0]
        for line in path.read_text().splitlines():
            if not line.strip() or line.startswith("#"):
                continue
            ident, _rows, _cols, _open, paths, grid = line.split()[:6]
            levels.append((f"{source}#{ident}", grid.split("/"), int(paths)))
    return levels


def fmt_run(r: Run) -> str:
    mark = {"solved": "", "no_solution": " (proved none)", "timeout": " TIMEOUT"}.get(
        r.status, f" {r.status}"
    )
    return f"{r.nodes:,} / {r.seconds:.3f}{mark}"
