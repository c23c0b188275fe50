"""One-stroke grid levels: from the start cell, visit every open cell once moving orthogonally."""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from html import escape
from typing import Any

from packsolve.api import (
    Budget,
    BudgetExhausted,
    Combine,
    LevelError,
    Outcome,
    Part,
    PuzzleKind,
    Split,
    Status,
    field_of,
    no_solution,
    solved,
    solver,
)
from packsolve.puzzles.hamilton.cpsat import cpsat_available, cpsat_search
from packsolve.puzzles.hamilton.graph import HamiltonProblem, depth_first, path_prefixes, warnsdorff_order
from packsolve.puzzles.hamilton.prune import pruned_search
from packsolve.puzzles.onestroke.generate import generate

OPEN, BLOCKED, START = ".", "#", "S"
MAX_CELLS = 250_000


@dataclass(frozen=True)
class Grid:
    """A one-stroke level: rows of '.', '#' and exactly one 'S'."""

    rows: tuple[str, ...]
    start: tuple[int, int]

    @property
    def height(self) -> int:
        return len(self.rows)

    @property
    def width(self) -> int:
        return len(self.rows[0])

    def is_open(self, r: int, c: int) -> bool:
        return 0 <= r < self.height and 0 <= c < self.width and self.rows[r][c] != BLOCKED

    def cells(self) -> list[tuple[int, int]]:
        """Open cells in row-major order: the write-up's vertex numbering."""
        return [(r, c) for r in range(self.height) for c in range(self.width) if self.rows[r][c] != BLOCKED]


def parse_grid(rows: Any, first_line: int | None = None) -> Grid:
    """Return the Grid of DESIGN's form; raise LevelError pointing at the offending row."""
    if not isinstance(rows, list) or not rows:
        raise _grid_error(first_line, "'grid' must be a non-empty list of strings")
    if any(not isinstance(row, str) for row in rows):
        raise _grid_error(first_line, "'grid' must be a list of strings")
    width = len(rows[0])
    if width == 0:
        raise _grid_error(first_line, "empty row", 0)
    if len(rows) * width > MAX_CELLS:
        raise _grid_error(
            first_line, f"grid has {len(rows) * width} cells, more than the {MAX_CELLS} supported"
        )
    return Grid(tuple(rows), _start_cell(rows, width, first_line))


def _start_cell(rows: list[str], width: int, first_line: int | None) -> tuple[int, int]:
    """Return the grid's one start cell, checking every row's width and characters on the way."""
    start = None
    for i, row in enumerate(rows):
        if len(row) != width:
            raise _grid_error(
                first_line, f"ragged grid: this row has {len(row)} cells, the first row {width}", i
            )
        for j, ch in enumerate(row):
            if ch not in (OPEN, BLOCKED, START):
                msg = f"unknown character {ch!r} (use '.' open, '#' blocked, 'S' start)"
                raise _grid_error(first_line, msg, i, j + 1)
            if ch == START:
                if start is not None:
                    msg = f"a second start 'S' (the first is at row {start[0] + 1})"
                    raise _grid_error(first_line, msg, i, j + 1)
                start = (i, j)
    if start is None:
        raise _grid_error(first_line, "no start cell 'S' in the grid")
    return start


def _grid_error(first_line: int | None, msg: str, i: int | None = None, col: int | None = None) -> LevelError:
    """Return the error msg about row i (0-based) and column col (1-based) of a grid.

    A grid read from a file (first_line: the file line of its first row) points at the file's line;
    one given inline names its row.
    """
    if first_line is not None and i is not None:
        return LevelError(msg, first_line + i, col)
    where = f"row {i + 1}" + (f", column {col}" if col else "") + ": " if i is not None else ""
    return LevelError(where + msg)


