"""A test-only puzzle kind whose solvers misbehave on purpose (reached via PACKSOLVE_EXTRA_KINDS).

Level: {"kind": "chaos", "id": N, "ms": M}. Heuristics:
  sleep (default) - works M ms, charging the budget as it goes, then answers [M]
  hog   - allocates without bound          -> memout under --memory-limit
  deep  - recurses without bound           -> error (RecursionError)
  deaf  - ignores its budget, never ends   -> timeout at the hard kill
  segv  - the solver process dies of SIGSEGV -> error
  mark  - as sleep, after appending the level's id to the file named by CHAOS_STARTED (which started)
"""

from __future__ import annotations

import faulthandler
import os
import signal
import time
from collections.abc import Mapping
from typing import Any

from packsolve.api import Budget, LevelError, Outcome, PuzzleKind, Status, solved, solver

ENV = "chaos:tests.support.kinds.chaos_kind"  # the PACKSOLVE_EXTRA_KINDS entry that registers this kind


def parse(data: Mapping[str, Any]) -> dict[str, int]:
    out = {}
    for key, top in (("id", 10**9), ("ms", 600_000)):
        value = data.get(key)
        if type(value) is not int or not 0 <= value <= top:
            raise LevelError(f"chaos level needs an integer {key!r} in 0..{top}")
        out[key] = value
    return out


@solver
def sleep(level: dict[str, int], budget: Budget) -> Outcome:
    end = time.monotonic() + level["ms"] / 1000
    while time.monotonic() < end:
        budget.charge()
        budget.check_clock()
        time.sleep(0.005)
    return solved([level["ms"]])


@solver
def mark(level: dict[str, int], budget: Budget) -> Outcome:
    with open(os.environ["CHAOS_STARTED"], "a") as f:
        f.write(f"{level['id']}\n")
    return sleep(level, budget)


@solver
def cpus(level: dict[str, int], budget: Budget) -> Outcome:
    """Burn the level's ms of CPU, then say which CPUs this process could run on (its affinity)."""
    end = time.process_time() + level["ms"] / 1000
    while time.process_time() < end:
        budget.charge()
    return solved([level["ms"]], message="cpus " + ",".join(str(c) for c in sorted(os.sched_getaffinity(0))))


@solver
def hog(level: dict[str, int], budget: Budget) -> Outcome:
    hoard = []
    while True:
        hoard.append(bytearray(8 * 2**20))
        budget.charge()


def _down(n: int) -> int:
    return _down(n + 1) + 1


@solver
def deep(level: dict[str, int], budget: Budget) -> Outcome:
    _down(0)
    return Outcome(Status.NO_SOLUTION)


@solver
def deaf(level: dict[str, int], budget: Budget) -> Outcome:
    while True:  # never looks at its budget
        time.sleep(0.05)


@solver
def segv(level: dict[str, int], budget: Budget) -> Outcome:
    faulthandler.disable()  # a C crash, not a Python traceback dump in the test log
    os.kill(os.getpid(), signal.SIGSEGV)
    return Outcome(Status.NO_SOLUTION)


def verify(level: dict[str, int], solution: Any) -> str | None:
    return None if solution == [level["ms"]] else f"expected [{level['ms']}]"


KIND = PuzzleKind(
    name="chaos",
    parse=parse,
    canonical=lambda level: dict(level),
    solvers={
        "sleep": sleep,
        "hog": hog,
        "deep": deep,
        "deaf": deaf,
        "segv": segv,
        "mark": mark,
        "cpus": cpus,
    },
    default="sleep",
    verify=verify,
    render=lambda level, solution=None: f"chaos {level}",
    svg=lambda level, solution=None: "<svg/>",
    size=lambda level: level["ms"],
    description="test-only misbehaving solvers",
)
