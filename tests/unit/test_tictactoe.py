"""Tic-tac-toe kind: the write-up's sample, the searches against each other, legality, verify."""

from __future__ import annotations

import pytest

from packsolve.budget import Budget
from packsolve.levels import LevelError, make_level
from packsolve.outcome import Status
from packsolve.puzzles import get_kind

KIND = get_kind("tictactoe")
HEURISTICS = sorted(KIND.solvers)
SAMPLE = {"board": [".XO", ".O.", "X.."], "to_move": "O"}


def solve(data, heuristic=None, **limits):
    level = KIND.parse(data)
    _, fn = KIND.solver(heuristic)
    return level, fn(level, Budget(**(limits or {"time_limit": 20})))


@pytest.mark.parametrize("heuristic", HEURISTICS)
def test_write_up_sample_wins_at_row1_col2_and_row2_col2(heuristic):
    level, out = solve(SAMPLE, heuristic)
    assert out.status == Status.SOLVED
    assert out.solution == {"value": "win", "winning_moves": [[1, 2], [2, 2]]}
    assert KIND.verify(level, out.solution) is None
    assert KIND.render(level, out.solution).splitlines()[1:] == [". X O", ". O !", "X . !"]


@pytest.mark.parametrize("heuristic", ["memo", "alphabeta"])
def test_empty_three_by_three_is_a_draw(heuristic):
    _, out = solve({"board": ["...", "...", "..."], "to_move": "X"}, heuristic)
    assert out.solution == {"value": "draw", "winning_moves": []}


def test_alpha_beta_solves_four_by_four_four_in_a_row_from_empty():
    _, out = solve({"board": ["...."] * 4, "to_move": "X", "k": 4}, "alphabeta", time_limit=60)
    assert out.status == Status.SOLVED
    assert out.solution == {"value": "draw", "winning_moves": []}
    _, plain = solve({"board": ["...."] * 4, "to_move": "X", "k": 4}, "plain", node_limit=20_000)
    assert plain.status == Status.TIMEOUT


@pytest.mark.parametrize(
    "data, expected",
    [
        # Two immediate wins for X.
        (
            {"board": ["OO.", "O.X", ".XX"], "to_move": "X"},
            {"value": "win", "winning_moves": [[0, 2], [2, 0]]},
        ),
        # X must block at (2, 1); O then forks.
        ({"board": [".X.", "X..", "O.O"], "to_move": "X"}, {"value": "loss", "winning_moves": []}),
        ({"board": ["XOX", "XOO", "OXX"], "to_move": "O"}, {"value": "draw", "winning_moves": []}),
        ({"board": ["X...", "....", "...."], "to_move": "O", "k": 2}, {"value": "loss", "winning_moves": []}),
    ],
)
def test_known_positions(data, expected):
    for heuristic in HEURISTICS:
        level, out = solve(data, heuristic)
        assert out.solution == expected, heuristic
        assert KIND.verify(level, out.solution) is None


def test_all_searches_agree_on_generated_positions():
    for data in KIND.generate("3x4k3", 25, 1) + KIND.generate("4x4k4", 15, 2):
        level = KIND.parse(data)
        if KIND.size(level) > 9:
            continue  # keep plain minimax within the test's time
        answers = [solve(data, h)[1].solution for h in HEURISTICS]
        assert answers[0] == answers[1] == answers[2], data
        assert KIND.verify(level, answers[0]) is None


@pytest.mark.parametrize(
    "data, fragment",
    [
        ({"board": ["XX.", "...", "..."], "to_move": "X"}, "impossible position"),
        ({"board": ["XXO", "X..", "..."], "to_move": "O"}, "impossible position"),
        ({"board": ["XOO", "...", "..."], "to_move": "O"}, "impossible position"),
        ({"board": ["XXX", "OOO", "..."], "to_move": "X"}, "both X and O"),
        ({"board": ["XXX", "OO.", "..."], "to_move": "O"}, "game is over"),
        ({"board": ["X.", "..."], "to_move": "O"}, "rectangle"),
        ({"board": ["X?.", "...", "..."], "to_move": "O"}, "column 2"),
        ({"board": ["...", "...", "..."], "to_move": "Z"}, "to_move"),
        ({"board": ["...", "...", "..."], "to_move": "X", "k": 4}, "'k'"),
        ({"board": ["..."]}, "to_move"),
    ],
)
def test_illegal_positions_are_level_errors(data, fragment):
    with pytest.raises(LevelError, match=fragment):
        KIND.parse(data)
    assert not make_level("x", {"kind": "tictactoe", **data}).valid


def test_verify_rejects_wrong_values_and_moves():
    level = KIND.parse(SAMPLE)
    assert "winning moves are" in KIND.verify(level, {"value": "win", "winning_moves": [[1, 2]]})
    assert "not a draw" in KIND.verify(level, {"value": "draw", "winning_moves": []})
    assert "exactly when" in KIND.verify(level, {"value": "loss", "winning_moves": [[1, 2]]})
    assert "not an empty cell" in KIND.verify(level, {"value": "win", "winning_moves": [[0, 1]]})
    assert "twice" in KIND.verify(level, {"value": "win", "winning_moves": [[1, 2], [1, 2]]})


def test_lowercase_and_list_rows_spell_the_same_level():
    a = make_level("a", {"kind": "tictactoe", **SAMPLE})
    b = make_level(
        "b", {"kind": "tictactoe", "board": [[".", "x", "o"], ".o.", "x.."], "to_move": "o", "k": 3}
    )
    assert a.valid and a.hash == b.hash


def test_generate_and_svg():
    levels = KIND.generate("4x4k4", 5, 3)
    assert levels == KIND.generate("4x4k4", 5, 3)
    for data in levels:
        assert make_level("g", data).valid
    level, out = solve(SAMPLE)
    picture = KIND.svg(level, out.solution)
    assert picture.startswith("<svg") and picture.count("#a5d6a7") == 2