def parse_map(rows: Any, start: Any) -> Grid:
    """Return the Grid of the write-up's form: rows of 1/0 and the start's open-cell index."""
    if not isinstance(rows, list) or not rows:
        raise LevelError("'map' must be a non-empty list of rows of 1 (open) / 0 (blocked)")
    text_rows = []
    for i, row in enumerate(rows):
        if isinstance(row, list):
            row = "".join(str(x) for x in row)
        if not isinstance(row, str) or any(ch not in "01" for ch in row):
            raise LevelError(f"row {i + 1} of 'map' must hold only 1 (open) and 0 (blocked)")
        text_rows.append(row.replace("1", OPEN).replace("0", BLOCKED))
    for i, row in enumerate(text_rows):
        if len(row) != len(text_rows[0]):
            raise LevelError(
                f"ragged 'map': row {i + 1} has {len(row)} cells, the first row {len(text_rows[0])}"
            )
    cells = [(r, c) for r, row in enumerate(text_rows) for c, ch in enumerate(row) if ch == OPEN]
    if isinstance(start, bool) or not isinstance(start, int) or not 0 <= start < len(cells):
        raise LevelError(f"'start' must be the index of an open cell, 0..{len(cells) - 1}")
    r, c = cells[start]
    text_rows[r] = text_rows[r][:c] + START + text_rows[r][c + 1 :]
    return Grid(tuple(text_rows), (r, c))


def parse(data: Mapping[str, Any]) -> Grid:
    if isinstance(data, Mapping) and "grid" in data:
        return parse_grid(data["grid"])
    if isinstance(data, Mapping) and "map" in data:
        return parse_map(data["map"], field_of(data, "start", "onestroke"))
    raise LevelError("onestroke level needs 'grid' (rows of . # S) or 'map' + 'start'")


def canonical(grid: Grid) -> dict[str, Any]:
    return {"grid": list(grid.rows)}


def read_stroke(text: str) -> Iterator[tuple[int, dict[str, Any] | LevelError]]:
    """Read a .stroke file: ASCII grids separated by blank lines; '#'-only lines are grid rows."""
    block: list[str] = []
    first = 0
    for number, line in enumerate([*text.splitlines(), ""], 1):
        line = line.rstrip()
        if line:
            if not block:
                first = number
            block.append(line)
            continue
        if block:
            try:
                yield first, {"grid": list(parse_grid(block, first).rows)}
            except LevelError as exc:
                yield first, exc
            block = []


def problem(grid: Grid) -> tuple[HamiltonProblem, list[tuple[int, int]]]:
    """Return the Hamiltonian-path problem of grid and the cell of each vertex.

    Neighbours are listed in increasing vertex number, the order in which the
    write-up's DFS scans its adjacency matrix.
    """
    cells = grid.cells()
    index = {cell: i for i, cell in enumerate(cells)}
    adj = []
    for r, c in cells:
        near = [index[n] for n in ((r - 1, c), (r, c - 1), (r, c + 1), (r + 1, c)) if n in index]
        adj.append(tuple(sorted(near)))
    return HamiltonProblem(tuple(adj), index[grid.start]), cells


def _depth_first(order: Any, grid: Grid, budget: Budget) -> Outcome:
    """The write-ups' depth-first search, in order (order None) or with an ordering (Warnsdorff's)."""
    p, cells = problem(grid)
    path = depth_first(p, budget, order) if order else depth_first(p, budget)
    if path is None:
        return no_solution("exhaustive search found no path through every open cell")
    return solved([list(cells[v]) for v in path])


@solver
def prune(grid: Grid, budget: Budget) -> Outcome:
    """Solve with the pruned search (parity, connectivity, dead ends, cut vertices, degrees)."""
    p, cells = problem(grid)
    path = pruned_search(p, budget)
    if path is None:
        return no_solution(
            "no path: every branch fails a parity, connectivity, dead-end, cut-vertex or degree test"
        )
    return solved([list(cells[v]) for v in path])


# Share of the time limit the pruned search has before CP-SAT gets the rest (in `portfolio`).
PRUNE_SHARE = 0.25
# ... and nodes per open cell (at least 100 cells' worth): past them the search is lost in a level it
# cannot prune, so CP-SAT gets it at once. Levels it decides take a few nodes per cell (at most 2.3
# on the real, generated and growth sets, 13.2 on the hardest levels found since the end splitting's
# root checks grew, 294 before); none of the 26 hardest goes past 400 since the root checks probe
# (hunted-20..22 did, and CP-SAT decides none of them).
PRUNE_NODES_PER_CELL = 400


