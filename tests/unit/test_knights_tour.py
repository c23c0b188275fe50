"""Knight's tours: level parsing, existence theorems, every heuristic's tours checked, pictures."""

from __future__ import annotations

import random
import time
import xml.etree.ElementTree as ET

import pytest

from packsolve.budget import Budget
from packsolve.levels import LevelError, read_text
from packsolve.outcome import Status
from packsolve.puzzles import get_kind
from packsolve.puzzles.knights_tour.blocks import layout, partition
from packsolve.puzzles.knights_tour.rules import why_no_tour

KIND = get_kind("knights_tour")
HEURISTICS = sorted(KIND.solvers)


def solve(level: dict, heuristic: str = "auto", **limits):
    board = KIND.parse(level)
    out = KIND.solvers[heuristic](board, Budget(**(limits or {"time_limit": 30})))
    return board, out


def is_knight_move(a, b) -> bool:
    return sorted((abs(a[0] - b[0]), abs(a[1] - b[1]))) == [1, 2]


def check_tour(board, tour) -> None:
    """Check a tour without the kind's verify: every square once, knight moves, start, closure."""
    assert len(tour) == board.rows * board.cols
    assert {tuple(s) for s in tour} == {(r, c) for r in range(board.rows) for c in range(board.cols)}
    assert tuple(tour[0]) == board.start
    assert all(is_knight_move(a, b) for a, b in zip(tour, tour[1:], strict=False))
    if board.closed:
        assert is_knight_move(tour[-1], tour[0])


# --- levels ---------------------------------------------------------------------------------------


def test_size_and_rows_cols_spell_the_same_level():
    a = KIND.canonical(KIND.parse({"size": 8, "start": [2, 4]}))
    b = KIND.canonical(KIND.parse({"rows": 8, "cols": 8, "start": [2, 4], "closed": False}))
    assert a == b == {"rows": 8, "cols": 8, "start": [2, 4], "closed": False}
    assert KIND.canonical(KIND.parse({"size": 8, "start": [2, 4], "closed": True}))["closed"] is True


@pytest.mark.parametrize(
    "level, words",
    [
        ({"start": [0, 0]}, "'size'"),
        ({"size": 8}, "'start'"),
        ({"size": 8, "start": [8, 0]}, "off the 8x8 board"),
        ({"size": True, "start": [0, 0]}, "integer"),
        ({"size": 0, "start": [0, 0]}, "at least 1"),
        ({"size": 8, "rows": 8, "cols": 8, "start": [0, 0]}, "not both"),
        ({"size": 8, "start": [0, 0], "closed": "yes"}, "true or false"),
        ({"size": 8, "start": [0]}, "[row, col]"),
        ({"size": 5000, "start": [0, 0]}, "squares supported"),
    ],
)
def test_bad_levels_say_what_to_fix(level, words):
    with pytest.raises(LevelError, match=words.replace("[", r"\[").replace("]", r"\]")):
        KIND.parse(level)


def test_native_knights_file_reads_one_level_a_line_and_points_at_bad_lines():
    text = "# sample\n8x8 2 4\n6 0 0 closed\n\n5x7 9 9\n"
    levels = list(read_text("pack.knights", text, ".knights"))
    assert [lv.valid for lv in levels] == [True, True, False]
    assert levels[0].data == {"kind": "knights_tour", "rows": 8, "cols": 8, "start": [2, 4], "closed": False}
    assert levels[1].data["closed"] is True
    assert levels[2].name == "pack.knights:5" and "line 5" in levels[2].error


# --- existence ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "level, words",
    [
        ({"size": 2, "start": [0, 0]}, "side of 2"),
        ({"size": 3, "start": [0, 0]}, "3x3"),
        ({"size": 4, "start": [0, 0]}, "4x4"),
        ({"rows": 3, "cols": 6, "start": [0, 0]}, "3x6"),
        ({"size": 5, "start": [0, 1]}, "minority colour"),
        ({"size": 999, "start": [0, 1]}, "minority colour"),
        ({"rows": 4, "cols": 900, "start": [2, 17]}, "middle"),
        ({"size": 1, "start": [0, 0], "closed": True}, "1x1"),
        ({"size": 999, "start": [0, 0], "closed": True}, "both sides are odd"),
        ({"rows": 4, "cols": 1000, "start": [0, 0], "closed": True}, "side of 4"),
        ({"rows": 3, "cols": 8, "start": [0, 0], "closed": True}, "Schwenk"),
    ],
)
def test_impossible_levels_are_no_solution_at_once_with_the_reason(level, words):
    for heuristic in HEURISTICS:
        t = time.perf_counter()
        board, out = solve(level, heuristic)
        assert out.status is Status.NO_SOLUTION, heuristic
        assert words in out.message
        assert out.nodes == 0 and time.perf_counter() - t < 0.05


