"""Splitting a level into parts (issue 38): kinds' splits, both combination rules, the runner, check_kind."""

from __future__ import annotations

import dataclasses

import pytest

from packsolve.api import Budget, Combine, Part, SharedBound, Split, Status
from packsolve.combining import CHEAP_ROUND_S
from packsolve.puzzles import get_kind
from packsolve.splitting import LevelLimits, solve_split
from packsolve.testing import run_checks

SLIDING = get_kind("sliding")
ONESTROKE = get_kind("onestroke")
KNIGHTS = get_kind("knights_tour")

# algs4's 8-puzzle tests (goal 1..8 then the blank; turned half a turn into ours, blank top-left) with
# the optimal lengths in their names, and three of Korf's 100 fifteen-puzzles with his published ones.
EIGHT = {
    25: [5, 0, 2, 8, 3, 6, 4, 1, 7],
    26: [5, 3, 8, 1, 7, 6, 0, 2, 4],
    27: [7, 0, 6, 3, 5, 8, 2, 1, 4],
}
KORF = {
    9: (46, [3, 14, 9, 11, 5, 4, 8, 2, 13, 12, 6, 7, 10, 1, 15, 0]),
    55: (41, [13, 8, 14, 3, 9, 1, 0, 7, 15, 5, 4, 10, 12, 2, 6, 11]),
    79: (42, [0, 1, 9, 7, 11, 13, 5, 3, 14, 12, 4, 2, 8, 6, 10, 15]),
}


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    """Keep pattern tables of the tests out of the user's cache directory."""
    monkeypatch.setenv("PACKSOLVE_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "pdb-cache"))


def _rows(flat):
    n = int(len(flat) ** 0.5)
    return [flat[r * n : (r + 1) * n] for r in range(n)]


def _sliding(flat):
    return SLIDING.parse({"tiles": _rows(flat)})


def _every_part_verified(kind, level, heuristic, split, may_time_out=False):
    """Solve each part alone: every answer after its prefix is an answer of the level; return their lengths.

    may_time_out: a first-found part may be a dead end that takes long to refute (the other parts
    find the answer); it gets 200,000 nodes.
    """
    solve = kind.solver(heuristic)[1]
    lengths = []
    for part in split.parts:
        out = solve(part.level, Budget(60, node_limit=200_000 if may_time_out else None))
        if out.status is Status.SOLVED:
            combined = part.combine(out.solution)
            assert kind.verify(level, combined) is None
            lengths.append(len(combined))
        else:
            assert out.status is Status.NO_SOLUTION or (may_time_out and out.status is Status.TIMEOUT)
    return lengths


@pytest.mark.parametrize("optimal", sorted(EIGHT))
@pytest.mark.parametrize("heuristic", ["idastar", "linear-conflict", "pdb"])
def test_best_of_all_on_8_puzzles_finds_the_optimal_length(optimal, heuristic):
    board = _sliding(EIGHT[optimal])
    assert len(SLIDING.solvers["plain"](board, Budget(60)).solution) == optimal  # breadth first agrees
    split = SLIDING.split(board, heuristic, 6)
    assert split is not None and split.combine is Combine.BEST_OF_ALL and len(split.parts) >= 6
    tiles = [part.level.tiles for part in split.parts]
    assert len(set(tiles)) == len(tiles)  # no board twice
    assert all(part.depth == len(part.prefix) for part in split.parts)
    assert min(_every_part_verified(SLIDING, board, heuristic, split)) == optimal
    for processes in (1, 2):
        run = solve_split(SLIDING, board, heuristic, parts=6, processes=processes)
        assert run.outcome.status is Status.SOLVED, run.outcome.message
        assert len(run.outcome.solution) == optimal
        assert SLIDING.verify(board, run.outcome.solution) is None
        assert run.outcome.nodes == split.nodes + sum(r.outcome.nodes for r in run.runs)


@pytest.mark.parametrize("ident", sorted(KORF))
def test_best_of_all_on_korf_15_puzzles_finds_the_published_length_with_about_the_unsplit_nodes(ident):
    optimal, tiles = KORF[ident]
    board = _sliding(tiles)
    unsplit = SLIDING.solvers["pdb"](board, Budget(120))
    assert len(unsplit.solution) == optimal
    for processes in (1, 2):
        run = solve_split(SLIDING, board, "pdb", parts=8, processes=processes, limits=LevelLimits(120))
        assert run.outcome.status is Status.SOLVED, run.outcome.message
        assert len(run.outcome.solution) == optimal
        assert SLIDING.verify(board, run.outcome.solution) is None
        if processes == 1:
            # Round by round no part searches deeper than the unsplit search: in order, the parts cost
            # the unsplit nodes give or take the last round's order and the frontier, and the rounds
            # that span two bounds after a round that cost next to nothing (combining.CHEAP_ROUND_S),
            # which cost little themselves. (Side by side, a part also searches while another finds
            # the answer: benchmarks/split_overhead.py.)
            widened = [r for r in run.runs if r.window is not None and r.window[1] > r.window[0]]
            assert sum(r.cpu_s for r in widened) < 20 * CHEAP_ROUND_S
            assert run.outcome.nodes <= 1.15 * unsplit.nodes + sum(r.outcome.nodes for r in widened) + 1_000


def test_the_goal_nearer_than_the_frontier_is_one_part_with_the_whole_answer():
    board = _sliding([1, 0, 2, 3, 4, 5, 6, 7, 8])
    split = SLIDING.split(board, "pdb", 50)
    assert split is not None and len(split.parts) == 1
    run = solve_split(SLIDING, board, "pdb", parts=50)
    assert run.outcome.solution == [1]


def test_a_part_stops_at_once_when_the_shared_bound_cannot_be_beaten():
    optimal, tiles = KORF[55]
    board = _sliding(tiles)
    part = SLIDING.split(board, "pdb", 8).parts[0]
    bound = SharedBound()
    bound.offer(optimal)
    budget = Budget(60)
    budget.bound = bound
    out = SLIDING.solvers["pdb"](part.level, budget)
    assert out.status is Status.NO_SOLUTION and f"shorter than {optimal}" in out.message
    assert out.nodes < 100_000  # the unsplit search takes millions


def test_sliding_splits_only_its_ida_heuristics_and_solvable_boards():
    board = _sliding(EIGHT[25])
    assert SLIDING.split(board, "weighted", 4) is None
    assert SLIDING.split(board, "astar", 4) is None
    assert SLIDING.split(_sliding([0, 2, 1, 3, 4, 5, 6, 7, 8]), "pdb", 4) is None  # odd parity


ONESTROKE_LEVELS = [
    # hongjie104 level 2 (a unique path) and xutianyue level 1, from ../shared/benchmarks/onestroke.
    [".....", "..#..", "..S..", ".....", "###.#"],
    ["S..", ".#.", "..."],
    ["S...", "....", "....", "...."],
]


@pytest.mark.parametrize("rows", ONESTROKE_LEVELS)
@pytest.mark.parametrize("heuristic", ["plain", "prune"])
def test_first_found_on_onestroke(rows, heuristic):
    grid = ONESTROKE.parse({"grid": rows})
    split = ONESTROKE.split(grid, heuristic, 2)
    assert split is not None and split.combine is Combine.FIRST_FOUND and len(split.parts) >= 2
    assert len({p.level for p in split.parts}) == len(split.parts)  # no grid twice
    assert _every_part_verified(ONESTROKE, grid, heuristic, split)  # at least one part has an answer
    for processes in (1, 2):
        run = solve_split(ONESTROKE, grid, heuristic, parts=2, processes=processes)
        assert run.outcome.status is Status.SOLVED, run.outcome.message
        assert ONESTROKE.verify(grid, run.outcome.solution) is None


def test_first_found_says_no_solution_when_no_part_has_one():
    grid = ONESTROKE.parse({"grid": ["S.#.", "....", "#..."]})
    unsplit = ONESTROKE.solvers["plain"](grid, Budget(10))
    run = solve_split(ONESTROKE, grid, "plain", parts=3)
    assert run.outcome.status is unsplit.status
    if unsplit.status is Status.NO_SOLUTION:
        assert run.split is None or all(r.outcome.status is Status.NO_SOLUTION for r in run.runs)


@pytest.mark.parametrize(
    "data,heuristic",
    [
        ({"size": 5, "start": [0, 0]}, "warnsdorff"),
        ({"size": 5, "start": [0, 0]}, "plain"),
        ({"size": 6, "start": [0, 0], "closed": True}, "plain"),
        ({"rows": 3, "cols": 4, "start": [0, 0]}, "roth"),
    ],
)
def test_first_found_on_knights_tours(data, heuristic):
    board = KNIGHTS.parse(data)
    split = KNIGHTS.split(board, heuristic, 6)
    assert split is not None and split.combine is Combine.FIRST_FOUND and len(split.parts) >= 6
    prefixes = [p.level.prefix for p in split.parts]
    assert len(set(prefixes)) == len(prefixes)
    assert all(p.level.prefix[0] == board.index(*board.start) for p in split.parts)
    _every_part_verified(KNIGHTS, board, heuristic, split, may_time_out=True)
    for processes in (1, 2):
        run = solve_split(KNIGHTS, board, heuristic, parts=6, processes=processes, limits=LevelLimits(60))
        assert run.outcome.status is Status.SOLVED, run.outcome.message
        assert KNIGHTS.verify(board, run.outcome.solution) is None


def test_knights_tour_does_not_split_heuristics_that_do_not_continue_a_prefix():
    board = KNIGHTS.parse({"size": 8, "start": [0, 0]})
    assert KNIGHTS.split(board, "auto", 4) is None
    assert KNIGHTS.split(board, "blocks", 4) is None


def test_a_kind_without_split_is_never_split():
    plain = dataclasses.replace(SLIDING, split=None)
    board = _sliding(EIGHT[25])
    run = solve_split(plain, board, "pdb", parts=8, processes=2)
    assert run.split is None and len(run.runs) == 1
    assert run.outcome.status is Status.SOLVED and len(run.outcome.solution) == 25
    assert [c.name for c in run_checks(plain) if "split" in c.name] == []
    coins = get_kind("coins")
    assert coins.split is None


def _broken(make):
    def split(level, heuristic, n):
        whole = SLIDING.split(level, heuristic, n)
        return None if whole is None else Split(whole.combine, make(level, heuristic, whole.parts))

    return dataclasses.replace(SLIDING, split=split)


def _split_check(kind):
    return next(c for c in run_checks(kind) if "split" in c.name)


def test_check_kind_accepts_the_built_in_splits():
    for kind in (SLIDING, ONESTROKE, KNIGHTS):
        assert _split_check(kind).ok, _split_check(kind).detail


def test_check_kind_catches_a_split_that_loses_the_optimum():
    def drop_best(level, heuristic, parts):
        solve = SLIDING.solver(heuristic)[1]
        lengths = [p.depth + len(solve(p.level, Budget(10)).solution) for p in parts]
        best = min(lengths)
        return tuple(p for p, n in zip(parts, lengths, strict=True) if n > best) or parts[:0]

    check = _split_check(_broken(lambda lv, h, parts: drop_best(lv, h, parts) or parts))
    assert not check.ok and ("shortest answer" in check.detail or "none of its" in check.detail)


def test_check_kind_catches_wrong_prefixes():
    def shifted(level, heuristic, parts):
        return tuple(Part(p.level, p.prefix[1:], p.depth) for p in parts)

    check = _split_check(_broken(shifted))
    assert not check.ok and "after its prefix is wrong" in check.detail


def test_check_kind_catches_twice_the_same_part():
    check = _split_check(_broken(lambda lv, h, parts: (*parts, parts[0])))
    assert not check.ok and "the same sub-level" in check.detail


def test_the_level_limits_hold_across_its_parts():
    # Korf's #88 (65 moves): Manhattan IDA* needs far more than these limits.
    board = _sliding([15, 2, 12, 11, 14, 13, 9, 5, 1, 3, 8, 7, 0, 10, 6, 4])
    run = solve_split(SLIDING, board, "idastar", parts=8, limits=LevelLimits(node_limit=5_000))
    assert run.outcome.status is Status.TIMEOUT
    assert run.outcome.nodes <= 5_000 + 2 * 4096  # a part past its share stops at its next count
    run = solve_split(SLIDING, board, "idastar", parts=8, processes=2, limits=LevelLimits(time_limit=0.2))
    assert run.outcome.status is Status.TIMEOUT and run.outcome.stats.wall_s < 5


def test_the_native_search_runs_one_iteration_window_and_says_where_it_stopped():
    from packsolve.native import sliding
    from packsolve.puzzles.sliding import pdb

    optimal, tiles = KORF[55]
    db = pdb.load(4, strong=False, ranked=False)
    args = (bytes(tiles), 4, 2, 1, 1, 0, 0.0, db.tables, db.groups)
    whole = sliding.ida_star(*args)
    assert whole[0] == 0 and len(whole[1]) == optimal
    # Up to a bound below the optimum: status 4 (bound), the 4th item the first bound not searched.
    status, moves, below, resume = sliding.ida_star(*args, max_bound=optimal - 2)
    assert status == 4 and moves is None and resume == optimal
    # From that bound on: the last iteration alone, the same answer's length for fewer nodes.
    status, moves, last, _ = sliding.ida_star(*args, first_bound=optimal, max_bound=optimal)
    assert status == 0 and len(moves) == optimal and below + last == whole[2]
    # A shared best: the iterations that could beat it are searched, none after.
    best = SharedBound()
    best.offer(optimal)
    status, _, nodes, resume = sliding.ida_star(*args, shared=best.buffer)
    assert status == 4 and nodes == below and resume == optimal
    # As a part 40 moves down (offset), its first bound alone reaches the best: it stops at once.
    status, _, nodes, _ = sliding.ida_star(*args, shared=best.buffer, offset=40)
    assert status == 4 and nodes == 0
    with pytest.raises(ValueError, match="unweighted"):
        sliding.ida_star(bytes(tiles), 4, 2, 3, 2, shared=best.buffer, tables=db.tables, groups=db.groups)
