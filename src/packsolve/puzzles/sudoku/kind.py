"""Sudoku levels: fill the 9×9 grid so every row, column and box holds 1-9 once.

Heuristics: ``plain`` (the write-up's first-empty-cell DFS), ``propagate``
(bitset candidates, naked/hidden singles and locked candidates, most
constrained cell first; C accelerated, the default), ``band-triads``
(each digit's cells as bit-parallel 27-bit bands, with the row-box and
column-box matchings of every band and stack kept as "triads"; C; the same
trees as ``propagate``), ``band-configs`` (the same bands, with each
minirow's three digits counted too, branching on a digit's row-box matching
in the band with the fewest, as tdoku does; C, the fastest) and
``dlx`` (Knuth's Algorithm X with dancing links). Every heuristic counts solutions up to two,
so an ambiguous puzzle is reported as such.
"""

from __future__ import annotations

import operator
import random
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from packsolve.api import Budget, LevelError, Outcome, PuzzleKind, field_of, no_solution, solved, solver
from packsolve.puzzles.sudoku import render as pictures
from packsolve.puzzles.sudoku.dlx import dancing_links
from packsolve.puzzles.sudoku.search import (
    BOXES,
    COLS,
    ROWS,
    Count,
    clash,
    first_empty_dfs,
    native_search,
    propagation_search,
)

BLANKS = ".0"
DIGITS = "123456789"
# Fast paths for the common case (a well-formed grid, a correct answer): a pack of 50,000 tiny
# sudokus spends more time parsing and verifying than solving. Errors take the slow, precise path.
_GRID_CHARS = frozenset(DIGITS + BLANKS)
_DIGIT_SET = frozenset(DIGITS)
_TO_DOT = str.maketrans("0", ".")
_UNIT_CELLS = [operator.itemgetter(*unit) for unit in ROWS + COLS + BOXES]
# Solutions are counted up to this many: two tell a unique puzzle from an ambiguous one.
COUNT_CAP = 2


@dataclass(frozen=True)
class Sudoku:
    """A sudoku level: 81 characters row by row, '1'-'9' givens and '.' blanks."""

    grid: str

    @cached_property
    def cells(self) -> list[int]:
        """Digits row by row, 0 for a blank (searches copy it, never change it)."""
        return [0 if ch == "." else int(ch) for ch in self.grid]

    @cached_property
    def givens(self) -> tuple[tuple[int, ...], str]:
        """(indices of the given cells, their digits): an answer keeps them if it reads the same there."""
        cells = tuple(i for i, ch in enumerate(self.grid) if ch != ".")
        return cells, "".join(self.grid[i] for i in cells)

    @property
    def blanks(self) -> int:
        return self.grid.count(".")


def parse_line(text: str, line: int | None = None, first_column: int = 1) -> Sudoku:
    """Return the Sudoku spelled by 81 characters; raise LevelError naming the bad line and column."""

    def err(message: str, column: int) -> LevelError:
        if line is not None:
            return LevelError(message, line, first_column + column - 1)
        r, c = divmod(column - 1, 9)
        return LevelError(f"grid character {column} (row {r + 1}, column {c + 1}): {message}")

    if len(text) == 81 and _GRID_CHARS.issuperset(text):
        return Sudoku(text.translate(_TO_DOT))
    for i, ch in enumerate(text[:81]):
        if ch not in DIGITS and ch not in BLANKS:
            raise err(f"{ch!r} is not a digit 1-9 or a blank ('.' or '0')", i + 1)
    if len(text) != 81:
        column = min(len(text), 81) + 1
        raise err(f"a sudoku has 81 cells, this one {len(text)} characters", column)
    return Sudoku("".join("." if ch in BLANKS else ch for ch in text))


