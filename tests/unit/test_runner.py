"""execute_attempts: every way a solver child can end becomes one Outcome, under real limits."""

from __future__ import annotations

import os
import re
import signal
import sys
import time
from dataclasses import replace

import pytest

from packsolve.api import PuzzleKind
from packsolve.execution import AttemptSpec, Limits, execute_attempts
from packsolve.outcome import Outcome, SearchStats, Status

# 14x14 open grid with a blocked cell next to the start: plain DFS cannot settle it in seconds.
HARD = {"grid": ["S.#" + "." * 11] + ["." * 14] * 13}
EASY = {"grid": ["S...", "....", "...."]}


def execute_one(spec: AttemptSpec) -> Outcome:
    """Run one attempt through the production entry point."""
    (outcome,) = execute_attempts([spec])
    return outcome


def test_solved_attempt_is_verified_and_measured():
    out = execute_one(AttemptSpec("onestroke", "plain", EASY, Limits(5)))
    assert out.status is Status.SOLVED
    assert len(out.solution) == 12 and out.solution[0] == [0, 0]
    assert out.nodes >= 12
    assert out.stats.wall_s > 0 and out.stats.cpu_s >= 0 and out.stats.peak_rss_mb > 1


def test_time_limit_ends_as_timeout_close_to_the_limit():
    start = time.monotonic()
    out = execute_one(AttemptSpec("onestroke", "plain", HARD, Limits(time_limit=1)))
    elapsed = time.monotonic() - start
    assert out.status is Status.TIMEOUT
    assert 1.0 <= elapsed < 3.0
    assert out.nodes > 1000  # it did search


def test_node_limit_ends_as_timeout_naming_the_limit():
    out = execute_one(AttemptSpec("onestroke", "plain", HARD, Limits(node_limit=500)))
    assert out.status is Status.TIMEOUT and "node limit 500" in out.message
    assert out.nodes == 501


def test_unknown_heuristic_and_kind_are_errors_naming_the_choices():
    out = execute_one(AttemptSpec("onestroke", "nope", EASY))
    assert out.status is Status.ERROR and "plain" in out.message
    out = execute_one(AttemptSpec("chess", "plain", EASY))
    assert out.status is Status.ERROR and "unknown kind" in out.message


def test_unparseable_level_is_invalid():
    out = execute_one(AttemptSpec("onestroke", "plain", {"grid": ["S", "?"]}))
    assert out.status is Status.INVALID and "unknown character" in out.message


def test_proved_infeasible_level_is_no_solution():
    out = execute_one(AttemptSpec("onestroke", "plain", {"grid": [".S."]}, Limits(5)))
    assert out.status is Status.NO_SOLUTION


def test_wrong_answer_is_stored_as_wrong(monkeypatch):
    from packsolve.api import solver
    from packsolve.puzzles import get_kind

    kind = get_kind("onestroke")

    @solver
    def liar(level, budget):
        budget.charge()
        return Outcome(Status.SOLVED, [[0, 0], [5, 5]])

    monkeypatch.setitem(kind.solvers, "plain", liar)  # type: ignore[index]
    out = execute_one(AttemptSpec("onestroke", "plain", EASY, Limits(5)))
    assert out.status is Status.WRONG
    assert "verify rejected" in out.message
    assert out.solution == [[0, 0], [5, 5]]  # kept, for inspection


def _allocate(level, budget):
    hog = []
    while True:
        hog.append(bytearray(16 * 2**20))


def _recurse(level, budget):
    def down(n):
        return down(n + 1) + 1

    return down(0)


def _crash(level, budget):
    raise ZeroDivisionError("boom")


def _ignore_budget(level, budget):
    while True:
        time.sleep(0.01)


def _segfault(level, budget):
    os.kill(os.getpid(), signal.SIGSEGV)


def _ok(level, budget):
    budget.charge(7)
    return Outcome(Status.SOLVED, [1, 2, 3])


