"""Sliding-tile puzzles (8-, 15-, 24-puzzle): bring the tiles to 0, 1, 2, ... with the blank top-left."""

from __future__ import annotations

import functools
import random
from collections.abc import Mapping
from fractions import Fraction
from html import escape
from typing import Any

from packsolve.api import (
    Budget,
    LevelError,
    Outcome,
    Preparation,
    PuzzleKind,
    Status,
    field_of,
    no_solution,
    solved,
    solver,
)
from packsolve.puzzles.sliding import ida
from packsolve.puzzles.sliding.board import (
    MAX_N,
    MIN_N,
    Board,
    apply_moves,
    parse_tiles,
    random_board,
    read_slide,
    unsolvable_reason,
    with_stated_optimal,
)
from packsolve.puzzles.sliding.search import a_star, breadth_first
from packsolve.puzzles.sliding.split import split


def parse(data: Mapping[str, Any]) -> Board:
    return with_stated_optimal(parse_tiles(field_of(data, "tiles", "sliding")), data.get("optimal"))


def canonical(board: Board) -> dict[str, Any]:
    if board.optimal is None:
        return {"tiles": board.rows()}
    return {"tiles": board.rows(), "optimal": board.optimal}


def _against_stated(board: Board, moves: list[int], message: str = "") -> Outcome:
    """Return an optimal answer as solved, or as wrong if the level states another optimal length.

    A proved-optimal length that differs from the stated one means the level file or the search
    is wrong; either way the answer must not count as solved.
    """
    if board.optimal is not None and len(moves) != board.optimal:
        return Outcome(
            Status.WRONG,
            message=f"an optimal search found {len(moves)} moves, the level states {board.optimal}",
        )
    return solved(moves, message)


def _optimal(search: Any) -> Any:
    """Wrap a search returning moves (or None) into a solver that first rules out odd parity: a
    functools.partial of a module-level function, so that a job pickles and goes to the kept solver
    child, which has the pattern tables mapped already."""
    return solver(functools.partial(_optimal_search, search))


def _optimal_search(search: Any, board: Board, budget: Budget) -> Outcome:
    reason = unsolvable_reason(board)
    if reason is not None:
        return no_solution(reason)
    moves = search(board, budget)
    if moves is None and budget.bound is not None:
        best = budget.bound.best()
        if best is not None:
            return no_solution(f"this part has no answer shorter than {best} moves (the best of all parts)")
        if budget.bound.window is not None:
            return no_solution(f"this part has no answer within {budget.bound.window[1]} moves")
    if moves is None:
        return no_solution("the search exhausted every reachable board without meeting the goal")
    return _against_stated(board, moves)


def _ida(mode: int) -> Any:
    return functools.partial(ida.ida_star, mode=mode)


def _weighted(board: Board, budget: Budget) -> Outcome:
    reason = unsolvable_reason(board)
    if reason is not None:
        return no_solution(reason)
    # Pattern databases where they are cheap to build; linear conflict on 2x2 and 3x3.
    mode = ida.PDB if board.n >= 4 else ida.LINEAR_CONFLICT
    found = ida.weighted(board, budget, mode)
    message = f"weighted IDA*, w = {found.weight}: length {len(found.moves)}"
    if found.weight == Fraction(1):
        return _against_stated(board, found.moves, f"{message}, optimal")
    return solved(found.moves, f"{message}, at most {found.weight} x optimal")


def verify(board: Board, solution: Any) -> str | None:
    """Return why solution does not bring board to the goal, or None if it does."""
    if not isinstance(solution, list):
        return "solution must be a list of the tile numbers moved"
    end, error = apply_moves(board, solution)
    if error:
        return error
    if not end.is_goal():
        wrong = sum(1 for p, t in enumerate(end.tiles) if t and t != p)
        return f"after {len(solution)} moves {wrong} tile(s) are still out of place"
    if board.optimal is not None and len(solution) < board.optimal:
        return f"{len(solution)} moves, fewer than the optimal length the level states ({board.optimal})"
    return None


def _grid_text(board: Board) -> str:
    width = len(str(board.n * board.n - 1))
    return "\n".join(
        " ".join("·".rjust(width) if t == 0 else str(t).rjust(width) for t in row) for row in board.rows()
    )


def render(board: Board, solution: Any = None) -> str:
    """Return the board as text; with a solution, the moves and the board they end on."""
    out = [_grid_text(board)]
    if solution is not None:
        out.append(f"{len(solution)} moves: " + (" ".join(str(t) for t in solution) or "(already solved)"))
        end, error = apply_moves(board, solution)
        out.append(error if error else _grid_text(end))
    return "\n".join(out)