def test_one_square_board_is_its_own_open_tour():
    board, out = solve({"size": 1, "start": [0, 0]}, "plain")
    assert out.status is Status.SOLVED and out.solution == [[0, 0]]


def test_5x5_tours_start_exactly_on_the_13_corner_coloured_squares():
    # FACTS.md: on odd boards only the majority colour can start a tour, and on 5x5 all 13 do.
    for r in range(5):
        for c in range(5):
            board, out = solve({"size": 5, "start": [r, c]})
            if (r + c) % 2:
                assert out.status is Status.NO_SOLUTION and "minority colour" in out.message
            else:
                assert out.status is Status.SOLVED, (r, c)
                check_tour(board, out.solution)


def test_4_wide_middle_lines_really_have_no_tour():
    # The theorem's claim, checked by exhausting the write-up's plain search.
    for start in ([1, 0], [2, 3], [1, 4]):
        board = KIND.parse({"rows": 4, "cols": 5, "start": start})
        from packsolve.puzzles.hamilton.graph import depth_first
        from packsolve.puzzles.knights_tour.rules import board_problem

        assert depth_first(board_problem(board), Budget()) is None
    assert why_no_tour(4, 5, (0, 2), False) is None
    assert solve({"rows": 4, "cols": 5, "start": [0, 2]})[1].status is Status.SOLVED


def test_small_3xn_starts_without_a_tour_are_proved_by_search():
    board, out = solve({"rows": 3, "cols": 7, "start": [1, 3]})
    assert out.status is Status.NO_SOLUTION and "exhaustive" in out.message
    board, out = solve({"rows": 3, "cols": 4, "start": [0, 0]})
    assert out.status is Status.SOLVED
    check_tour(board, out.solution)


# --- the write-ups ---------------------------------------------------------------------------------


def test_java_writeup_start_warnsdorff_finds_a_tour_without_backtracking():
    # 8x8 from row 3, column 5 (1-based): Warnsdorff answered in 7 ms; here 64 nodes, one per square.
    board, out = solve({"size": 8, "start": [2, 4]}, "warnsdorff")
    assert out.status is Status.SOLVED and out.nodes == 64
    check_tour(board, out.solution)


def test_java_writeup_plain_search_is_still_going_after_many_nodes():
    # "waited a long time with no result": the fixed-order DFS is far from done after 200,000 nodes.
    _, out = solve({"size": 8, "start": [2, 4]}, "plain", node_limit=200_000)
    assert out.status is Status.TIMEOUT


def test_warnsdorff_with_the_writeup_move_order_needs_backtracking_on_the_known_sizes():
    # Fixed-order Warnsdorff from the corner dead-ends on 41, 52, 59, 60 (Squirrel; FACTS.md).
    straight = [
        n
        for n in range(30, 61)
        if solve({"size": n, "start": [0, 0]}, "warnsdorff", node_limit=n * n)[1].status is Status.SOLVED
    ]
    assert sorted(set(range(30, 61)) - set(straight)) == [41, 52, 59, 60]


@pytest.mark.parametrize("heuristic", ["pohl", "roth", "squirrel_cull"])
def test_stronger_tie_breaks_tour_the_sizes_where_warnsdorff_fails_without_backtracking(heuristic):
    for n in (41, 52, 59, 60):
        board, out = solve({"size": n, "start": [0, 0]}, heuristic, node_limit=n * n)
        assert out.status is Status.SOLVED and out.nodes == n * n, (heuristic, n)
        check_tour(board, out.solution)


