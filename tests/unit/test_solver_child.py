"""The solver child is kept between batches (a fork per tiny attempt cost more than the attempt),
and replaced whenever it cannot be trusted or reached: grown, dead, killed, or unable to take a job.
execute_overlapped asks the caller's claim gate once while it solves (or never, past a quick ending)
and drops unwanted results."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

import pytest

from packsolve.api import PuzzleKind
from packsolve.execution import (
    AttemptSpec,
    Limits,
    execute_attempts,
    execute_overlapped,
    processes,
)
from packsolve.execution.child import RETIRE_GROWTH_MB
from packsolve.execution.supervisor import ABANDON_GRACE_S
from packsolve.outcome import Outcome, Status
from tests.support.programs import alive

_HOARD: list[bytearray] = []


def _pid(level, budget):
    budget.charge()
    return Outcome(Status.SOLVED, os.getpid())


def _grow(level, budget):
    """Keep (and touch) more memory than a kept child may grow by, then report the pid."""
    block = bytearray((RETIRE_GROWTH_MB + 32) * 2**20)
    block[::4096] = b"x" * len(block[::4096])
    _HOARD.append(block)
    return Outcome(Status.SOLVED, os.getpid())


# A test-only kind whose heuristics are the solvers above, accepting any answer: it runs them
# through the production entry point (registered by the probe fixture's PACKSOLVE_EXTRA_KINDS).
KIND = PuzzleKind(
    name="probe_child",
    parse=dict,
    canonical=dict,
    solvers={"pid": _pid, "grow": _grow},
    default="pid",
    verify=lambda level, solution: None,
    render=lambda level, solution=None: "",
    svg=lambda level, solution=None: "<svg/>",
    size=lambda level: 0,
)


def execute_one(spec: AttemptSpec) -> Outcome:
    """Run one attempt through the production entry point."""
    (outcome,) = execute_attempts([spec])
    return outcome


@pytest.fixture
def probe(request, monkeypatch):
    """Return run(heuristic, limits) -> Outcome: one of KIND's solvers through execute_attempts.

    KIND is registered next to the chaos kind, which some tests here run too.
    """
    request.getfixturevalue("chaos_env")
    extra = os.environ["PACKSOLVE_EXTRA_KINDS"]
    monkeypatch.setenv("PACKSOLVE_EXTRA_KINDS", f"{extra},{KIND.name}:{__name__}")

    def run(heuristic: str, limits: Limits) -> Outcome:
        return execute_one(AttemptSpec(KIND.name, heuristic, {}, limits))

    return run


@pytest.fixture
def pid_of(probe):
    """Return pid_of(heuristic): the pid of the solver child that ran it, which must have solved."""

    def pid_of(heuristic: str) -> int:
        out = probe(heuristic, Limits(time_limit=20))
        assert out.status is Status.SOLVED, out
        return int(out.solution)

    return pid_of


def chaos(ms: int, heuristic: str = "sleep", **limits) -> AttemptSpec:
    return AttemptSpec("chaos", heuristic, {"kind": "chaos", "id": 1, "ms": ms}, Limits(**limits))


def test_consecutive_batches_share_one_kept_solver_child(pid_of):
    first = pid_of("pid")
    assert first != os.getpid()
    assert pid_of("pid") == first == pid_of("pid")
    assert processes._kept is not None and processes._kept.pid == first


def test_a_child_that_grew_too_much_leaves_and_the_next_batch_gets_a_fresh_one(pid_of):
    pid_of("pid")
    grown = pid_of("grow")
    assert processes._kept is None  # it retired after reporting
    assert pid_of("pid") != grown


def test_a_job_that_cannot_be_pickled_runs_in_a_fresh_child(probe, pid_of, monkeypatch):
    pid_of("pid")
    seen = []

    def closure(level, budget):  # a local function: cannot travel through the kept child's pipe
        seen.append(1)
        return Outcome(Status.SOLVED, [os.getpid(), len(seen)])

    monkeypatch.setitem(KIND.solvers, "closure", closure)
    out = probe("closure", Limits(time_limit=20))
    assert out.status is Status.SOLVED and out.solution[1] == 1
    assert out.solution[0] != os.getpid()


def test_a_kept_child_killed_while_idle_is_replaced_without_losing_the_job(pid_of):
    idle = pid_of("pid")
    os.kill(idle, signal.SIGKILL)  # the next batch may find it dead, or still dying with its pipe open
    fresh = pid_of("pid")
    assert fresh != idle


def test_a_kept_child_that_dies_after_being_sent_a_batch_but_before_taking_it_costs_no_job(pid_of):
    idle = pid_of("pid")
    os.kill(idle, signal.SIGSTOP)  # the batch goes into its pipe; it cannot say it took it
    killer = threading.Timer(0.5, os.kill, (idle, signal.SIGKILL))
    killer.start()
    try:
        fresh = pid_of("pid")
    finally:
        killer.cancel()
    assert fresh != idle


@pytest.mark.usefixtures("chaos_env")
def test_a_kill_at_the_hard_limit_costs_the_kept_child_and_the_next_job_gets_a_new_one(pid_of):
    kept = pid_of("pid")
    out = execute_one(chaos(0, "deaf", time_limit=0.3))
    assert out.status is Status.TIMEOUT and "hard limit" in out.message
    assert pid_of("pid") != kept


class Gate:
    """A ClaimGate answering with claim(), counting how often it is asked."""

    def __init__(self, claim):
        self.answer = claim
        self.asked = 0

    def claim(self) -> bool:
        self.asked += 1
        return self.answer()


def execute_claimed(spec, claim, claim_after=0.0):
    """Run execute_overlapped as a worker does, its gate answering with claim(); it is asked once at most."""
    gate = Gate(claim)
    out = execute_overlapped(spec, gate, claim_after)
    assert gate.asked <= 1, "the gate was asked more than once"
    return out


@pytest.mark.usefixtures("chaos_env")
class TestExecuteOverlapped:
    def test_a_claimed_attempt_runs_once_with_the_claim_made_while_it_is_in_the_child(self):
        calls = []

        def claim() -> bool:
            calls.append(processes._kept is None)  # the child has the job; it is not idle (kept)
            return True

        out = execute_claimed(chaos(30, time_limit=5), claim)
        assert out is not None and out.status is Status.SOLVED and out.solution == [30]
        assert calls == [True]

    def test_an_unclaimed_quick_attempt_yields_nothing_and_keeps_its_child(self, pid_of):
        kept = pid_of("pid")
        assert execute_claimed(chaos(1, time_limit=5), lambda: False) is None
        assert processes._kept is not None and processes._kept.pid == kept

    def test_an_unclaimed_long_attempt_is_cut_short_and_its_child_killed(self, pid_of):
        kept = pid_of("pid")
        started = time.monotonic()
        assert execute_claimed(chaos(5000, time_limit=10), lambda: False) is None
        assert time.monotonic() - started < ABANDON_GRACE_S + 1.0
        assert pid_of("pid") != kept

    def test_a_claim_that_raises_propagates_and_leaves_no_child_behind(self, pid_of):
        def claim() -> bool:
            raise RuntimeError("database gone")

        busy = pid_of("pid")  # the kept child that will get the job
        with pytest.raises(RuntimeError, match="database gone"):
            execute_claimed(chaos(5000, time_limit=10), claim)
        assert processes._kept is None
        with pytest.raises(ProcessLookupError):  # killed and reaped, not left solving
            os.kill(busy, 0)

    def test_an_invalid_level_is_claimed_and_returned_without_a_child(self):
        spec = AttemptSpec("chaos", "sleep", {"kind": "chaos", "id": -1, "ms": 1}, Limits(5))
        out = execute_claimed(spec, lambda: True)
        assert out is not None and out.status is Status.INVALID
        assert execute_claimed(spec, lambda: False) is None

    def test_a_deferred_claim_is_never_made_for_an_attempt_that_ends_before_it_is_due(self):
        calls = []
        out = execute_claimed(chaos(1, time_limit=5), lambda: calls.append(1) or True, claim_after=2.0)
        assert out is not None and out.status is Status.SOLVED and out.solution == [1]
        assert calls == []

    def test_a_deferred_claim_is_made_once_when_the_attempt_outlasts_it(self):
        calls = []

        def claim() -> bool:
            calls.append(time.monotonic() - started)
            return True

        started = time.monotonic()
        out = execute_claimed(chaos(400, time_limit=5), claim, claim_after=0.1)
        assert out is not None and out.status is Status.SOLVED and out.solution == [400]
        assert len(calls) == 1 and 0.1 <= calls[0] < 0.35  # when due, not at the end (0.4 s)

    def test_a_deferred_claim_declined_cuts_the_attempt_short(self):
        started = time.monotonic()
        assert execute_claimed(chaos(5000, time_limit=10), lambda: False, claim_after=0.1) is None
        assert time.monotonic() - started < 0.1 + ABANDON_GRACE_S + 1.0

    def test_a_deferred_claim_does_not_delay_the_kill_at_the_hard_limit(self):
        calls = []
        out = execute_claimed(
            chaos(0, "deaf", time_limit=0.3), lambda: calls.append(1) or True, claim_after=0.05
        )
        assert out is not None and out.status is Status.TIMEOUT and "hard limit" in out.message
        assert calls == [1]

    def test_a_slow_claim_does_not_push_back_the_kill_at_the_hard_limit(self):
        """The hard limit runs from the hand-over, not from the claim's return (its database may be slow)."""
        spec = chaos(0, "deaf", time_limit=0.3)
        started = time.monotonic()
        out = execute_claimed(spec, lambda: time.sleep(1.0) or True)
        elapsed = time.monotonic() - started
        assert out is not None and out.status is Status.TIMEOUT and "hard limit" in out.message
        assert spec.limits.hard_time() <= elapsed < spec.limits.hard_time() + 0.6

    def test_an_invalid_level_with_a_deferred_claim_comes_back_unclaimed(self):
        spec = AttemptSpec("chaos", "sleep", {"kind": "chaos", "id": -1, "ms": 1}, Limits(5))
        calls = []
        out = execute_claimed(spec, lambda: calls.append(1) or False, claim_after=0.05)
        assert out is not None and out.status is Status.INVALID and calls == []