@solver
def portfolio(grid: Grid, budget: Budget) -> Outcome:
    """Solve with the pruned search; if it has not settled within PRUNE_SHARE of the time limit
    and OR-Tools is installed, hand the level to CP-SAT for the rest of the time.

    The pruned search decides almost every level in milliseconds; the rare
    impossible level whose proof needs connectivity reasoning it lacks is
    refuted by CP-SAT's relaxation instead. Without a time limit or OR-Tools
    this is the pruned search alone.
    """
    remaining = budget.remaining()
    if remaining is None or not cpsat_available():
        return prune.__wrapped__(grid, budget)  # type: ignore[attr-defined]
    p, cells = problem(grid)
    nodes = PRUNE_NODES_PER_CELL * max(p.n, 100)
    if budget.node_limit is not None:
        nodes = min(nodes, budget.node_limit)
    first = Budget(time_limit=max(0.05, remaining * PRUNE_SHARE), node_limit=nodes)
    try:
        path = pruned_search(p, first)
    except BudgetExhausted:
        budget.charge(first.nodes)  # the node limit, if any, holds across both searches
        path = cpsat_search(p, budget)
        if path is None:
            return no_solution(
                f"no path: CP-SAT proved the circuit model infeasible (the pruned search did not settle "
                f"it within {first.node_limit:,} nodes or {first.time_limit:.1f} s)"
            )
        return solved([list(cells[v]) for v in path], "found by CP-SAT after the pruned search")
    budget.charge(first.nodes)
    if path is None:
        return no_solution(
            "no path: every branch fails a parity, connectivity, dead-end, cut-vertex or degree test"
        )
    return solved([list(cells[v]) for v in path])


@solver
def cpsat(grid: Grid, budget: Budget) -> Outcome:
    """Solve with OR-Tools CP-SAT (one worker); an error Outcome if OR-Tools is not installed."""
    p, cells = problem(grid)
    try:
        path = cpsat_search(p, budget)
    except ImportError as exc:
        return Outcome(Status.ERROR, message=str(exc))
    if path is None:
        return no_solution("CP-SAT proved the circuit model infeasible")
    return solved([list(cells[v]) for v in path])


def split(grid: Grid, heuristic: str, n: int) -> Split | None:
    """Return at least n parts: paths from the start of one length, each a grid of its own.

    A part's grid has the path's cells blocked but its last, where the part starts: any heuristic
    searches it as a level, and its answer (from that cell) after the path's other cells is an
    answer of the level. First found. None when every path ends before n are found.
    """
    p, cells = problem(grid)
    found = path_prefixes(p, n)
    if found is None:
        return None
    paths, expanded = found
    parts = []
    for path in paths:
        rows = [list(row.replace(START, OPEN)) for row in grid.rows]
        for v in path[:-1]:
            r, c = cells[v]
            rows[r][c] = BLOCKED
        r, c = cells[path[-1]]
        rows[r][c] = START
        prefix = tuple([*cells[v]] for v in path[:-1])
        parts.append(Part(Grid(tuple("".join(row) for row in rows), (r, c)), prefix, len(prefix)))
    return Split(Combine.FIRST_FOUND, tuple(parts), expanded)


def verify(grid: Grid, solution: Any) -> str | None:
    """Return why solution is not a one-stroke path of grid, or None if it is."""
    if not isinstance(solution, list) or not solution:
        return "solution must be a non-empty list of [row, col]"
    steps = []
    for i, cell in enumerate(solution):
        if (
            not isinstance(cell, (list, tuple))
            or len(cell) != 2
            or not all(isinstance(x, int) and not isinstance(x, bool) for x in cell)
        ):
            return f"step {i} is not a [row, col] pair: {cell!r}"
        steps.append((cell[0], cell[1]))
    if steps[0] != grid.start:
        return f"path starts at {list(steps[0])}, not at the start {list(grid.start)}"
    for i, (r, c) in enumerate(steps):
        if not grid.is_open(r, c):
            return f"step {i} enters {[r, c]}, which is blocked or off the grid"
    for i in range(1, len(steps)):
        (r0, c0), (r1, c1) = steps[i - 1], steps[i]
        if abs(r0 - r1) + abs(c0 - c1) != 1:
            return f"step {i} jumps from {[r0, c0]} to {[r1, c1]}"
    if len(set(steps)) != len(steps):
        return "path visits a cell twice"
    missing = len(grid.cells()) - len(steps)
    if missing:
        return f"path misses {missing} open cell(s)"
    return None