def parse(data: Mapping[str, Any]) -> Sudoku:
    """Return the Sudoku of a JSON level; ``grid`` is 81 characters or 9 rows of 9."""
    grid = field_of(data, "grid", "sudoku")
    if isinstance(grid, list):
        if len(grid) != 9:
            raise LevelError(f"'grid' as a list must have 9 rows, not {len(grid)}")
        rows = []
        for k, row in enumerate(grid, 1):
            if isinstance(row, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in row):
                row = "".join(str(x) if 0 <= x <= 9 else "?" for x in row)
            if not isinstance(row, str) or len(row) != 9:
                raise LevelError(f"row {k} of 'grid' must be 9 characters or 9 integers 0-9")
            rows.append(row)
        grid = "".join(rows)
    if not isinstance(grid, str):
        raise LevelError("'grid' must be a string of 81 characters ('1'-'9' givens, '.' or '0' blanks)")
    return parse_line(grid)


def canonical(level: Sudoku) -> dict[str, Any]:
    return {"grid": level.grid}


def read_lines(text: str) -> Iterator[tuple[int, dict[str, Any] | LevelError]]:
    """Read a .sdk/.sudoku/.txt pack: one puzzle per line; blank and '#' lines skipped.

    tdoku's test format ``puzzle:count:solution`` is read by its part before
    the first colon.
    """
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        lead = len(line) - len(line.lstrip())
        puzzle = stripped.split(":", 1)[0].rstrip()
        try:
            yield number, {"grid": parse_line(puzzle, number, lead + 1).grid}
        except LevelError as exc:
            yield number, exc


def _outcome(result: Count, how: str = "") -> Outcome:
    if result.count == 0:
        return no_solution("no grid completes these givens (search exhausted)")
    if result.count == 1:
        return solved(result.first, f"unique solution{how}")
    return solved(result.first, f"more than one solution (counting stopped at {COUNT_CAP}){how}")


def _checked(level: Sudoku) -> Outcome | None:
    """Return no_solution when the givens clash already, else None."""
    reason = clash(level.cells)
    return no_solution(reason) if reason else None


@solver
def solve_plain(level: Sudoku, budget: Budget) -> Outcome:
    """Return the write-up's first-empty-cell DFS outcome (no_solution once the tree is exhausted)."""
    return _checked(level) or _outcome(first_empty_dfs(level.cells, budget, COUNT_CAP))


def _native_outcome(level: Sudoku, budget: Budget, module: str, configs: bool = False) -> Outcome:
    """Return the outcome of the C search packsolve.native.<module>, or the pure-Python search without it."""
    result = native_search(level.cells, budget, COUNT_CAP, module, configs=configs)
    if result is None:
        if (early := _checked(level)) is not None:
            return early
        return _outcome(propagation_search(level.cells, budget, COUNT_CAP), " (pure-Python fallback)")
    # The C search refutes clashing givens at once; the clash check runs only then, for its message.
    return (_checked(level) if result.count == 0 else None) or _outcome(result)


@solver
def solve_propagate(level: Sudoku, budget: Budget) -> Outcome:
    """Return the bitset propagation outcome: C accelerator, or the pure-Python search without it."""
    return _native_outcome(level, budget, "sudoku")


@solver
def solve_band_triads(level: Sudoku, budget: Budget) -> Outcome:
    """Return the outcome of the bit-parallel band search (C), or the pure-Python search without it."""
    return _native_outcome(level, budget, "sudoku_bands")


@solver
def solve_band_configs(level: Sudoku, budget: Budget) -> Outcome:
    """Return the outcome of the band search with minirow counts and matching branches (C), or the
    pure-Python search without it."""
    return _native_outcome(level, budget, "sudoku_bands", configs=True)


@solver
def solve_dlx(level: Sudoku, budget: Budget) -> Outcome:
    """Return the dancing-links outcome (no_solution once Algorithm X has exhausted the matrix)."""
    return _checked(level) or _outcome(dancing_links(level.cells, budget, COUNT_CAP))


def _keeps_givens(level: Sudoku, solution: str) -> bool:
    cells, digits = level.givens
    return not cells or "".join(operator.itemgetter(*cells)(solution)) == digits


