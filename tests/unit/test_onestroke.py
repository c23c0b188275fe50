"""One-stroke kind: the write-up's sample, heuristics against exhaustive search, proofs, formats, pictures."""

from __future__ import annotations

import random
import xml.etree.ElementTree as ET

import pytest

from packsolve.budget import Budget, BudgetExhausted
from packsolve.levels import level_hash, make_level, read_text
from packsolve.outcome import Status
from packsolve.puzzles import get_kind
from packsolve.puzzles.hamilton import prune as hamilton_prune
from packsolve.puzzles.hamilton.cpsat import cpsat_available
from packsolve.puzzles.hamilton.graph import HamiltonProblem, depth_first
from packsolve.puzzles.hamilton.prune import (
    PRUNE_ALL,
    PRUNE_DEGREE,
    PRUNE_FORCED,
    PRUNE_PROBE,
    _native,
    pruned_search,
)
from packsolve.puzzles.onestroke import kind as onestroke
from packsolve.puzzles.onestroke.generate import generate, move_start, parse_size
from packsolve.puzzles.onestroke.kind import problem

KIND = get_kind("onestroke")
SEARCHES = ["plain", "warnsdorff", "prune"]
WRITE_UP = {"map": ["111111", "101101", "111111", "101101", "111111", "000000"], "start": 14}
# A region of the bottom right holds more cells of one colour than its four links to the
# rest can balance: parity of the whole grid is fine, yet no path exists.
IMBALANCED = [
    "..................",
    "..................",
    "..................",
    "..................",
    "..................",
    "..................",
    "..................",
    "..###..##...###...",
    "##########..###...",
    "##########.###....",
    "##############....",
    "##############....",
    "#############.....",
    "#############.....",
    "###########.......",
    "###########.......",
    "##########....S...",
    "##########........",
]

# (15, 11) is a dead end, hence the end; then the corner cells of degree two force a closed
# loop in the top-right corner, which no path can contain.
FORCED_LOOP = [
    "....#.......#...",
    ".#..............",
    "................",
    "....#..........#",
    ".............#..",
    "................",
    "................",
    "................",
    "...#............",
    "................",
    ".#..............",
    ".#..............",
    ".#....#.......#.",
    "................",
    ".....#..S..#....",
    "............#...",
]

# 22x22, 469 open cells: the pocket under the blocks would close a loop of forced edges
# unless the path ended inside it, and no end there works either (CP-SAT agrees).
POCKET = ["." * 22] * 17 + [
    "..........######......",
    "..S.......#..###......",
    "..........#..##.......",
    ".........#....#.......",
    "......................",
]

# 16x16, 151 cells: the staircase at the top right, cut off by two cells, holds colour counts no
# path between those two cells can have, so the end must lie inside it, where no end works.
STAIRCASE = [
    "........#.....##",
    "....#.........##",
    "............####",
    "..........######",
    ".......#########",
    ".S...###########",
    ".....###########",
    ".......#########",
    ".......#########",
    "......##########",
    "......##########",
    ".......######..#",
    ".......######..#",
    "..........##...#",
    "..........##...#",
    "................",
]


def solve(data, heuristic=None, **limits):
    level = KIND.parse(data)
    _, fn = KIND.solver(heuristic)
    return level, fn(level, Budget(**(limits or {"time_limit": 10})))


def random_grid(rng: random.Random, h: int, w: int, density: float) -> dict:
    rows = [["#" if rng.random() < density else "." for _ in range(w)] for _ in range(h)]
    cells = [(r, c) for r in range(h) for c in range(w) if rows[r][c] == "."] or [(0, 0)]
    r, c = rng.choice(cells)
    rows[r][c] = "S"
    return {"grid": ["".join(row) for row in rows]}


@pytest.mark.parametrize("heuristic", [*SEARCHES, "default"])
def test_write_up_sample_has_a_path_from_vertex_14(heuristic):
    level, out = solve(WRITE_UP, heuristic)
    assert level.start == (2, 4)  # vertex 14 in row-major order of open cells
    assert len(level.cells()) == 26
    assert out.status == Status.SOLVED
    assert out.solution[0] == [2, 4]
    assert KIND.verify(level, out.solution) is None