def test_squirrel_cull_rules_tour_from_the_corner_without_backtracking():
    for n in (8, 13, 21, 30, 45, 66, 79):
        board, out = solve({"size": n, "start": [0, 0]}, "squirrel_cull", node_limit=n * n)
        assert out.status is Status.SOLVED and out.nodes == n * n, n
        check_tour(board, out.solution)


# --- every heuristic ---------------------------------------------------------------------------------


@pytest.mark.parametrize("heuristic", [h for h in HEURISTICS if h != "plain"])
def test_every_heuristic_tours_8x8_from_the_corner_and_the_writeup_start(heuristic):
    # How often each one succeeds from all 64 starts is benchmarks/knights_tour_8x8.py's business.
    for start in ([0, 0], [2, 4]):
        board, out = solve({"size": 8, "start": start}, heuristic)
        assert out.status is Status.SOLVED, (heuristic, start)
        assert KIND.verify(board, out.solution) is None
        check_tour(board, out.solution)


@pytest.mark.parametrize("heuristic", HEURISTICS)
def test_every_heuristic_tours_5x5_and_a_rectangle(heuristic):
    rect = [] if heuristic == "plain" else [{"rows": 5, "cols": 6, "start": [4, 5]}]
    for level in ({"size": 5, "start": [2, 2]}, *rect):
        board, out = solve(level, heuristic, time_limit=20)
        assert out.status is Status.SOLVED, (heuristic, level)
        check_tour(board, out.solution)


@pytest.mark.parametrize("heuristic", ["warnsdorff_closing", "blocks", "auto"])
def test_closed_tours_close(heuristic):
    for level in (
        {"size": 6, "start": [2, 3], "closed": True},
        {"size": 10, "start": [9, 0], "closed": True},
        {"rows": 5, "cols": 6, "start": [0, 1], "closed": True},
        {"rows": 3, "cols": 10, "start": [1, 1], "closed": True},
        {"size": 14, "start": [7, 3], "closed": True},
    ):
        board, out = solve(level, heuristic)
        assert out.status is Status.SOLVED, (heuristic, level)
        check_tour(board, out.solution)


def test_default_tours_random_boards_open_and_closed():
    rng = random.Random(4)
    for n in [*range(5, 30), 47, 64, 99, 150]:
        for closed in (False, True):
            if closed and n % 2:
                continue
            r, c = rng.randrange(n), rng.randrange(n)
            if n % 2 and (r + c) % 2:
                c ^= 1 if c + 1 < n else 3
            board, out = solve({"size": n, "start": [r, c], "closed": closed})
            assert out.status is Status.SOLVED, (n, r, c, closed)
            assert KIND.verify(board, out.solution) is None
            check_tour(board, out.solution)


def test_default_tours_odd_and_thin_rectangles():
    for level in (
        {"rows": 13, "cols": 31, "start": [12, 30]},
        {"rows": 25, "cols": 12, "start": [3, 7], "closed": True},
        {"rows": 7, "cols": 40, "start": [6, 0]},
        {"rows": 3, "cols": 9, "start": [1, 3]},
    ):
        board, out = solve(level)
        assert out.status is Status.SOLVED, level
        check_tour(board, out.solution)


def test_budget_stops_a_hopeless_search_as_a_timeout():
    _, out = solve({"size": 10, "start": [0, 0], "closed": True}, "plain", node_limit=1000)
    assert out.status is Status.TIMEOUT and out.nodes > 1000