def verify(level: Sudoku, solution: Any) -> str | None:
    """Return why solution is not a completed grid of level, or None if it is."""
    if not isinstance(solution, str) or len(solution) != 81:
        return "solution must be a string of 81 digits"
    if (
        _DIGIT_SET.issuperset(solution)
        and _keeps_givens(level, solution)
        and all(len(set(cells(solution))) == 9 for cells in _UNIT_CELLS)
    ):
        return None
    for i, ch in enumerate(solution):
        if ch not in DIGITS:
            return f"cell {i + 1} holds {ch!r}, not a digit 1-9"
        if level.grid[i] != "." and level.grid[i] != ch:
            r, c = divmod(i, 9)
            return f"row {r + 1}, column {c + 1} changes the given {level.grid[i]} to {ch}"
    for kind, units in (("row", ROWS), ("column", COLS), ("box", BOXES)):
        for k, unit in enumerate(units, 1):
            if {solution[i] for i in unit} != set(DIGITS):
                return f"{kind} {k} does not hold 1-9 once each"
    return None


def render(level: Sudoku, solution: Any = None) -> str:
    return pictures.render(level.grid, solution)


def svg(level: Sudoku, solution: Any = None) -> str:
    return pictures.svg(level.grid, solution)


def count_solutions(cells: list[int], cap: int = COUNT_CAP) -> int:
    """Return how many solutions cells has, counting at most cap."""
    result = native_search(cells, Budget(), cap) or propagation_search(cells, Budget(), cap)
    return result.count


def generate(size_spec: str, count: int, seed: int) -> list[dict[str, Any]]:
    """Return count puzzles with a unique solution; size_spec is the number of givens to aim for.

    Each puzzle is a random full grid with givens taken away one at a time, in
    random order, while the solution stays unique; when no given can go, the
    puzzle keeps more givens than asked (minimal puzzles have 17 or more).
    """
    spec = size_spec.strip().lower()
    try:
        target = 17 if spec in ("", "9x9", "min", "minimal") else int(spec)
    except ValueError:
        raise ValueError(f"sudoku size is a number of givens (17-81) or 9x9, not {size_spec!r}") from None
    if not 17 <= target <= 81:
        raise ValueError(f"a unique sudoku has between 17 and 81 givens, not {target}")
    rng = random.Random(seed)
    levels = []
    for _ in range(count):
        full = propagation_search([0] * 81, Budget(), 1, rng).first
        assert full is not None  # the empty grid always completes
        cells = [int(ch) for ch in full]
        order = list(range(81))
        rng.shuffle(order)
        givens = 81
        for cell in order:
            if givens <= target:
                break
            digit, cells[cell] = cells[cell], 0
            if count_solutions(cells) == 1:
                givens -= 1
            else:
                cells[cell] = digit
        levels.append({"kind": "sudoku", "grid": "".join(str(d) if d else "." for d in cells)})
    return levels


KIND = PuzzleKind(
    name="sudoku",
    parse=parse,
    canonical=canonical,
    solvers={
        "plain": solve_plain,
        "propagate": solve_propagate,
        "band-triads": solve_band_triads,
        "band-configs": solve_band_configs,
        "dlx": solve_dlx,
    },
    default="propagate",
    verify=verify,
    render=render,
    svg=svg,
    size=lambda level: level.blanks,
    formats={".sdk": read_lines, ".sudoku": read_lines, ".txt": read_lines},
    description="9×9 sudoku: fill every row, column and box with 1-9 (solutions counted up to 2)",
    generate=generate,
    size_help="the number of givens to aim for, 17-81 (9x9: as few as stay unique), e.g. 24",
    examples=(
        {"grid": "..3.2.6..9..3.5..1..18.64....81.29..7.......8..67.82....26.95..8..2.3..9..5.1.3.."},
        {"grid": "11" + "." * 79},
    ),
)
