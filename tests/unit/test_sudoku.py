"""Sudoku: parsing and line packs, the three heuristics, outcomes, verify, pictures, generator."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from packsolve.budget import Budget
from packsolve.levels import LevelError, make_level, read_levels
from packsolve.outcome import Status
from packsolve.puzzles import get_kind
from packsolve.puzzles.sudoku.dlx import dancing_links
from packsolve.puzzles.sudoku.kind import parse, parse_line, read_lines
from packsolve.puzzles.sudoku.search import first_empty_dfs, native_search, propagation_search

KIND = get_kind("sudoku")
HEURISTICS = ("plain", "propagate", "band-triads", "band-configs", "dlx")
STRONG = ("propagate", "band-triads", "band-configs", "dlx")

# The write-up's sample (Arto Inkala's "world's hardest sudoku") and its published solution.
SEED = "800000000003600000070090200050007000000045700000100030001000068008500010090000400"
SEED_SOLUTION = "812753649943682175675491283154237896369845721287169534521974368438526917796318452"
# From Norvig's top95 and hardest sets.
TOP95_1 = "4.....8.5.3..........7......2.....6.....8.4......1.......6.3.7.5..2.....1.4......"
HARDEST_1 = "85...24..72......9..4.........1.7..23.5...9...4...........8..7..17..........36.4."
# tdoku's test file: a puzzle without solution (out of plain's reach), and one with 3 solutions.
NO_SOLUTION = "1...5.2.9..7.......6.......2...........5.1..2....2.39.3.4.9...15...1...3...8...4."
THREE_SOLUTIONS = "8.........95.......67.........472968...913245...856137....9.716...6.8492......583"
EASY = "003020600900305001001806400008102900700000008006708200002609500800203009005010300"


def solve(heuristic: str, grid: str, **limits):
    level = parse({"grid": grid})
    return level, KIND.solvers[heuristic](level, Budget(**limits))


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


# -- parsing ---------------------------------------------------------------------------------


def test_dot_and_zero_spellings_are_one_level():
    a = make_level("a", {"kind": "sudoku", "grid": SEED})
    b = make_level("b", {"kind": "sudoku", "grid": SEED.replace("0", ".")})
    rows = [[int(ch) for ch in SEED[r * 9 : r * 9 + 9]] for r in range(9)]
    c = make_level("c", {"kind": "sudoku", "grid": rows})
    assert a.valid and a.hash == b.hash == c.hash
    assert a.data == {"kind": "sudoku", "grid": SEED.replace("0", ".")}
    assert a.size == SEED.count("0")


@pytest.mark.parametrize(
    ("grid", "fragment"),
    [
        (SEED[:80], "81 cells, this one 80"),
        (SEED + "1", "81 cells, this one 82"),
        (SEED[:10] + "x" + SEED[11:], "grid character 11 (row 2, column 2)"),
        (SEED[:40] + " " + SEED[41:], "' ' is not a digit"),
    ],
)
def test_bad_json_grid_is_invalid_with_its_position(grid, fragment):
    level = make_level("x", {"kind": "sudoku", "grid": grid})
    assert not level.valid and fragment in level.error


def test_bad_line_names_line_and_column():
    with pytest.raises(LevelError) as exc:
        parse_line(SEED[:5] + "a" + SEED[6:], line=7, first_column=3)
    assert (exc.value.line, exc.value.column) == (7, 8)
    with pytest.raises(LevelError) as short:
        parse_line(SEED[:79], line=2)
    assert (short.value.line, short.value.column) == (2, 80)


def test_line_pack_skips_comments_and_blanks_and_names_file_line(tmp_path):
    text = f"# top of the pack\n{SEED}\n\n   {TOP95_1}  \n{THREE_SOLUTIONS}:3:{'1' * 81}\n{SEED[:70]}\n"
    f = write(tmp_path / "pack.sdk", text)
    levels = list(read_levels([f]))
    assert [lv.name for lv in levels] == [f"{f}:{n}" for n in (2, 4, 5, 6)]
    assert [lv.valid for lv in levels] == [True, True, True, False]
    assert levels[2].data["grid"] == THREE_SOLUTIONS
    assert "line 6, column 71" in levels[3].error
    bad = list(read_lines(f"   {SEED[:20]}?{SEED[21:]}"))
    assert bad[0][1].column == 24  # three leading spaces, then the 21st character


@pytest.mark.parametrize("suffix", [".sdk", ".sudoku", ".txt"])
def test_every_native_suffix_reads_as_sudoku(tmp_path, suffix):
    f = write(tmp_path / f"p{suffix}", f"{EASY}\n{HARDEST_1}\n")
    levels = list(read_levels([tmp_path]))
    assert [lv.kind for lv in levels] == ["sudoku", "sudoku"] and all(lv.valid for lv in levels)
    assert levels[1].name == f"{f}:2"


# -- solving ---------------------------------------------------------------------------------


def test_plain_reproduces_the_write_up_sample_answer():
    level = parse({"grid": SEED})
    budget = Budget()
    first = first_empty_dfs(level.cells, budget, cap=1)
    assert first.first == SEED_SOLUTION and first.count == 1
    # the first-empty-cell order is deterministic, so the node count is too
    assert budget.nodes == 49_559


@pytest.mark.parametrize("heuristic", STRONG)
def test_strong_heuristics_solve_the_sample_and_prove_it_unique(heuristic):
    level, out = solve(heuristic, SEED)
    assert out.status == Status.SOLVED and out.solution == SEED_SOLUTION
    assert out.message == "unique solution" and out.nodes > 0


@pytest.mark.parametrize("heuristic", HEURISTICS)
def test_every_heuristic_tells_unique_ambiguous_and_impossible_apart(heuristic):
    level, out = solve(heuristic, EASY)
    assert (
        out.status == Status.SOLVED and "unique" in out.message and KIND.verify(level, out.solution) is None
    )
    level, out = solve(heuristic, THREE_SOLUTIONS)
    assert out.status == Status.SOLVED and "more than one solution" in out.message
    assert KIND.verify(level, out.solution) is None
    # no digit is left for the top-left cell, though no two givens clash
    _, out = solve(heuristic, ".12345678" + "9" + "." * 71)
    assert out.status == Status.NO_SOLUTION and out.solution is None and "exhausted" in out.message


@pytest.mark.parametrize("heuristic", STRONG)
def test_strong_heuristics_prove_a_hard_puzzle_has_no_solution(heuristic):
    _, out = solve(heuristic, NO_SOLUTION, time_limit=30)
    assert out.status == Status.NO_SOLUTION and out.solution is None


@pytest.mark.parametrize("heuristic", HEURISTICS)
def test_clashing_givens_are_no_solution_naming_the_unit(heuristic):
    grid = "55" + "." * 79
    _, out = solve(heuristic, grid)
    assert out.status == Status.NO_SOLUTION and "repeat 5 in row 1" in out.message
    _, out = solve(heuristic, "1" + "." * 26 + "1" + "." * 53)
    assert out.status == Status.NO_SOLUTION and "column 1" in out.message


@pytest.mark.parametrize("heuristic", HEURISTICS)
def test_node_limit_ends_in_timeout_not_an_exception(heuristic):
    _, out = solve(heuristic, "." * 81, node_limit=5)
    assert out.status == Status.TIMEOUT and out.solution is None and out.nodes >= 5


def test_plain_expands_more_nodes_than_the_strong_heuristics():
    counts = {h: solve(h, HARDEST_1, node_limit=5_000_000)[1].nodes for h in HEURISTICS}
    assert counts["propagate"] < counts["dlx"] < counts["plain"]


def test_c_and_python_propagation_agree():
    for grid in (SEED, TOP95_1, HARDEST_1, THREE_SOLUTIONS, NO_SOLUTION):
        cells = parse({"grid": grid}).cells
        native = native_search(cells, Budget(), 2)
        if native is None:
            pytest.skip("C accelerator not built")
        python = propagation_search(cells, Budget(), 2)
        assert native.count == python.count
        if native.count == 1:
            assert native.first == python.first


def _transform(grid: str, rnd: random.Random) -> str:
    """Return grid under a random symmetry: relabelling, band/row/stack/column shuffles, transpose."""
    digits = list("123456789")
    rnd.shuffle(digits)
    relabel = {str(i + 1): d for i, d in enumerate(digits)} | {".": "."}
    bands, stacks = rnd.sample(range(3), 3), rnd.sample(range(3), 3)
    rows = [b * 3 + r for b in bands for r in rnd.sample(range(3), 3)]
    cols = [s * 3 + c for s in stacks for c in rnd.sample(range(3), 3)]
    cells = [[relabel[grid[r * 9 + c]] for c in cols] for r in rows]
    if rnd.random() < 0.5:
        cells = [list(col) for col in zip(*cells, strict=True)]
    return "".join("".join(row) for row in cells)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), base=st.sampled_from([SEED, TOP95_1, HARDEST_1]))
def test_symmetric_variants_of_hard_puzzles_are_solved_and_verified(seed, base):
    grid = _transform(base.replace("0", "."), random.Random(seed))
    level = parse({"grid": grid})
    for heuristic in STRONG:
        out = KIND.solvers[heuristic](level, Budget(time_limit=30))
        assert out.status == Status.SOLVED and out.message == "unique solution"
        assert KIND.verify(level, out.solution) is None


def test_dlx_counts_agree_with_propagation_on_an_ambiguous_grid():
    cells = parse({"grid": "." * 81}).cells
    assert dancing_links(cells, Budget(), 5).count == 5
    assert propagation_search(cells, Budget(), 5).count == 5


# -- verify, pictures, generator -------------------------------------------------------------


def test_verify_rejects_every_kind_of_wrong_grid():
    level = parse({"grid": SEED})
    assert KIND.verify(level, SEED_SOLUTION) is None
    assert "81 digits" in KIND.verify(level, SEED_SOLUTION[:80])
    assert "not a digit" in KIND.verify(level, "0" + SEED_SOLUTION[1:])
    assert "changes the given 8" in KIND.verify(level, "9" + SEED_SOLUTION[1:])
    swapped = SEED_SOLUTION[:1] + SEED_SOLUTION[2] + SEED_SOLUTION[1] + SEED_SOLUTION[3:]
    assert "column 2 does not hold" in KIND.verify(level, swapped)
    assert KIND.verify(level, None) is not None


def test_renderings_set_givens_apart_from_filled_digits():
    level = parse({"grid": SEED})
    text = KIND.render(level, SEED_SOLUTION)
    assert text.splitlines()[1].startswith("│[8] 1  2 │")
    assert KIND.render(level, None).count("·") == SEED.count("0")
    picture = KIND.svg(level, SEED_SOLUTION)
    assert picture.startswith("<svg") and picture.rstrip().endswith("</svg>")
    assert picture.count('class="given"') == 81 - SEED.count("0")
    assert picture.count('class="filled"') == SEED.count("0")


def test_generator_is_reproducible_and_makes_unique_puzzles():
    levels = KIND.generate("30", 3, seed=7)
    assert levels == KIND.generate("30", 3, seed=7) and levels != KIND.generate("30", 3, seed=8)
    for data in levels:
        level = parse(data)
        assert data["kind"] == "sudoku" and 81 - level.blanks >= 30
        out = KIND.solvers["propagate"](level, Budget())
        assert out.status == Status.SOLVED and out.message == "unique solution"
    with pytest.raises(ValueError):
        KIND.generate("12", 1, seed=1)


def test_default_falls_back_to_python_without_the_c_accelerator(monkeypatch):
    import packsolve.puzzles.sudoku.kind as sudoku

    monkeypatch.setattr(sudoku, "native_search", lambda *args, **kwargs: None)
    for heuristic in ("propagate", "band-triads", "band-configs"):
        level, out = solve(heuristic, HARDEST_1)
        assert out.status == Status.SOLVED and out.message == "unique solution (pure-Python fallback)"
        assert KIND.verify(level, out.solution) is None


@pytest.mark.parametrize(
    ("grid", "nodes"),
    [(SEED, 54), (TOP95_1, 1), (HARDEST_1, 1), (NO_SOLUTION, 235), (THREE_SOLUTIONS, 5), (EASY, 1)],
)
def test_band_triads_expand_as_many_nodes_as_propagate(grid, nodes):
    # Both apply singles and locked candidates to a fixpoint and branch on the first two-candidate
    # cell, so their trees are the same; the pinned counts catch a change in either.
    pytest.importorskip("packsolve.native.sudoku")
    pytest.importorskip("packsolve.native.sudoku_bands")
    assert [solve(h, grid)[1].nodes for h in ("propagate", "band-triads")] == [nodes, nodes]


@pytest.mark.parametrize(
    ("grid", "nodes"),
    [(SEED, 66), (TOP95_1, 1), (HARDEST_1, 1), (NO_SOLUTION, 193), (THREE_SOLUTIONS, 6), (EASY, 1)],
)
def test_band_configs_node_counts(grid, nodes):
    # Minirow counts prune more and matching branches fix three cells' segments at once, so the
    # trees differ from band-triads'; the pinned counts catch a change in the rules or the branching.
    pytest.importorskip("packsolve.native.sudoku_bands")
    level, out = solve("band-configs", grid)
    assert out.nodes == nodes
    assert out.solution is None or KIND.verify(level, out.solution) is None


# From magictour's top1465: band-triads needs 20 nodes, the minirow counts settle it at the root.
TOP1465_MINIROWS = "...6..9.23.87.....4............95..17......8...........2..6.5.....4...3..1......."


def test_minirow_counts_settle_what_the_triads_leave_to_search():
    bands = pytest.importorskip("packsolve.native.sudoku_bands")
    cells = bytes(parse({"grid": TOP1465_MINIROWS}).cells)
    triads, configs = bands.count(cells, 2, -1, -1.0), bands.count(cells, 2, -1, -1.0, True)
    assert (triads[1], triads[3]) == (1, 20) and (configs[1], configs[3]) == (1, 1)
    assert triads[2] == configs[2] and KIND.verify(parse({"grid": TOP1465_MINIROWS}), configs[2]) is None
    counts, solutions, nodes = bands.count_batch(cells * 2, 2, True)
    assert list(counts) == [1, 1] and nodes == 2 and solutions[:81].decode() == configs[2]


def test_band_batch_counts_agree_with_one_grid_at_a_time():
    bands = pytest.importorskip("packsolve.native.sudoku_bands")
    grids = [SEED, THREE_SOLUTIONS, NO_SOLUTION, EASY]
    cells = [bytes(parse({"grid": g}).cells) for g in grids]
    counts, solutions, nodes = bands.count_batch(b"".join(cells), 2)
    singly = [bands.count(c, 2, -1, -1.0) for c in cells]
    assert list(counts) == [s[1] for s in singly] == [1, 2, 0, 1]
    assert nodes == sum(s[3] for s in singly) == 54 + 5 + 235 + 1
    assert solutions[:81].decode() == SEED_SOLUTION and solutions[162:243] == b"0" * 81
    with pytest.raises(ValueError):
        bands.count_batch(b"\x00" * 80, 2)
    with pytest.raises(ValueError):
        bands.count(b"\x0a" + b"\x00" * 80, 2, -1, -1.0)


@pytest.mark.parametrize(
    ("module", "flags"), [("sudoku", ()), ("sudoku_bands", ()), ("sudoku_bands", (True,))]
)
def test_c_search_stops_at_the_deadline_and_the_node_cap(module, flags):
    native = pytest.importorskip(f"packsolve.native.{module}")
    import time

    # counting a million solutions of the empty grid takes far longer than 20 ms
    stop, count, first, nodes = native.count(bytes(81), 10**6, -1, time.monotonic() + 0.02, *flags)
    assert stop == 2 and 0 < count < 10**6 and first is not None and nodes >= 1024
    stop, count, _, nodes = native.count(bytes(81), 10**6, 300, -1.0, *flags)
    assert stop == 1 and nodes == 301
    level = parse({"grid": "." * 81})
    out = KIND.solvers["propagate"](level, Budget(time_limit=0.05))
    assert out.status == Status.SOLVED  # two solutions of the empty grid come long before the deadline
