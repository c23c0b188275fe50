"""api.solver's Solve pickles when its function does, so a job holding it goes to the kept solver child
(execution.processes.hand_over); a job that cannot be pickled forks a fresh child for every batch."""

from __future__ import annotations

import functools
import pickle
from pathlib import Path

import pytest

from packsolve.api import Budget, Status
from packsolve.levels import read_levels
from packsolve.puzzles import _MODULES, get_kind

PACKS = Path(__file__).resolve().parents[2] / "examples" / "packs"

EVERY_SOLVER = [(kind, heuristic) for kind in _MODULES for heuristic in get_kind(kind).solvers]


def _smallest_level(kind: str):  # noqa: ANN202 - a parsed level of the kind
    levels = [lv for lv in read_levels([PACKS / kind]) if lv.error is None and lv.kind == kind]
    assert levels, f"examples/packs/{kind} holds no valid {kind} level"
    return get_kind(kind).parse(min(levels, key=lambda lv: lv.size).data)


def test_every_builtin_kind_and_heuristic_is_listed():
    # Guards the parametrisation below against an empty or shrunken list.
    assert len(EVERY_SOLVER) > len(_MODULES) and {k for k, _ in EVERY_SOLVER} == set(_MODULES)


@pytest.mark.parametrize(("kind", "heuristic"), EVERY_SOLVER)
def test_every_builtin_solvers_job_pickles_and_solves_after(kind, heuristic):
    puzzle = get_kind(kind)
    _, solve = puzzle.solver(heuristic)
    level = _smallest_level(kind)
    job = pickle.loads(pickle.dumps(functools.partial(solve, level)))
    out = job(Budget(time_limit=5))
    assert out.status in (Status.SOLVED, Status.NO_SOLUTION, Status.TIMEOUT), out.message
    if out.status == Status.SOLVED:
        assert puzzle.verify(level, out.solution) is None
    again = pickle.loads(pickle.dumps(solve))
    assert callable(again) and again.__name__ == solve.__name__
