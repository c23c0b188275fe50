"""Budget: node caps and deadlines raise BudgetExhausted; the solver wrapper turns that into timeout."""

from __future__ import annotations

import time

import pytest

from packsolve.api import solver
from packsolve.budget import Budget, BudgetExhausted
from packsolve.outcome import Outcome, Status


def test_node_cap_raises_after_exactly_the_limit():
    b = Budget(node_limit=10)
    for _ in range(10):
        b.charge()
    with pytest.raises(BudgetExhausted, match="node limit 10"):
        b.charge()
    assert b.nodes == 11


def test_deadline_raises_once_passed_even_between_clock_checks():
    b = Budget(time_limit=0.05)
    start = time.monotonic()
    with pytest.raises(BudgetExhausted, match="time limit"):
        while True:
            b.charge()
    assert 0.04 <= time.monotonic() - start < 1.0


def test_check_clock_and_remaining():
    b = Budget(time_limit=0.01)
    assert 0 < b.remaining() <= 0.01
    time.sleep(0.02)
    assert b.remaining() == 0
    with pytest.raises(BudgetExhausted):
        b.check_clock()
    assert Budget().remaining() is None


def test_charge_in_batches_counts_all_nodes():
    b = Budget(node_limit=1000)
    b.charge(600)
    with pytest.raises(BudgetExhausted):
        b.charge(600)
    assert b.nodes == 1200


@pytest.mark.parametrize("bad", [{"time_limit": 0}, {"time_limit": -1}, {"node_limit": 0}])
def test_non_positive_limits_are_refused(bad):
    with pytest.raises(ValueError):
        Budget(**bad)


def test_solver_wrapper_turns_exhaustion_into_timeout_with_nodes():
    @solver
    def spin(level, budget):
        while True:
            budget.charge()

    out = spin(None, Budget(node_limit=50))
    assert out.status is Status.TIMEOUT
    assert out.nodes == 51
    assert "node limit" in out.message


def test_solver_wrapper_counts_nodes_from_the_budget():
    @solver
    def three(level, budget):
        budget.charge(3)
        return Outcome(Status.SOLVED, [1])

    out = three(None, Budget())
    assert (out.status, out.solution, out.nodes) == (Status.SOLVED, [1], 3)