def svg(board: Board, solution: Any = None, cell: int = 40) -> str:
    """Return an SVG of the start board and, below it, the numbered moves."""
    n = board.n
    side = n * cell
    moves = list(solution or [])
    per_line = max(1, side // 28)
    lines = [moves[i : i + per_line] for i in range(0, len(moves), per_line)]
    height = side + (18 * (len(lines) + 1) + 8 if solution is not None else 0)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{side}" height="{height}" '
        f'viewBox="0 0 {side} {height}" font-family="sans-serif">',
        f'<rect width="{side}" height="{side}" fill="#555"/>',
    ]
    for p, t in enumerate(board.tiles):
        r, c = divmod(p, n)
        if t == 0:
            continue
        home = t == p
        parts.append(
            f'<rect x="{c * cell + 2}" y="{r * cell + 2}" width="{cell - 4}" height="{cell - 4}" rx="4" '
            f'fill="{"#c8e6c9" if home else "#ffe0b2"}" stroke="#333"/>'
        )
        parts.append(
            f'<text x="{c * cell + cell / 2}" y="{r * cell + cell / 2 + 6}" text-anchor="middle" '
            f'font-size="{cell // 2 - 2}">{t}</text>'
        )
    if solution is not None:
        y = side + 18
        parts.append(f'<text x="4" y="{y}" font-size="13">{len(moves)} moves:</text>')
        for i, chunk in enumerate(lines):
            text = escape(" ".join(str(t) for t in chunk))
            parts.append(f'<text x="4" y="{y + 18 * (i + 1)}" font-size="13">{text}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def generate(size_spec: str, count: int, seed: int) -> list[dict[str, Any]]:
    """Return count random solvable boards of size 'N' or 'NxN'; raise LevelError on a bad size."""
    spec = size_spec.lower().strip()
    parts = spec.split("x")
    if len(parts) == 2 and parts[0] != parts[1]:
        raise LevelError(f"sliding boards are square: {size_spec!r} is not NxN")
    try:
        n = int(parts[0])
    except ValueError:
        raise LevelError(f"size {size_spec!r} is not N or NxN") from None
    if not MIN_N <= n <= MAX_N:
        raise LevelError(f"board size must be {MIN_N}..{MAX_N}, not {n}")
    rng = random.Random(seed)
    return [{"kind": "sliding", "tiles": random_board(n, rng).rows()} for _ in range(count)]


# The heuristics that read pattern tables: (strong, ranked) as pdb.load takes them, and what building
# them costs (docs/benchmarks.md, "Sliding tiles").
_TABLES = {"pdb": (False, False), "pdb-663": (True, False), "pdb-6666": (False, True)}
_COST = {
    ("pdb", 4): "about a second",
    ("pdb-663", 4): "about 10 s",
    ("pdb-6666", 5): "minutes, about 1.3 GB of memory while building, 255 MB on disk",
}


def preparation(heuristic: str, board: Board) -> Preparation | None:
    """Return the pattern tables a heuristic reads for this board's size, or None if it reads none."""
    mode = "pdb" if heuristic == "weighted" and board.n >= 4 else heuristic
    if mode not in _TABLES:
        return None
    from packsolve.puzzles.sliding import pdb

    strong, ranked = _TABLES[mode]
    if board.n not in pdb.PARTITIONS:
        return None
    # pdb-663 and pdb-6666 fall back to pdb's tables on sizes they have no split of: build those.
    strong = strong and board.n in pdb.STRONG_PARTITIONS
    ranked = ranked and board.n in pdb.RANKED_PARTITIONS
    name = "pdb-663" if strong else "pdb-6666" if ranked else "pdb"
    n = board.n
    return Preparation(
        key=f"sliding {name} {n}x{n}",
        what=f"the {name} pattern tables for {n}x{n}",
        cost=_COST.get((name, n), "under a second"),
        where=str(pdb.cache_dir()),
        ready=lambda: pdb.cached(n, strong, ranked),
        run=lambda: _load(n, strong, ranked),
        size=str(n),
    )


def _load(n: int, strong: bool, ranked: bool) -> None:
    """Build the tables missing from the cache (whatever this process loaded before), then load them."""
    from packsolve.puzzles.sliding import pdb

    for group in pdb.groups_of(n, strong, ranked):
        pdb.ensure_table(n, group, ranked)
    pdb.load(n, strong, ranked)


KIND = PuzzleKind(
    name="sliding",
    parse=parse,
    canonical=canonical,
    solvers={
        "plain": _optimal(breadth_first),
        "astar": _optimal(a_star),
        "idastar": _optimal(_ida(ida.MANHATTAN)),
        "linear-conflict": _optimal(_ida(ida.LINEAR_CONFLICT)),
        "pdb": _optimal(_ida(ida.PDB)),
        "pdb-663": _optimal(_ida(ida.PDB_STRONG)),
        "pdb-6666": _optimal(_ida(ida.PDB_6666)),
        "weighted": solver(_weighted),
    },
    default="pdb",
    verify=verify,
    render=render,
    svg=svg,
    size=lambda board: board.n * board.n,
    formats={".slide": read_slide},
    description="N x N sliding tiles (N = 2..5), fewest moves to 0, 1, 2, ... with the blank top-left",
    generate=generate,
    size_help="N or NxN, N from 2 to 5, e.g. 4 (the 15-puzzle)",
    examples=(
        {"tiles": [[3, 2], [1, 0]]},
        {"tiles": [[3, 0, 2], [4, 1, 7], [6, 8, 5]]},
        {"tiles": [[2, 1, 0], [3, 4, 5], [6, 7, 8]]},
    ),
    preparation=preparation,
    split=split,
)