# Box-drawing piece for a cell joined to the given neighbours (up, down, left, right).
_JOINS = ("UD", "LR", "DR", "DL", "UR", "UL", "U", "D", "L", "R", "")
_PIECES = {frozenset(joins): piece for joins, piece in zip(_JOINS, "│─┌┐└┘╵╷╴╶·", strict=True)}


def render(grid: Grid, solution: Any = None) -> str:
    """Return the grid as text; with a solution, the path drawn in box-drawing lines."""
    links: dict[tuple[int, int], set[str]] = {}
    if solution:
        path = [tuple(cell) for cell in solution]
        for a, b in zip(path, path[1:], strict=False):
            dr, dc = b[0] - a[0], b[1] - a[1]
            way = {(-1, 0): ("U", "D"), (1, 0): ("D", "U"), (0, -1): ("L", "R"), (0, 1): ("R", "L")}.get(
                (dr, dc)
            )
            if way:
                links.setdefault(a, set()).add(way[0])
                links.setdefault(b, set()).add(way[1])
        end = path[-1]
    out = []
    for r, row in enumerate(grid.rows):
        line = []
        for c, ch in enumerate(row):
            if ch == BLOCKED:
                line.append("█")
            elif (r, c) == grid.start:
                line.append("S")
            elif solution and (r, c) == end:
                line.append("E")
            elif solution:
                line.append(_PIECES.get(frozenset(links.get((r, c), ())), "?"))
            else:
                line.append("·")
        out.append(" ".join(line) if not solution else _join_row(line, r, links))
    return "\n".join(out)


def _join_row(cells: list[str], r: int, links: dict[tuple[int, int], set[str]]) -> str:
    """Join a row's cells with '─' where the path crosses between them, so lines read as lines."""
    parts = [cells[0]]
    for c in range(1, len(cells)):
        parts.append("─" if "R" in links.get((r, c - 1), ()) else " ")
        parts.append(cells[c])
    return "".join(parts)


def svg(grid: Grid, solution: Any = None, cell: int = 24) -> str:
    """Return an SVG picture of the grid and, if given, the path as a polyline."""
    w, h = grid.width * cell, grid.height * cell
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}">',
        f'<rect width="{w}" height="{h}" fill="#f7f7f7"/>',
    ]
    for r, row in enumerate(grid.rows):
        for c, ch in enumerate(row):
            fill = "#333" if ch == BLOCKED else ("#ffd54f" if ch == START else "#fff")
            parts.append(
                f'<rect x="{c * cell}" y="{r * cell}" width="{cell}" height="{cell}" '
                f'fill="{fill}" stroke="#bbb"/>'
            )
    if solution:
        pts = " ".join(f"{c * cell + cell / 2},{r * cell + cell / 2}" for r, c in solution)
        parts.append(
            f'<polyline points="{escape(pts)}" fill="none" stroke="#1e88e5" stroke-width="{cell / 4}" '
            'stroke-linecap="round" stroke-linejoin="round"/>'
        )
        # Mark both ends so the direction of the stroke reads at a glance.
        for (r, c), colour in ((solution[0], "#2e7d32"), (solution[-1], "#c62828")):
            x, y = c * cell + cell / 2, r * cell + cell / 2
            parts.append(f'<circle cx="{x}" cy="{y}" r="{cell / 4}" fill="{colour}"/>')
    parts.append("</svg>")
    return "\n".join(parts)


KIND = PuzzleKind(
    name="onestroke",
    parse=parse,
    canonical=canonical,
    solvers={
        "plain": solver(functools.partial(_depth_first, None)),
        "warnsdorff": solver(functools.partial(_depth_first, warnsdorff_order)),
        "prune": prune,
        "cpsat": cpsat,
        "portfolio": portfolio,
    },
    default="portfolio",
    verify=verify,
    render=render,
    svg=svg,
    size=lambda grid: len(grid.cells()),
    formats={".stroke": read_stroke},
    generate=generate,
    size_help="WxH or N: the grid, e.g. 8x6 (about 80-100% of its cells open)",
    description="Hamiltonian path over every open cell of a grid from a start cell",
    examples=(
        {"grid": ["S..", ".#.", "..."]},
        {"grid": ["S.#", "..."]},
        {"map": ["111111", "101101", "111111", "101101", "111111", "000000"], "start": 14},
    ),
    split=split,
)