def test_plain_scans_neighbours_in_increasing_vertex_order():
    """Like the write-up's adjacency-matrix scan: 0 -> 1 -> 2 -> 5 -> 4 -> 3 on a full 2x3 grid."""
    _, out = solve({"grid": ["S..", "..."]}, "plain")
    assert out.solution == [[0, 0], [0, 1], [0, 2], [1, 2], [1, 1], [1, 0]]
    assert out.nodes == 6


def test_map_and_grid_spellings_are_one_level():
    grid = {"kind": "onestroke", "grid": ["......", ".#..#.", "....S.", ".#..#.", "......", "######"]}
    a, b = make_level("a", {"kind": "onestroke", **WRITE_UP}), make_level("b", grid)
    assert a.valid and b.valid and a.hash == b.hash == level_hash(b.data)
    assert a.size == 26


@pytest.mark.parametrize("seed", range(40))
def test_heuristics_agree_with_exhaustive_search(seed):
    """plain is exhaustive; every other heuristic must find a path exactly when it does."""
    rng = random.Random(seed)
    data = random_grid(rng, rng.randint(2, 5), rng.randint(2, 5), rng.choice([0.0, 0.15, 0.3]))
    level, reference = solve(data, "plain")
    assert reference.status in (Status.SOLVED, Status.NO_SOLUTION)
    for heuristic in ["warnsdorff", "prune"] + (["cpsat"] if cpsat_available() else []):
        _, out = solve(data, heuristic)
        assert out.status == reference.status, (heuristic, data)
        if out.status == Status.SOLVED:
            assert KIND.verify(level, out.solution) is None


def test_parity_proves_no_solution_before_any_search():
    """A 3x3 grid has five cells of one colour and four of the other; a path must start on the five."""
    _, out = solve({"grid": ["...", "S..", "..."]}, "prune")
    assert out.status == Status.NO_SOLUTION and out.nodes == 1
    _, out = solve({"grid": ["...", ".S.", "..."]}, "prune")
    assert out.status == Status.SOLVED


def test_two_dead_ends_prove_no_solution():
    _, out = solve({"grid": [".#.", "...", "#S#"]}, "prune")
    assert out.status == Status.NO_SOLUTION


def test_degree_relaxation_refutes_colour_imbalanced_region_at_the_root():
    _, out = solve({"grid": IMBALANCED}, "prune")
    assert out.status == Status.NO_SOLUTION and out.nodes == 1
    p, _ = problem(KIND.parse({"grid": IMBALANCED}))
    budget = Budget(node_limit=20_000)
    with pytest.raises(BudgetExhausted):  # without it, plain DFS drowns in the open top area
        pruned_search(p, budget, prune=PRUNE_ALL & ~PRUNE_DEGREE, restarts=False)


def test_forced_edges_close_a_loop_and_refute_the_level_at_the_root():
    _, out = solve({"grid": FORCED_LOOP}, "prune")
    assert out.status == Status.NO_SOLUTION and out.nodes == 1
    p, _ = problem(KIND.parse({"grid": FORCED_LOOP}))
    with pytest.raises(BudgetExhausted):
        pruned_search(p, Budget(node_limit=20_000), prune=PRUNE_ALL & ~PRUNE_FORCED, restarts=False)


@pytest.mark.skipif(_native is None, reason="C accelerator not built")
@pytest.mark.parametrize("seed", range(6))
def test_c_search_matches_its_python_twin_node_for_node(seed):
    rng = random.Random(seed)
    level = rng.choice(generate("9x8", 1, seed) + [move_start(generate("9x8", 1, seed)[0], rng)])
    p, _ = problem(KIND.parse(level))
    runs = []
    for native in (True, False):
        budget = Budget(node_limit=100_000)
        runs.append((pruned_search(p, budget, native=native), budget.nodes))
    assert runs[0] == runs[1]


