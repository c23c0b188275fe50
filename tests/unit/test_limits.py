"""Limits that hold: misbehaving solvers end as memout / error / timeout, and the caller goes on.

The solvers are the test-only `chaos` kind (tests/support/kinds/chaos_kind.py); each
one really allocates, recurses, ignores its budget or crashes.
"""

from __future__ import annotations

import os
import time

import pytest

from packsolve.execution import AttemptSpec, Limits, execute_attempts
from packsolve.outcome import Outcome, Status

pytestmark = pytest.mark.usefixtures("chaos_env")


def execute_one(spec: AttemptSpec) -> Outcome:
    """Run one attempt through the production entry point."""
    (outcome,) = execute_attempts([spec])
    return outcome


def spec(heuristic: str, ms: int = 20, **limits) -> AttemptSpec:
    return AttemptSpec("chaos", heuristic, {"kind": "chaos", "id": 1, "ms": ms}, Limits(**limits))


def test_unbounded_allocation_is_memout_naming_the_limit():
    out = execute_one(spec("hog", time_limit=10, memory_limit_mb=150))
    assert out.status is Status.MEMOUT and "150 MB" in out.message


def test_unbounded_recursion_is_error_naming_recursion():
    out = execute_one(spec("deep", time_limit=10))
    assert out.status is Status.ERROR and "RecursionError" in out.message


def test_a_solver_ignoring_its_budget_is_killed_at_the_hard_limit_as_timeout():
    limits = Limits(time_limit=0.5)
    started = time.monotonic()
    out = execute_one(spec("deaf", time_limit=0.5))
    took = time.monotonic() - started
    assert out.status is Status.TIMEOUT and "hard limit" in out.message
    assert limits.hard_time() <= took < limits.hard_time() + 1.5


def test_a_solver_process_dying_of_a_signal_is_error_naming_it():
    out = execute_one(spec("segv", time_limit=5))
    assert out.status is Status.ERROR and "SIGSEGV" in out.message


def test_one_chunk_survives_every_kind_of_misbehaviour_and_solves_the_rest_in_order():
    """A chunk runs in shared solver children: a death or kill must cost only its own attempt."""
    specs = [
        spec("sleep", 10, time_limit=5),
        spec("hog", time_limit=5, memory_limit_mb=150),
        spec("sleep", 11, time_limit=5),
        spec("deep", time_limit=5),
        spec("deaf", time_limit=0.5),
        spec("segv", time_limit=5),
        spec("sleep", 12, time_limit=5),
    ]
    outs = list(execute_attempts(specs))
    assert [o.status.value for o in outs] == [
        "solved",
        "memout",
        "solved",
        "error",
        "timeout",
        "error",
        "solved",
    ]
    assert [o.solution for o in outs if o.status is Status.SOLVED] == [[10], [11], [12]]


def test_the_caller_process_is_untouched_by_its_solvers_limits():
    before = os.getpid()
    execute_one(spec("hog", time_limit=5, memory_limit_mb=100))
    # The parent can still allocate far beyond the child's cap: the rlimit stayed in the child.
    big = bytearray(300 * 2**20)
    assert os.getpid() == before and len(big) == 300 * 2**20