def test_a_solver_child_busy_in_a_job_dies_with_the_process_that_forked_it():
    """A worker killed -9 must not leave its solver child running a long search on its own."""
    import subprocess

    code = (
        "import os, time\n"
        "from packsolve.execution import AttemptSpec, Limits, execute_attempts\n"
        "from packsolve.api import PuzzleKind\n"
        "def slow(level, budget):\n"
        "    print(os.getpid(), flush=True)\n"
        "    time.sleep(60)\n"
        "none = lambda *args: None\n"
        "KIND = PuzzleKind('probe', dict, dict, {'slow': slow}, 'slow', none, none, none, none)\n"
        "os.environ['PACKSOLVE_EXTRA_KINDS'] = 'probe:__main__'\n"  # this script is the kind's module
        "list(execute_attempts([AttemptSpec('probe', 'slow', {}, Limits(120))]))\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        child = int(proc.stdout.readline())
        assert alive(child)  # alive while its parent is
        proc.kill()  # -9: no atexit, no chance to stop it
        proc.wait(10)
        deadline = time.monotonic() + 5
        # A zombie has ended: this test process, a subreaper once it ran attempts, adopts it unreaped.
        while alive(child):
            assert time.monotonic() < deadline, "the solver child outlived its parent"
            time.sleep(0.05)
    finally:
        proc.kill()