def _chatty(level, budget):
    # A built-in solver's log lines: a long log on stderr, a short one on stdout.
    log = "".join(f"step {i}\n" for i in range(20_000))
    return Outcome(Status.SOLVED, [1], stdout="done\n", stderr=log)


# A test-only kind whose heuristics are the misbehaving solvers above, accepting any answer: it runs
# them through the production entry point (registered by the probe fixture's PACKSOLVE_EXTRA_KINDS).
KIND = PuzzleKind(
    name="probe_runner",
    parse=dict,
    canonical=dict,
    solvers={
        "allocate": _allocate,
        "recurse": _recurse,
        "crash": _crash,
        "ignore_budget": _ignore_budget,
        "segfault": _segfault,
        "ok": _ok,
        "chatty": _chatty,
    },
    default="ok",
    verify=lambda level, solution: None,
    render=lambda level, solution=None: "",
    svg=lambda level, solution=None: "<svg/>",
    size=lambda level: 0,
)


@pytest.fixture
def probe(monkeypatch):
    """Return run(heuristic, limits) -> Outcome: one of KIND's solvers through execute_attempts."""
    monkeypatch.setenv("PACKSOLVE_EXTRA_KINDS", f"{KIND.name}:{__name__}")

    def run(heuristic: str, limits: Limits) -> Outcome:
        return execute_one(AttemptSpec(KIND.name, heuristic, {}, limits))

    return run


def test_memory_hog_ends_as_memout_and_parent_survives(probe):
    out = probe("allocate", Limits(time_limit=20, memory_limit_mb=200))
    assert out.status is Status.MEMOUT, out
    assert "200 MB" in out.message


def test_unbounded_recursion_ends_as_error(probe):
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 1000))
    out = probe("recurse", Limits(time_limit=20))
    assert out.status is Status.ERROR and "RecursionError" in out.message


def test_exception_ends_as_error_with_type_message_and_place(probe):
    out = probe("crash", Limits(time_limit=20))
    assert out.status is Status.ERROR
    assert "ZeroDivisionError: boom" in out.message and "test_runner.py" in out.message


def test_solver_ignoring_its_budget_is_killed_at_the_hard_limit(probe):
    start = time.monotonic()
    out = probe("ignore_budget", Limits(time_limit=0.5))
    assert out.status is Status.TIMEOUT and "hard limit" in out.message
    assert time.monotonic() - start < Limits(time_limit=0.5).hard_time() + 1.0


def test_crashing_process_ends_as_error_naming_the_signal(probe):
    out = probe("segfault", Limits(time_limit=20))
    assert out.status is Status.ERROR and "SIGSEGV" in out.message


def test_normal_child_reports_payload_and_its_own_usage(probe):
    out = probe("ok", Limits(time_limit=20))
    # Every field pinned, as the child's payload was: only the measured usage may vary.
    assert out == Outcome(Status.SOLVED, [1, 2, 3], replace(out.stats, nodes=7), "")
    assert isinstance(out.stats, SearchStats) and out.stats.wall_s > 0


def test_hard_time_grows_with_the_limit_but_stays_close():
    assert Limits().hard_time() is None
    assert 1 < Limits(time_limit=1).hard_time() <= 3
    assert 600 < Limits(time_limit=600).hard_time() <= 605


def test_a_built_in_solvers_log_lines_are_kept_like_a_programs_within_the_cap(probe):
    [out] = execute_attempts([AttemptSpec(KIND.name, "chatty", {}, Limits(time_limit=20))], 1000)
    assert out.status is Status.SOLVED and out.stdout == "done\n"
    head, cut, tail = re.split(r"\n\[… ([\d,]+) bytes cut …\]\n", out.stderr)
    assert head.startswith("step 0\n") and tail.endswith("step 19999\n")
    assert len(head) + len(tail) == 1000 - len("done\n") and int(cut.replace(",", "")) > 100_000