@pytest.mark.skipif(_native is None, reason="C accelerator not built")
def test_c_search_with_the_end_given_matches_its_python_twin_node_for_node():
    """With the end given, forced chains, their closing edges and the second degree test run at
    every node: both searches must prune the same states (on hunted-6: paths in 90-103 nodes)."""
    p, _ = problem(KIND.parse({"grid": HUNTED_6}))
    ends = hamilton_prune._possible_ends(p, hamilton_prune.bipartite_colouring(p))
    for e in ends[:: max(1, len(ends) // 8)]:
        runs = []
        for native in (True, False):
            budget = Budget(node_limit=600)
            try:
                path = pruned_search(
                    HamiltonProblem(p.adj, p.start, e), budget, restarts=False, native=native
                )
            except BudgetExhausted:
                path = "capped"
            runs.append((path, budget.nodes))
        assert runs[0] == runs[1], e


def test_required_end_and_closed_paths_on_the_shared_core():
    # 2x3 grid: 0 1 2 / 3 4 5; ending on 4 breaks colour parity (even length, same colour)
    adj = ((1, 3), (0, 2, 4), (1, 5), (0, 4), (1, 3, 5), (2, 4))
    for native in (True, False):
        path = pruned_search(HamiltonProblem(adj, 0, end=5), Budget(10), native=native)
        assert path is not None and path[-1] == 5 and HamiltonProblem(adj, 0, end=5).is_path(path) is None
        closed = HamiltonProblem(adj, 0, closed=True)
        path = pruned_search(closed, Budget(10), native=native)
        assert path is not None and closed.is_path(path) is None
        assert pruned_search(HamiltonProblem(adj, 0, end=4), Budget(10), native=native) is None


def test_time_and_node_limits_give_timeout_with_nodes():
    _, out = solve({"grid": IMBALANCED}, "plain", node_limit=500)
    assert out.status == Status.TIMEOUT and out.nodes > 500
    _, out = solve({"grid": IMBALANCED}, "warnsdorff", time_limit=0.05)
    assert out.status == Status.TIMEOUT and out.nodes > 0


def test_cpsat_without_ortools_is_an_error_naming_the_extra(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_ortools(name, *args, **kwargs):
        if name.startswith("ortools"):
            raise ImportError("No module named 'ortools'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ortools)
    _, out = solve(WRITE_UP, "cpsat")
    assert out.status == Status.ERROR and "pip install packsolve[cpsat]" in out.message


@pytest.mark.skipif(not cpsat_available(), reason="OR-Tools not installed")
def test_cpsat_solves_and_proves():
    level, out = solve(WRITE_UP, "cpsat")
    assert out.status == Status.SOLVED and KIND.verify(level, out.solution) is None
    _, out = solve({"grid": ["...", "S..", "..."]}, "cpsat")
    assert out.status == Status.NO_SOLUTION


@pytest.mark.parametrize(
    ("solution", "complaint"),
    [
        ([[0, 0], [0, 1], [0, 2], [1, 2], [1, 1], [1, 0]], "starts at"),
        ([[1, 0], [0, 0], [0, 1], [1, 1], [1, 2]], "misses 1"),
        ([[1, 0], [0, 0], [0, 1], [0, 2], [1, 1], [1, 2]], "jumps"),
        ([[1, 0], [0, 0], [0, 1], [0, 0], [0, 1], [0, 2]], "twice"),
        ([[1, 0], [1, 1], [2, 1]], "blocked or off the grid"),
        ([[1, 0], "x"], "not a [row, col]"),
        ([], "non-empty"),
    ],
)
def test_verify_rejects_bad_paths(solution, complaint):
    level = KIND.parse({"grid": ["...", "S.."]})
    assert complaint in KIND.verify(level, solution)


STROKE = "S..\n...\n\n.#.\n.S.\n\n"


def test_stroke_file_holds_levels_separated_by_blank_lines():
    levels = list(read_text("pack.stroke", STROKE, ".stroke"))
    assert [lv.name for lv in levels] == ["pack.stroke:1", "pack.stroke:4"]
    assert all(lv.valid and lv.kind == "onestroke" for lv in levels)
    assert levels[1].data["grid"] == [".#.", ".S."]


@pytest.mark.parametrize(
    ("text", "where", "what"),
    [
        ("S..\n..\n...\n", "line 2", "ragged"),
        ("...\n...\n", "line 1", "no start"),
        ("S..\n\n...\n.S.\n.xS\n", "line 5, column 2", "unknown character 'x'"),
        ("S..\n..S\n", "line 2, column 3", "second start"),
    ],
)
def test_bad_stroke_levels_are_invalid_and_point_at_the_line(text, where, what):
    bad = [lv for lv in read_text("p.stroke", text, ".stroke") if not lv.valid]
    assert len(bad) == 1
    assert where in bad[0].error and what in bad[0].error


@pytest.mark.parametrize(
    "data",
    [{"grid": []}, {"grid": ["S.", "..."]}, {"map": ["11", "1"], "start": 0}, {"map": ["12"], "start": 0}],
)
def test_bad_json_levels_are_invalid(data):
    level = make_level("x", {"kind": "onestroke", **data})
    assert not level.valid


def test_ragged_map_names_the_row():
    level = make_level("x", {"kind": "onestroke", "map": ["111", "111", "11"], "start": 0})
    assert "row 3 has 2 cells" in level.error


def test_generator_is_reproducible_and_makes_solvable_levels_of_the_asked_size():
    a, b = generate("7x5", 4, seed=11), generate("7x5", 4, seed=11)
    assert a == b and a != generate("7x5", 4, seed=12)
    for data in a:
        assert len(data["grid"]) == 5 and all(len(row) == 7 for row in data["grid"])
        level, out = solve(data, "prune")
        assert out.status == Status.SOLVED and KIND.verify(level, out.solution) is None
    assert KIND.generate is not None and KIND.generate("6", 1, 0)[0]["kind"] == "onestroke"
    assert parse_size("12x9") == (12, 9)
    with pytest.raises(ValueError, match="WxH"):
        parse_size("big")


def test_terminal_and_svg_pictures_show_the_path():
    level, out = solve({"grid": ["S..", "...", "#.."]}, "prune")
    text = KIND.render(level, out.solution)
    assert text.count("S") == 1 and text.count("E") == 1 and "█" in text
    assert len(text.splitlines()) == 3
    assert "S" in KIND.render(level, None)
    root = ET.fromstring(KIND.svg(level, out.solution))
    line = root.find("{http://www.w3.org/2000/svg}polyline")
    assert line is not None and len(line.get("points").split()) == len(out.solution)


@pytest.mark.parametrize("seed", range(4))
def test_pruned_search_is_exact_on_random_graphs_with_ends_and_closure(seed):
    """Every pruning test is a necessary condition: the answer must match exhaustive search."""
    rng = random.Random(seed)
    for _ in range(150):
        n, bipartite = rng.randint(1, 9), rng.random() < 0.5
        colour = [rng.randint(0, 1) for _ in range(n)]
        adj = [set() for _ in range(n)]
        for u in range(n):
            for v in range(u + 1, n):
                if (not bipartite or colour[u] != colour[v]) and rng.random() < 0.4:
                    adj[u].add(v)
                    adj[v].add(u)
        start = rng.randrange(n)
        end = rng.choice([None, None, rng.randrange(n)])
        p = HamiltonProblem(
            tuple(tuple(sorted(a)) for a in adj), start, None if end == start else end, rng.random() < 0.3
        )
        expected = depth_first(p, Budget())
        path = pruned_search(p, Budget(), native=rng.random() < 0.5)
        assert (path is None) == (expected is None), p
        assert path is None or p.is_path(path) is None


@pytest.mark.parametrize("seed", range(3))
def test_restart_and_end_splitting_portfolio_is_exact(seed, monkeypatch):
    """With tiny caps every level goes through restarts and end splitting; answers must stay exact."""
    monkeypatch.setattr(hamilton_prune, "RESTART_CAP", 1)
    monkeypatch.setattr(hamilton_prune, "RESTARTS_BEFORE_ENDS", 1)
    rng = random.Random(seed)
    for _ in range(60):
        data = random_grid(rng, rng.randint(2, 5), rng.randint(2, 5), rng.choice([0.0, 0.15, 0.3]))
        p, _ = problem(KIND.parse(data))
        expected = depth_first(p, Budget())
        budget = Budget()
        path = pruned_search(p, budget, native=rng.random() < 0.5)
        assert (path is None) == (expected is None), data
        assert path is None or p.is_path(path) is None


def test_end_splitting_refutes_a_level_the_free_end_search_cannot():
    """A pocket under the blocks forces a closed loop whichever vertex ends the path."""
    _, out = solve({"grid": POCKET}, "prune")
    assert out.status == Status.NO_SOLUTION


def test_two_vertex_cut_parity_confines_the_end_and_refutes_the_level():
    _, out = solve({"grid": STAIRCASE}, "prune")
    assert out.status == Status.NO_SOLUTION
    p, cells = problem(KIND.parse({"grid": STAIRCASE}))
    colour = hamilton_prune.bipartite_colouring(p)
    allowed = hamilton_prune._two_cut_ends(p, colour, Budget())
    assert allowed is not None and all(r <= 3 and c >= 8 for r, c in (cells[v] for v in allowed))


@pytest.mark.skipif(_native is None, reason="C extension not built")
@pytest.mark.parametrize("grid", [STAIRCASE, POCKET, "HUNTED_19"])
def test_two_vertex_cut_parity_in_c_allows_the_ends_python_allows(grid):
    p, _ = problem(KIND.parse({"grid": HUNTED_19 if grid == "HUNTED_19" else grid}))
    colour = hamilton_prune.bipartite_colouring(p)
    python = hamilton_prune._two_cut_ends(p, colour, Budget())
    c = hamilton_prune._allowed_ends(p, colour, Budget(), native=True)
    assert c == python
    if grid == STAIRCASE:
        assert c is not None  # the test confines the end there


# 14x14, 134 cells, no path (hunted-17). With the end above the walls, the cells of degree two
# below them force chains whose closing edges drop, which forces more, until the whole bottom is
# one chain and (10, 0) is left with one usable edge: a second dead end.
HUNTED_17 = [
    "..............",
    "..............",
    "..............",
    "...#..........",
    "..............",
    ".......#......",
    ".....###......",
    ".....#########",
    "..S..#########",
    ".........#####",
    ".........#####",
    "#....#########",
    ".....#########",
    "....##########",
]


@pytest.mark.parametrize("native", [True, False])
def test_forced_chains_may_not_close_so_every_end_is_refuted_at_its_root(native):
    if native and _native is None:
        pytest.skip("C extension not built")
    p, _ = problem(KIND.parse({"grid": HUNTED_17}))
    colour = hamilton_prune.bipartite_colouring(p)
    for e in hamilton_prune._possible_ends(p, colour):
        budget = Budget(node_limit=1)  # one node: the root; a survivor raises
        q = HamiltonProblem(p.adj, p.start, e)
        assert pruned_search(q, budget, restarts=False, native=native) is None
        assert budget.nodes == 1


def test_a_level_whose_every_end_fails_at_its_root_is_refuted_after_the_first_capped_run():
    _, out = solve({"grid": HUNTED_17}, "prune")
    # the free-end run's 1,000-node cap, then one node for each of the 67 ends' roots, then nothing
    assert out.status == Status.NO_SOLUTION and out.nodes == 1000 + 67 + 1


@pytest.mark.skipif(_native is None, reason="C extension not built")
@pytest.mark.parametrize("grid", [HUNTED_17, POCKET, STAIRCASE, IMBALANCED, FORCED_LOOP])
def test_root_checks_of_every_end_in_one_c_call_match_one_attempt_per_end(grid):
    p, _ = problem(KIND.parse({"grid": grid}))
    colour = hamilton_prune.bipartite_colouring(p)
    ends = hamilton_prune._possible_ends(p, colour)
    runs = []
    for native in (True, False):
        runner = hamilton_prune._Runner(p, Budget(), colour, True, PRUNE_ALL, native)
        runs.append((runner.root_survivors(p, ends), runner.budget.nodes))
    assert runs[0] == runs[1]


# 20x20, 253 cells, no path (hunted-19): once the end is fixed below the walls, forced-edge
# propagation leaves open edges on which no subgraph of the path's degrees exists.
HUNTED_19 = [
    "....................",
    "...................S",
    "..##........###.....",
    ".####.......###.....",
    ".##############.....",
    ".##############.....",
    ".##############.....",
    ".##############..#..",
    ".#############......",
    ".#############......",
    "..##############....",
    "..######....####....",
    ".#######....##...#..",
    ".#######............",
    ".#######............",
    "....####............",
    "....................",
    "....................",
    "....................",
    "....................",
]


@pytest.mark.parametrize("native", [True, False])
def test_degree_test_on_the_edges_forced_propagation_leaves_refutes_every_end_at_its_root(native):
    if native and _native is None:
        pytest.skip("C extension not built")
    p, _ = problem(KIND.parse({"grid": HUNTED_19}))
    colour = hamilton_prune.bipartite_colouring(p)
    ends = hamilton_prune._possible_ends(p, colour)
    for e in ends if native else ends[::8]:  # the Python twin is slow on 253 cells
        budget = Budget(node_limit=1)
        q = HamiltonProblem(p.adj, p.start, e)
        assert pruned_search(q, budget, restarts=False, native=native) is None
    _, out = solve({"grid": HUNTED_19}, "prune")
    # the free-end run's cap (4 nodes per cell), one node per end (126), and the root
    assert out.status == Status.NO_SOLUTION and out.nodes == 4 * 253 + 126 + 1


# 10x10, 89 cells (hunted-6): the free-end search wanders, but with the end fixed at a corner a
# path takes 98 nodes.
HUNTED_6 = ["...#..S...", "..........", "..........", "........##", ".....#####", "........##"]
HUNTED_6 += ["#.........", "..........", "..........", ".........."]


def test_each_end_first_gets_room_for_a_path_two_nodes_per_cell():
    level, out = solve({"grid": HUNTED_6}, "prune")
    assert out.status == Status.SOLVED and KIND.verify(level, out.solution) is None
    # the free-end run's 1,000 nodes, 40 ends' roots (1 node, 2 for a survivor): 80; the first end
    # (the corner (0, 0)) within 2 x 89 nodes: 98. Doubling caps from 64 took 10,818.
    assert out.nodes == 1000 + 80 + 98 + 1


@pytest.mark.skipif(not cpsat_available(), reason="OR-Tools not installed")
def test_portfolio_hands_what_prune_cannot_settle_to_cpsat_within_the_limit(monkeypatch):
    monkeypatch.setattr(onestroke, "PRUNE_NODES_PER_CELL", 1)  # 134 nodes: too few to refute it
    grid = KIND.parse({"grid": HUNTED_17})
    assert KIND.solvers["prune"](grid, Budget(node_limit=134)).status is Status.TIMEOUT
    out = KIND.solvers["portfolio"](grid, Budget(time_limit=10))
    assert out.status is Status.NO_SOLUTION and "CP-SAT" in out.message
    assert out.nodes > 134  # the pruned search's nodes count too


@pytest.mark.skipif(not cpsat_available(), reason="OR-Tools not installed")
def test_portfolio_hands_over_after_its_nodes_per_cell_not_a_share_of_the_clock(monkeypatch):
    monkeypatch.setattr(onestroke, "PRUNE_NODES_PER_CELL", 1)
    grid = KIND.parse({"grid": HUNTED_17})
    # a limit whose quarter the pruned search cannot spend before its node cap on any machine
    out = KIND.solvers["portfolio"](grid, Budget(time_limit=3600))
    assert out.status is Status.NO_SOLUTION and "within 134 nodes" in out.message
    assert out.nodes > 134


def test_portfolio_is_the_pruned_search_on_levels_it_settles():
    grid = KIND.parse({"map": ["111111", "101101", "111111", "101101", "111111", "000000"], "start": 14})
    a = KIND.solvers["portfolio"](grid, Budget(time_limit=5))
    b = KIND.solvers["prune"](grid, Budget(time_limit=5))
    assert a.status is b.status is Status.SOLVED and a.solution == b.solution and a.nodes == b.nodes
    assert KIND.default == "portfolio"


# 18x18, 205 cells, no path (hunted-26): (1, 17) is a dead end, hence the only end, and its root
# passes every test of one state; trying single edges of the root removed or forced (probing)
# learns facts until propagation, connectivity or the degree test fails either way.
HUNTED_26 = ["##################", "##########..#####.", "##..####....#####.", "#....#.......####."]
HUNTED_26 += ["#............##...", "#.................", "###..##...........", "##########........"]
HUNTED_26 += ["##########........"] * 3 + ["###########.......", ".......####.....S."]
HUNTED_26 += [".......####.......", "..................", "..................", "...#.............."]
HUNTED_26 += [".................."]
# 12x12, 96 cells, no path (hunted-24): 23 of its 48 possible ends pass the tests of one state.
HUNTED_24 = ["############", "#####.....##", "#####......#", "#####......#", "...........#"]
HUNTED_24 += ["...........#", "...........#", ".....S..####", "........####", "...#...#####"]
HUNTED_24 += ["............", "............"]


@pytest.mark.parametrize("native", [True, False])
@pytest.mark.parametrize(("grid", "unprobed"), [(HUNTED_26, 1), (HUNTED_24, 23)])
def test_probing_refutes_every_end_of_the_hunted_levels_at_its_root(grid, unprobed, native):
    p, _ = problem(KIND.parse({"grid": grid}))
    colour = hamilton_prune.bipartite_colouring(p)
    ends = hamilton_prune._possible_ends(p, colour)
    without = hamilton_prune._Runner(p, Budget(), colour, True, PRUNE_ALL & ~PRUNE_PROBE, native)
    assert len(without.root_survivors(p, ends)) == unprobed
    runner = hamilton_prune._Runner(p, Budget(), colour, True, PRUNE_ALL, native)
    assert runner.root_survivors(p, ends) == []


def test_a_level_whose_every_end_probing_refutes_takes_the_free_end_run_and_one_node_per_end():
    _, out = solve({"grid": HUNTED_26}, "prune")
    # the free-end run's 1,000-node cap, then one node for each of the 102 ends' roots
    assert out.status == Status.NO_SOLUTION and out.nodes == 1000 + 102 + 1


@pytest.mark.skipif(_native is None, reason="C extension not built")
def test_probing_refutes_only_ends_the_search_without_it_proves_unreachable():
    # Random small grids never need probing (their roots fall to the tests of one state), so the
    # check runs on hunted-24 with the start moved: most (start, end) pairs that survive the tests
    # of one state are refuted by probing there. A path found for one of them would be a wrong proof.
    p, _ = problem(KIND.parse({"grid": HUNTED_24}))
    colour = hamilton_prune.bipartite_colouring(p)
    rng = random.Random(5)
    refuted = confirmed = 0
    for _ in range(60):
        start = rng.randrange(p.n)
        end = rng.choice([v for v in range(p.n) if v != start and colour[v] == colour[start] ^ (1 - p.n % 2)])
        q = HamiltonProblem(p.adj, start, end)
        runners = [hamilton_prune._Runner(q, Budget(), colour, True, PRUNE_ALL, nat) for nat in (True, False)]
        unprobed = hamilton_prune._Runner(q, Budget(), colour, True, PRUNE_ALL & ~PRUNE_PROBE, True)
        if unprobed.attempt(q, 1)[0] != 2 or runners[0]._probed_root(q)[0] != 1:
            continue
        refuted += 1
        if refuted <= 3:  # the Python twin agrees (it is slow: 0.2 s a root)
            assert runners[1]._probed_root(q)[0] == 1
        try:
            path = pruned_search(q, Budget(node_limit=20_000), prune=PRUNE_ALL & ~PRUNE_PROBE, restarts=False)
        except BudgetExhausted:
            continue
        assert path is None, (start, end)
        confirmed += 1
    assert refuted >= 10 and confirmed >= 10


@pytest.mark.parametrize("native", [True, False])
def test_after_one_end_falls_to_probing_the_others_are_probed_jointly(native, monkeypatch):
    if native and _native is None:
        pytest.skip("C extension not built")
    # hunted-24: 23 of its 48 ends pass the tests of one state; probing refutes the first, then
    # one probe of the graph joined to a new last vertex t (next to the other 22) refutes them all.
    p, _ = problem(KIND.parse({"grid": HUNTED_24}))
    colour = hamilton_prune.bipartite_colouring(p)
    ends = hamilton_prune._possible_ends(p, colour)
    runner = hamilton_prune._Runner(p, Budget(), colour, True, PRUNE_ALL, native)
    calls = []
    roots = hamilton_prune._Runner._roots

    def counted(self, q, col, some, prune):
        alive = roots(self, q, col, some, prune)
        calls.append((q.n, len(some), bool(prune & PRUNE_PROBE), len(alive)))
        return alive

    monkeypatch.setattr(hamilton_prune._Runner, "_roots", counted)
    assert runner.root_survivors(p, ends) == []
    # the tests of one state on all 48, probing on the first survivor, the joint probe (97 vertices)
    assert calls == [(96, 48, False, 23), (96, 1, True, 0), (97, 1, True, 0)]
    assert runner.budget.nodes == 48  # one node per end's root, as when each end was probed alone
    monkeypatch.undo()
    budget = Budget()
    assert pruned_search(p, budget, native=native) is None
    # the free-end run, stopped one node past its 1,000-node cap, then one node per end's root
    assert budget.nodes == 1000 + 1 + 48


@pytest.mark.parametrize("seed", [3, 4])
def test_the_joint_probe_refutes_no_end_set_of_a_level_with_a_path(seed):
    # Generated levels all have a path from their start; its end is one of the possible ends, so
    # probing them jointly must not refute them (C and the Python twin alike).
    for data in generate("9x8", 6, seed):
        p, _ = problem(KIND.parse(data))
        colour = hamilton_prune.bipartite_colouring(p)
        assert colour is not None
        ends = hamilton_prune._possible_ends(p, colour)
        for native in [True, False] if _native is not None else [False]:
            runner = hamilton_prune._Runner(p, Budget(), colour, True, PRUNE_ALL, native)
            assert not hamilton_prune._jointly_refuted(runner, p, colour, ends)


@pytest.mark.skipif(_native is None, reason="C extension not built")
def test_the_joint_probe_refutes_only_end_sets_no_path_reaches():
    # hunted-24 with the start moved: where the ends that pass the tests of one state are refuted
    # jointly, the search without probing must find no path to any of them.
    p, _ = problem(KIND.parse({"grid": HUNTED_24}))
    colour = hamilton_prune.bipartite_colouring(p)
    rng = random.Random(7)
    refuted = confirmed = 0
    for _ in range(20):
        q = HamiltonProblem(p.adj, rng.randrange(p.n))
        runner = hamilton_prune._Runner(q, Budget(), colour, True, PRUNE_ALL, True)
        ends = runner._roots(q, colour, hamilton_prune._possible_ends(q, colour), PRUNE_ALL & ~PRUNE_PROBE)
        if len(ends) < 2 or not hamilton_prune._jointly_refuted(runner, q, colour, ends):
            continue
        refuted += 1
        for e in ends:
            try:
                path = pruned_search(
                    HamiltonProblem(p.adj, q.start, e),
                    Budget(node_limit=20_000),
                    prune=PRUNE_ALL & ~PRUNE_PROBE,
                    restarts=False,
                )
            except BudgetExhausted:
                continue
            assert path is None, (q.start, e)
            confirmed += 1
    assert refuted >= 5 and confirmed >= 20
