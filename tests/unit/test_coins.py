"""Coins kind: the write-up's sample, every heuristic against brute force, verify and parsing."""

from __future__ import annotations

import random
from itertools import combinations

import pytest

from packsolve.budget import Budget
from packsolve.levels import LevelError, make_level
from packsolve.outcome import Status
from packsolve.puzzles import get_kind

KIND = get_kind("coins")
HEURISTICS = sorted(KIND.solvers)


def solve(data, heuristic=None, **limits):
    level = KIND.parse(data)
    _, fn = KIND.solver(heuristic)
    return level, fn(level, Budget(**(limits or {"time_limit": 10})))


@pytest.mark.parametrize("heuristic", HEURISTICS)
def test_write_up_sample_needs_two_notes(heuristic):
    level, out = solve({"notes": [9, 1, 6, 3], "target": 10}, heuristic)
    assert out.status == Status.SOLVED
    assert out.solution == {"count": 2, "notes": [9, 1]}
    assert KIND.verify(level, out.solution) is None
    assert out.nodes > 0


def brute_force(notes, target):
    for k in range(len(notes) + 1):
        if any(sum(c) == target for c in combinations(notes, k)):
            return k
    return None


@pytest.mark.parametrize("heuristic", HEURISTICS)
def test_every_heuristic_matches_brute_force_on_small_levels(heuristic):
    rng = random.Random(7)
    for _ in range(120):
        notes = [rng.randint(1, 15) for _ in range(rng.randint(0, 9))]
        target = rng.randint(0, 50)
        level, out = solve({"notes": notes, "target": target}, heuristic)
        expected = brute_force(notes, target)
        if expected is None:
            assert out.status == Status.NO_SOLUTION, (notes, target)
            assert out.message
        else:
            assert out.status == Status.SOLVED, (notes, target)
            assert out.solution["count"] == expected, (notes, target)
            assert KIND.verify(level, out.solution) is None


def test_impossible_targets_say_why():
    _, out = solve({"notes": [4, 6, 10], "target": 7})
    assert out.status == Status.NO_SOLUTION and "multiple of 2" in out.message
    _, out = solve({"notes": [1, 2], "target": 4})
    assert out.status == Status.NO_SOLUTION and "sum to 3" in out.message


def test_default_solves_sixty_notes_with_a_large_target_quickly():
    [data] = KIND.generate("80:100000", 1, 3)
    level, out = solve(data, None, time_limit=20)
    assert out.status == Status.SOLVED
    assert KIND.verify(level, out.solution) is None


def test_auto_falls_back_to_dp_when_bnb_takes_too_long():
    """Multiples of 3 plus a 1 never sum to 2 mod 3; bnb cannot see that, the DP table can."""
    data = {"notes": [3 * i for i in range(334, 374)] + [1], "target": 3 * 6000 + 2}
    _, out = solve(data, "bnb", node_limit=100_000)
    assert out.status == Status.TIMEOUT
    _, out = solve(data, "auto")
    assert out.status == Status.NO_SOLUTION


def test_plain_times_out_cleanly_on_sixty_notes():
    [data] = KIND.generate("60", 1, 1)
    _, out = solve(data, "plain", node_limit=20_000)
    assert out.status == Status.TIMEOUT and out.nodes > 20_000


def test_auto_copes_with_thousands_of_notes():
    level = KIND.parse({"notes": [1] * 3000 + [2] * 10, "target": 1520})
    out = KIND.solvers["auto"](level, Budget(time_limit=20))
    assert out.status == Status.SOLVED and out.solution["count"] == 1510  # ten 2s and 1500 ones
    assert KIND.verify(level, out.solution) is None
    with pytest.raises(RuntimeError, match="recursion limit"):
        KIND.solvers["bnb"](level, Budget(time_limit=20))


def test_plain_recursion_limit_becomes_a_clear_error():
    level = KIND.parse({"notes": [1] * 5000, "target": 3})
    with pytest.raises(RuntimeError, match="recursion limit"):
        KIND.solvers["plain"](level, Budget(time_limit=10))


def test_verify_rejects_wrong_answers():
    level = KIND.parse({"notes": [9, 1, 6, 3], "target": 10})
    assert "fewest" in KIND.verify(level, {"count": 3, "notes": [6, 3, 1]})
    assert "sum" in KIND.verify(level, {"count": 2, "notes": [9, 3]})
    assert "does not have" in KIND.verify(level, {"count": 2, "notes": [5, 5]})
    assert "count" in KIND.verify(level, {"count": 1, "notes": [9, 1]})
    assert KIND.verify(level, [9, 1]) is not None


def test_note_order_does_not_change_identity():
    a = make_level("a", {"kind": "coins", "notes": [9, 1, 6, 3], "target": 10})
    b = make_level("b", {"kind": "coins", "notes": [1, 3, 6, 9], "target": 10})
    assert a.valid and a.hash == b.hash


@pytest.mark.parametrize(
    "data, fragment",
    [
        ({"notes": [1, 0], "target": 1}, "note 2"),
        ({"notes": [1, "2"], "target": 1}, "note 2"),
        ({"notes": 5, "target": 1}, "list"),
        ({"notes": [1], "target": -1}, "target"),
        ({"notes": [1]}, "target"),
    ],
)
def test_parse_errors_name_the_field(data, fragment):
    with pytest.raises(LevelError, match=fragment):
        KIND.parse(data)


def test_generate_is_reproducible_and_solvable():
    assert KIND.generate("12", 3, 5) == KIND.generate("12", 3, 5)
    for data in KIND.generate("12", 3, 5):
        assert make_level("g", data).valid
        assert solve(data)[1].status == Status.SOLVED


def test_render_and_svg_show_the_choice():
    level, out = solve({"notes": [9, 1, 6, 3], "target": 10})
    assert "9 + 1 = 10" in KIND.render(level, out.solution)
    picture = KIND.svg(level, out.solution)
    assert picture.startswith("<svg") and picture.count("#1e88e5") == 2
