"""Sliding tiles: parsing, parity, verification, and optimality of every heuristic against BFS truth."""

from __future__ import annotations

import itertools
import random
from collections import deque
from fractions import Fraction

import pytest

from packsolve.budget import Budget
from packsolve.levels import LevelError, read_text
from packsolve.outcome import Status
from packsolve.puzzles import get_kind
from packsolve.puzzles.sliding import pdb as sliding_pdb
from packsolve.puzzles.sliding.board import Board, neighbours, unsolvable_reason
from tests.support.small_tables import use_small_5x5_tables

KIND = get_kind("sliding")
OPTIMAL = ["astar", "idastar", "linear-conflict", "pdb", "pdb-663", "pdb-6666"]
# Seven of Korf's 100 fifteen-puzzle instances (R. E. Korf, AIJ 27, 1985) with their published optimal
# lengths, pinned here; the whole set is read by benchmarks/sliding_korf100.py from ../shared/benchmarks.
# id: (optimal length, tiles row by row, 0 the blank; goal 0 1 2 ... 15)
KORF = {
    1: (57, [14, 13, 15, 7, 11, 12, 9, 5, 6, 0, 2, 1, 4, 8, 10, 3]),
    2: (55, [13, 5, 4, 10, 9, 12, 8, 14, 2, 3, 7, 1, 0, 15, 11, 6]),
    4: (56, [5, 12, 10, 7, 15, 11, 14, 0, 8, 2, 1, 13, 3, 4, 9, 6]),
    9: (46, [3, 14, 9, 11, 5, 4, 8, 2, 13, 12, 6, 7, 10, 1, 15, 0]),
    55: (41, [13, 8, 14, 3, 9, 1, 0, 7, 15, 5, 4, 10, 12, 2, 6, 11]),
    79: (42, [0, 1, 9, 7, 11, 13, 5, 3, 14, 12, 4, 2, 8, 6, 10, 15]),
    88: (65, [15, 2, 12, 11, 14, 13, 9, 5, 1, 3, 8, 7, 0, 10, 6, 4]),
}


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    """Keep pattern tables of the tests out of the user's cache directory."""
    monkeypatch.setenv("PACKSOLVE_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "pdb-cache"))


@pytest.fixture(scope="module")
def distances() -> dict[tuple[int, ...], int]:
    """Exact distance to the goal of every solvable 3x3 board, by breadth-first search from the goal."""
    goal = tuple(range(9))
    near = neighbours(3)
    dist = {goal: 0}
    queue = deque([goal])
    while queue:
        state = queue.popleft()
        blank = state.index(0)
        for p in near[blank]:
            nxt = list(state)
            nxt[blank], nxt[p] = nxt[p], 0
            key = tuple(nxt)
            if key not in dist:
                dist[key] = dist[state] + 1
                queue.append(key)
    return dist


def solve(tiles, heuristic, time_limit=20.0):
    board = KIND.parse({"tiles": tiles})
    return board, KIND.solvers[heuristic](board, Budget(time_limit))


def test_write_up_sample_needs_seven_moves_with_plain_bfs():
    board, out = solve([[3, 0, 2], [4, 1, 7], [6, 8, 5]], "plain")
    assert out.status is Status.SOLVED
    assert len(out.solution) == 7
    assert KIND.verify(board, out.solution) is None


def test_bfs_table_covers_exactly_the_solvable_half(distances):
    assert len(distances) == 181440
    assert max(distances.values()) == 31


@pytest.mark.parametrize("heuristic", ["plain", *OPTIMAL])
def test_optimal_heuristics_match_bfs_lengths_on_random_3x3_boards(heuristic, distances):
    rng = random.Random(6)
    boards = rng.sample(sorted(distances), 8 if heuristic == "plain" else 150)
    boards.append(next(b for b, d in distances.items() if d == 31))
    for tiles in boards:
        board, out = solve(list(tiles), heuristic)
        assert out.status is Status.SOLVED, (tiles, out)
        assert KIND.verify(board, out.solution) is None
        assert len(out.solution) == distances[tiles], (heuristic, tiles)
        assert out.nodes >= 0


@pytest.mark.parametrize("heuristic", ["plain", *OPTIMAL, "weighted"])
def test_every_2x2_board_gets_its_bfs_length_or_no_solution(heuristic):
    goal = (0, 1, 2, 3)
    dist = {goal: 0}
    queue = deque([goal])
    while queue:
        state = queue.popleft()
        blank = state.index(0)
        for p in neighbours(2)[blank]:
            nxt = list(state)
            nxt[blank], nxt[p] = nxt[p], 0
            if tuple(nxt) not in dist:
                dist[tuple(nxt)] = dist[state] + 1
                queue.append(tuple(nxt))
    assert len(dist) == 12
    for tiles in itertools.permutations(range(4)):
        board, out = solve(list(tiles), heuristic)
        if tiles in dist:
            assert out.status is Status.SOLVED and len(out.solution) == dist[tiles]
            assert KIND.verify(board, out.solution) is None
        else:
            assert out.status is Status.NO_SOLUTION


def test_weighted_stays_within_its_weight_bound_on_3x3(distances):
    rng = random.Random(7)
    for tiles in rng.sample(sorted(distances), 100):
        board, out = solve(list(tiles), "weighted")
        assert out.status is Status.SOLVED
        assert KIND.verify(board, out.solution) is None
        weight = Fraction(out.message.split("w = ")[1].split(":")[0])
        assert len(out.solution) <= weight * distances[tiles]


@pytest.mark.parametrize("heuristic", ["plain", *OPTIMAL, "weighted"])
def test_odd_parity_boards_are_no_solution_at_once(heuristic):
    odd_4x4 = [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11], [12, 13, 15, 14]]
    for tiles in ([[0, 2, 1], [3, 4, 5], [6, 7, 8]], [[0, 1], [3, 2]], odd_4x4):
        _, out = solve(tiles, heuristic, time_limit=1.0)
        assert out.status is Status.NO_SOLUTION
        assert "parity" in out.message
        assert out.nodes == 0


