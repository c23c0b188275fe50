"""api.solver's Solve pickles when its function does, so a job holding it goes to the kept solver child
(execution.processes.hand_over); a job that cannot be pickled forks a fresh child for every batch."""

from __future__ import annotations

import functools
import pickle

import pytest

from packsolve.api import Budget, Status
from packsolve.puzzles import get_kind

BOARD = {"tiles": [[1, 2, 3], [4, 5, 6], [7, 0, 8]]}


@pytest.mark.parametrize(
    ("kind", "heuristic"),
    [
        ("sliding", "pdb"),  # an optimal search wrapped in an object (sliding.kind._Optimal)
        ("sliding", "linear-conflict"),
        ("sliding", "weighted"),  # solver(module_function)
        ("sudoku", "dlx"),  # @solver on a module-level function: pickled by its name
        ("tictactoe", "alphabeta"),
    ],
)
def test_a_builtin_solvers_job_pickles_and_solves_after(kind, heuristic):
    _, solve = get_kind(kind).solver(heuristic)
    again = pickle.loads(pickle.dumps(solve))
    if kind == "sliding":
        board = get_kind(kind).parse(BOARD)
        job = pickle.loads(pickle.dumps(functools.partial(solve, board)))
        out = job(Budget(time_limit=10))
        assert out.status == Status.SOLVED and get_kind(kind).verify(board, out.solution) is None
    assert callable(again) and again.__name__ == solve.__name__
