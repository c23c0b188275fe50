"""The kind keeps packsolve's contract (check_kind), and its solvers agree on generated levels."""

from __future__ import annotations

import pytest
from packsolve.api import Budget, LevelError, Status
from packsolve.testing import check_kind

from packsolve_lightsout import KIND


def test_the_kind_passes_packsolves_contract_check():
    check_kind(KIND)


def test_both_heuristics_find_the_same_number_of_presses_on_generated_levels():
    for level in KIND.generate("3x4", 20, seed=1):
        board = KIND.parse(level)
        plain = KIND.solvers["plain"](board, Budget(10))
        chase = KIND.solvers["chase"](board, Budget(10))
        assert plain.status is chase.status is Status.SOLVED
        assert len(plain.solution) == len(chase.solution)
        assert KIND.verify(board, chase.solution) is None


def test_a_row_with_another_character_is_refused_with_its_row_number():
    with pytest.raises(LevelError, match="row 1 may hold only 0"):
        KIND.parse({"lights": ["01", "0x"]})