def test_parity_rule_agrees_with_reachability(distances):
    rng = random.Random(8)
    for _ in range(400):
        tiles = list(range(9))
        rng.shuffle(tiles)
        reason = unsolvable_reason(Board(3, tuple(tiles)))
        assert (reason is None) == (tuple(tiles) in distances)


def test_even_width_parity_counts_the_blank_row():
    # Moving the blank down one row on 4x4 is reachable; the same tiles with 14/15 swapped are not.
    assert unsolvable_reason(Board(4, (4, 1, 2, 3, 0, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15))) is None
    assert unsolvable_reason(Board(4, (4, 1, 2, 3, 0, 5, 6, 7, 8, 9, 10, 11, 12, 13, 15, 14))) is not None


def _korf(ids):
    return [KORF[i] for i in ids]


def test_pdb_with_small_tables_finds_korf_published_lengths(monkeypatch):
    """The C IDA* with additive tables (a quick 4-4-4-3 split) returns Korf's optimal lengths."""
    quick = ((1, 2, 3), (4, 5, 8, 9), (6, 7, 10, 11), (12, 13, 14, 15))
    monkeypatch.setitem(sliding_pdb.PARTITIONS, 4, quick)
    monkeypatch.setattr(sliding_pdb, "_LOADED", {})
    for optimal, tiles in _korf([9, 2, 4]):
        board, out = solve(tiles, "pdb", time_limit=30)
        assert out.status is Status.SOLVED
        assert KIND.verify(board, out.solution) is None
        assert len(out.solution) == optimal


def test_default_pdb_finds_korf_published_lengths():
    """The shipped 5-5-5 tables (built on first use, a second of CPU) solve easy Korf instances optimally."""
    for optimal, tiles in _korf([55, 79, 9]):
        board, out = solve(tiles, KIND.default, time_limit=120)
        assert out.status is Status.SOLVED
        assert KIND.verify(board, out.solution) is None
        assert len(out.solution) == optimal


def test_strong_pdb_uses_its_own_split(monkeypatch):
    quick = ((1, 2, 3, 4), (5, 6, 7), (8, 9, 10, 11), (12, 13, 14, 15))
    monkeypatch.setitem(sliding_pdb.STRONG_PARTITIONS, 4, quick)
    monkeypatch.setattr(sliding_pdb, "_LOADED", {})
    for optimal, tiles in _korf([55]):
        board, out = solve(tiles, "pdb-663", time_limit=30)
        assert len(out.solution) == optimal
    assert [db.groups for db in sliding_pdb._LOADED.values()] == [quick]


def test_linear_conflict_finds_korf_published_length_on_an_easy_instance():
    for optimal, tiles in _korf([9]):
        board, out = solve(tiles, "linear-conflict")
        assert len(out.solution) == optimal
        assert KIND.verify(board, out.solution) is None