# --- blocks -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [12, 13, 17, 22, 23, 40, 61, 100, 257])
def test_partitions_cover_the_side_with_one_odd_part_at_the_start(n):
    for cover in {0, n // 2, n - 1}:
        parts = partition(n, cover, n % 2 == 1, None)
        assert parts and sum(parts) == n and len(parts) >= 2
        assert all(6 <= p <= 13 for p in parts)
        odd = [i for i, p in enumerate(parts) if p % 2]
        assert len(odd) == n % 2
        if odd:
            lo = sum(parts[: odd[0]])
            assert lo <= cover < lo + parts[odd[0]]


def test_layout_tiles_the_board_and_walks_neighbouring_blocks():
    for rows, cols, start in ((37, 50, (20, 3)), (25, 25, (24, 24)), (14, 12, (0, 0)), (22, 22, (5, 5))):
        blocks = layout(rows, cols, start, False)
        covered = [(r, c) for b in blocks for r in range(b.r, b.r + b.h) for c in range(b.c, b.c + b.w)]
        assert len(covered) == len(set(covered)) == rows * cols
        assert blocks[0].holds(*start)
        for a, b in zip(blocks, blocks[1:], strict=False):
            touch_rows = a.r + a.h == b.r or b.r + b.h == a.r
            touch_cols = a.c + a.w == b.c or b.c + b.w == a.c
            assert (touch_rows and a.c == b.c) or (touch_cols and a.r == b.r)


# --- verify and pictures -----------------------------------------------------------------------------


def test_verify_rejects_broken_tours():
    board, out = solve({"size": 6, "start": [0, 0], "closed": True})
    tour = out.solution
    assert KIND.verify(board, tour) is None
    assert "not a knight move" in KIND.verify(board, [tour[0], tour[2], *tour[1:2], *tour[3:]])
    assert "squares, the board" in KIND.verify(board, tour[:-1])
    assert "second time" in KIND.verify(board, [*tour[:-1], tour[1]])
    assert "starts at" in KIND.verify(board, tour[1:] + tour[:1])
    assert "off the" in KIND.verify(board, [*tour[:-1], [6, 0]])
    assert "integers" in KIND.verify(board, [[True, 0], *tour[1:]])
    open_board = KIND.parse({"size": 5, "start": [0, 0], "closed": False})
    five = solve({"size": 5, "start": [0, 0]})[1].solution
    assert KIND.verify(open_board, five) is None
    closed_five = KIND.parse({"rows": 5, "cols": 5, "start": [0, 0], "closed": True})
    assert "not closed" in KIND.verify(closed_five, five)


def test_render_numbers_every_square_and_svg_is_well_formed():
    board, out = solve({"size": 6, "start": [0, 0]})
    text = KIND.render(board, out.solution)
    numbers = sorted(int(x) for line in text.splitlines()[1:] for x in line.split())
    assert numbers == list(range(1, 37))
    assert "S" in KIND.render(board, None)
    picture = ET.fromstring(KIND.svg(board, out.solution))
    assert picture.find("{http://www.w3.org/2000/svg}polyline") is not None
    big = KIND.parse({"size": 100, "start": [0, 0]})
    assert "top-left 32x32 shown" in KIND.render(big, solve({"size": 100, "start": [0, 0]})[1].solution)


def test_generate_is_reproducible_and_gives_tourable_starts():
    a = KIND.generate("7x9", 20, 3)
    assert a == KIND.generate("7x9", 20, 3) and a != KIND.generate("7x9", 20, 4)
    assert all((lv["start"][0] + lv["start"][1]) % 2 == 0 for lv in a)
    closed = KIND.generate("10:closed", 3, 1)
    assert all(lv["closed"] and lv["rows"] == lv["cols"] == 10 for lv in closed)
    for lv in a[:5]:
        assert solve(lv)[1].status is Status.SOLVED
    with pytest.raises(LevelError):
        KIND.generate("big", 1, 0)


def test_four_wide_rule_holds_for_tours_found_without_it_and_makes_long_boards_easy():
    from packsolve.puzzles.knights_tour.search import four_wide_rule

    for rows, cols, start in ((4, 5, [0, 0]), (4, 7, [3, 2]), (6, 4, [4, 0]), (4, 8, [0, 5])):
        board = KIND.parse({"rows": rows, "cols": cols, "start": start})
        from packsolve.puzzles.hamilton.graph import depth_first, warnsdorff_order
        from packsolve.puzzles.knights_tour.rules import board_problem

        path = depth_first(board_problem(board), Budget(time_limit=10), warnsdorff_order)
        rule = four_wide_rule(rows, cols)
        assert path is not None
        assert all(rule(x, y, i) for i, (x, y) in enumerate(zip(path, path[1:], strict=False)))
    for c in range(0, 300, 37):
        board, out = solve({"rows": 4, "cols": 300, "start": [3, c]}, time_limit=10)
        assert out.status is Status.SOLVED, c
        check_tour(board, out.solution)
