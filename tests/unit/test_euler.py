"""Euler kind: Königsberg's bridges, Hierholzer and backtracking against brute force, verify, parsing."""

from __future__ import annotations

import random
from itertools import permutations

import pytest

from packsolve.budget import Budget
from packsolve.levels import LevelError, make_level
from packsolve.outcome import Status
from packsolve.puzzles import get_kind

KIND = get_kind("euler")
HEURISTICS = sorted(KIND.solvers)
KOENIGSBERG = {
    "edges": [["A", "B"], ["A", "B"], ["A", "C"], ["A", "C"], ["A", "D"], ["B", "D"], ["C", "D"]],
}


def solve(data, heuristic=None, **limits):
    level = KIND.parse(data)
    _, fn = KIND.solver(heuristic)
    return level, fn(level, Budget(**(limits or {"time_limit": 10})))


@pytest.mark.parametrize("heuristic", HEURISTICS)
def test_the_seven_bridges_have_no_walk_because_four_vertices_are_odd(heuristic):
    _, out = solve(KOENIGSBERG, heuristic)
    assert out.status == Status.NO_SOLUTION
    assert "4 vertices have odd degree" in out.message
    assert "A: 5" in out.message and "D: 3" in out.message


@pytest.mark.parametrize("heuristic", HEURISTICS)
@pytest.mark.parametrize(
    "data, reason",
    [
        ({"edges": [[1, 2], [3, 4]]}, "separate components"),
        ({"edges": [[1, 2], [2, 3]], "closed": True}, "closed walk needs every degree even"),
        ({"edges": [[1, 2], [2, 3]], "start": 2}, "must start at one of them"),
    ],
)
def test_infeasible_levels_say_why(heuristic, data, reason):
    _, out = solve(data, heuristic)
    assert out.status == Status.NO_SOLUTION and reason in out.message


def has_walk(edges, start, closed):
    """Brute force: try every order and orientation of the edges."""
    for order in permutations(edges):
        for flips in range(1 << len(order)):
            walk = []
            for i, (u, v) in enumerate(order):
                a, b = (v, u) if flips >> i & 1 else (u, v)
                if walk and walk[-1] != a:
                    break
                walk[len(walk) :] = [a, b] if not walk else [b]
            else:
                if (start is None or walk[0] == start) and (not closed or walk[0] == walk[-1]):
                    return True
    return False


@pytest.mark.parametrize("heuristic", HEURISTICS)
def test_every_heuristic_matches_brute_force_on_small_multigraphs(heuristic):
    rng = random.Random(4)
    for _ in range(60):
        vertices = rng.randint(2, 4)
        edges = [[rng.randrange(vertices), rng.randrange(vertices)] for _ in range(rng.randint(1, 5))]
        data = {"edges": edges}
        if rng.random() < 0.3:
            data["start"] = rng.choice(edges)[rng.randrange(2)]
        if rng.random() < 0.3:
            data["closed"] = True
        level, out = solve(data, heuristic)
        expected = has_walk([tuple(e) for e in edges], data.get("start"), data.get("closed", False))
        assert out.status == (Status.SOLVED if expected else Status.NO_SOLUTION), data
        if expected:
            assert KIND.verify(level, out.solution) is None


def test_hierholzer_walks_a_big_multigraph_in_one_pass():
    [data] = KIND.generate("20000", 1, 8)
    level, out = solve(data)
    assert out.status == Status.SOLVED and len(out.solution) == 20_001
    assert out.nodes == 20_000  # one node per edge walked: linear
    assert KIND.verify(level, out.solution) is None


def test_plain_recursion_limit_becomes_a_clear_error():
    level = KIND.parse({"edges": [[i, i + 1] for i in range(3000)]})
    with pytest.raises(RuntimeError, match="recursion limit"):
        KIND.solvers["plain"](level, Budget(time_limit=10))


def test_plain_gives_out_where_hierholzer_does_not():
    [data] = KIND.generate("40", 1, 1)
    _, out = solve(data, "plain", node_limit=50_000)
    assert out.status == Status.TIMEOUT
    assert solve(data)[1].status == Status.SOLVED


def test_start_and_closed_are_honoured_and_names_keep_their_type():
    level, out = solve({"edges": [[1, 2], [2, 3], [3, 1], [1, "1"], ["1", 1]], "start": 2, "closed": True})
    assert out.status == Status.SOLVED
    assert out.solution[0] == 2 == out.solution[-1]
    assert "1" in out.solution and KIND.verify(level, out.solution) is None


def test_verify_rejects_wrong_walks():
    level = KIND.parse({"edges": [["a", "b"], ["b", "c"], ["c", "a"], ["a", "b"]], "start": "a"})
    assert KIND.verify(level, ["a", "b", "c", "a", "b"]) is None
    assert "starts at" in KIND.verify(level, ["b", "a", "c", "b", "a"])
    assert "more often" in KIND.verify(level, ["a", "b", "c", "a", "c"])
    assert "vertices" in KIND.verify(level, ["a", "b", "c", "a"])
    assert "more often" in KIND.verify(level, ["a", "b", "a", "b", "a"])
    closed = KIND.parse({"edges": [[1, 2], [2, 3], [3, 1]], "closed": True})
    assert KIND.verify(closed, [1, 2, 3, 1]) is None
    assert "not a vertex" in KIND.verify(closed, [1, 2, 3, True])


def test_edge_order_and_direction_do_not_change_identity():
    a = make_level("a", {"kind": "euler", "edges": [["x", "y"], ["y", "z"]]})
    b = make_level("b", {"kind": "euler", "edges": [["z", "y"], ["y", "x"]]})
    c = make_level("c", {"kind": "euler", "edges": [["z", "y"], ["y", "x"]], "start": "x"})
    assert a.valid and a.hash == b.hash != c.hash


@pytest.mark.parametrize(
    "data, fragment",
    [
        ({"edges": []}, "non-empty"),
        ({"edges": [[1, 2, 3]]}, "edge 1"),
        ({"edges": [[1, True]]}, "edge 1"),
        ({"edges": [[1, 2]], "start": 5}, "not an end"),
        ({"edges": [[1, 2]], "start": "1"}, "not an end"),
        ({"edges": [[1, 2]], "closed": "yes"}, "closed"),
    ],
)
def test_parse_errors_name_the_field(data, fragment):
    with pytest.raises(LevelError, match=fragment):
        KIND.parse(data)


def test_generate_render_and_svg():
    assert KIND.generate("6x15", 2, 3) == KIND.generate("6x15", 2, 3)
    level, out = solve(KIND.generate("6x15", 1, 3)[0])
    assert out.status == Status.SOLVED
    assert "walk: " in KIND.render(level, out.solution)
    picture = KIND.svg(level, out.solution)
    assert picture.startswith("<svg") and picture.count("<path") + picture.count('fill="none"') >= 15
    assert ">15</text>" in picture