def test_time_limit_gives_timeout_with_nodes():
    _, out = solve(_korf([88])[0][1], "idastar", time_limit=0.3)
    assert out.status is Status.TIMEOUT
    assert out.nodes > 0


def test_node_limit_gives_timeout():
    board = KIND.parse({"tiles": _korf([1])[0][1]})
    out = KIND.solvers["linear-conflict"](board, Budget(node_limit=1000))
    assert out.status is Status.TIMEOUT
    assert out.nodes > 1000


def test_weighted_solves_a_scrambled_24_puzzle(monkeypatch):
    """Weighted IDA* over (here: quick 3-tile) 5x5 tables returns a verified answer, never below Manhattan."""
    groups = tuple(tuple(range(i, i + 3)) for i in range(1, 25, 3))
    monkeypatch.setitem(sliding_pdb.PARTITIONS, 5, groups)
    monkeypatch.setattr(sliding_pdb, "_LOADED", {})
    rng = random.Random(24)
    tiles, blank, near = list(range(25)), 0, neighbours(5)
    for _ in range(400):
        p = rng.choice(near[blank])
        tiles[blank], tiles[p] = tiles[p], 0
        blank = p
    board, out = solve(tiles, "weighted", time_limit=4)
    assert out.status is Status.SOLVED
    assert KIND.verify(board, out.solution) is None
    manhattan = sum(abs(p // 5 - t // 5) + abs(p % 5 - t % 5) for p, t in enumerate(tiles) if t)
    assert len(out.solution) >= manhattan > 30


def test_pdb_6666_indexes_its_compact_tables_as_pdb_does_its_sparse_ones(monkeypatch):
    """pdb-6666's ranked tables over a small split (the real one is 510 MB): pdb's tree, node for node."""
    groups = tuple(tuple(range(i, i + 3)) for i in range(1, 25, 3))
    monkeypatch.setitem(sliding_pdb.PARTITIONS, 5, groups)
    monkeypatch.setitem(sliding_pdb.RANKED_PARTITIONS, 5, groups)
    monkeypatch.setattr(sliding_pdb, "_LOADED", {})
    rng = random.Random(5)
    tiles, blank, last, near = list(range(25)), 0, -1, neighbours(5)
    for _ in range(24):  # a walk that never steps straight back
        p = rng.choice([q for q in near[blank] if q != last])
        tiles[blank], tiles[p] = tiles[p], 0
        last, blank = blank, p
    board, ranked = solve(tiles, "pdb-6666")
    _, sparse = solve(tiles, "pdb")
    assert ranked.status is Status.SOLVED and KIND.verify(board, ranked.solution) is None
    assert len(ranked.solution) == len(sparse.solution) == 24
    assert ranked.nodes == sparse.nodes == 778


def test_a_turned_group_reads_its_twins_table_as_if_it_had_its_own(monkeypatch):
    """Korf's economy on 4x4: tiles 13-12-9-8 are 2-3-6-7 turned twice; their answers and trees are pdb's."""
    groups = ((1, 4, 5), (2, 3, 6, 7), (13, 12, 9, 8), (10, 11, 14, 15))
    monkeypatch.setitem(sliding_pdb.PARTITIONS, 4, groups)
    monkeypatch.setitem(sliding_pdb.RANKED_PARTITIONS, 4, groups)
    monkeypatch.setitem(sliding_pdb.TURNED, (13, 12, 9, 8), ((2, 3, 6, 7), 2))
    monkeypatch.setattr(sliding_pdb, "_LOADED", {})
    for length, tiles in _korf([55, 79]):
        board, turned = solve(tiles, "pdb-6666")
        _, sparse = solve(tiles, "pdb")
        assert KIND.verify(board, turned.solution) is None and len(turned.solution) == length
        assert turned.nodes == sparse.nodes
    db = sliding_pdb.load(4, ranked=True)
    assert bytes(db.tables[1]) == bytes(db.tables[2])
    assert db.maps is not None and db.maps[2] == bytes(range(15, -1, -1))


def _walk(n, moves, seed):
    """Return the tiles after a random walk of the blank from the goal that never steps straight back."""
    rng = random.Random(seed)
    tiles, blank, last, near = list(range(n * n)), 0, -1, neighbours(n)
    for _ in range(moves):
        p = rng.choice([q for q in near[blank] if q != last])
        tiles[blank], tiles[p] = tiles[p], 0
        last, blank = blank, p
    return tiles


def test_pdb_6666_turned_5x5_groups_update_their_index_move_by_move_as_a_rank_would(monkeypatch):
    """Korf's economy on 5x5 in small: 4-tile groups, two of them read the table of 3-4-8-9 turned by 180
    and 90 degrees (a sideways move is a vertical one in that table). The search updates a compact
    index from the moved tile alone; its tree must be pdb's over the same groups with sparse tables,
    node for node, and the counts those of the C search that recomputed every rank (pinned)."""
    use_small_5x5_tables(monkeypatch)
    counts = []
    for seed in (1, 2, 3):
        tiles = _walk(5, 50, seed)
        board, turned = solve(tiles, "pdb-6666")
        _, sparse = solve(tiles, "pdb")
        assert KIND.verify(board, turned.solution) is None
        assert len(turned.solution) == len(sparse.solution) and turned.nodes == sparse.nodes
        counts.append((len(turned.solution), turned.nodes))
    assert counts == [(44, 8318), (50, 16889), (30, 3055)]
    assert sliding_pdb.load(5, ranked=True).maps is not None


def test_verify_rejects_illegal_and_unfinished_move_lists():
    board = KIND.parse({"tiles": [[3, 0, 2], [4, 1, 7], [6, 8, 5]]})
    assert "not next to the blank" in KIND.verify(board, [7])
    assert "still out of place" in KIND.verify(board, [1, 7])
    assert "not a tile" in KIND.verify(board, [0])
    assert KIND.verify(board, "17") is not None
    assert KIND.verify(board, [1, 7, 5, 8, 7, 4, 3]) is None


@pytest.mark.parametrize(
    ("tiles", "needle"),
    [
        ([[0, 1], [2, 2]], "appears twice"),
        ([[0, 1, 2], [3, 4]], "row 1 has 3"),
        ([0, 1, 2], "N x N"),
        ([[0, 1], [2, 9]], "0..3"),
        ([[0, 1], [2, "3"]], "not an integer"),
        (list(range(36)), "N x N"),
    ],
)
def test_bad_boards_raise_actionable_level_errors(tiles, needle):
    with pytest.raises(LevelError, match=needle):
        KIND.parse({"tiles": tiles})


def test_flat_rows_and_slide_spellings_are_one_level_and_a_stated_length_makes_another():
    text = "# a comment\n0 1 2 3 4 5 8 6 7\nk7 3 0 1 2 3 4 5 8 6 7\nq3 0 1 2 3 4 5 8 6 7\n"
    levels = list(read_text("p.slide", text, ".slide"))
    assert [lv.name for lv in levels] == ["p.slide:2", "p.slide:k7", "p.slide:q3"]
    assert all(lv.valid for lv in levels)
    assert levels[0].hash == levels[2].hash != levels[1].hash
    assert dict(levels[1].data)["optimal"] == 3
    flat = KIND.canonical(KIND.parse({"tiles": [0, 1, 2, 3, 4, 5, 8, 6, 7]}))
    assert {**flat, "kind": "sliding"} == dict(levels[0].data)
    assert flat == {"tiles": [[0, 1, 2], [3, 4, 5], [8, 6, 7]]}


def test_slide_reader_reports_the_bad_line():
    text = "0 1 2 3\n0 1 2\n0 1 x 3\nk1 long 0 1 2 3\n"
    levels = list(read_text("p.slide", text, ".slide"))
    assert levels[0].valid
    assert not levels[1].valid and "line 2" in levels[1].error
    assert not levels[2].valid and "line 3" in levels[2].error and "'x'" in levels[2].error
    assert not levels[3].valid and "line 4" in levels[3].error and "'long'" in levels[3].error


def test_generate_is_reproducible_and_solvable():
    a = KIND.generate("4x4", 5, seed=3)
    assert a == KIND.generate("4", 5, seed=3)
    assert a != KIND.generate("4", 5, seed=4)
    for raw in a:
        assert unsolvable_reason(KIND.parse(raw)) is None
    with pytest.raises(LevelError):
        KIND.generate("3x4", 1, seed=0)


def test_render_and_svg_show_board_and_moves():
    board = KIND.parse({"tiles": [[3, 0, 2], [4, 1, 7], [6, 8, 5]]})
    text = KIND.render(board, [1, 7, 5, 8, 7, 4, 3])
    assert "7 moves: 1 7 5 8 7 4 3" in text
    assert text.splitlines()[-3:] == ["· 1 2", "3 4 5", "6 7 8"]
    picture = KIND.svg(board, [1, 7, 5, 8, 7, 4, 3])
    assert picture.startswith("<svg") and ">7 moves:<" in picture and ">8<" in picture
