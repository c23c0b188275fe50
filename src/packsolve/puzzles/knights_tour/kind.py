"""Knight's tours: from a start square, visit every square of a rows x cols board once by knight moves.

Heuristics, weakest first: ``plain`` (the Java write-up's fixed-order
backtracking, moves in the C++ write-up's order), ``warnsdorff`` (the C++
write-up's rule with backtracking), ``pohl`` / ``roth`` / ``squirrel_cull``
(the literature's tie-breaks and move orderings, still backtracking),
``warnsdorff_closing`` (Warnsdorff with dead-end cuts and ties steered towards
the start so closed tours close), ``blocks`` (linear-time divide and conquer
for big boards) and ``auto`` (picks by board size; the default). Every one
first applies the existence theorems, so impossible levels are ``no_solution``
at once.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from typing import Any

from packsolve.api import (
    Budget,
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
from packsolve.puzzles.hamilton.graph import (
    Ordering,
    depth_first,
    natural_order,
    path_prefixes,
    warnsdorff_order,
)
from packsolve.puzzles.knights_tour.blocks import MIN_SIDE, stitched_tour
from packsolve.puzzles.knights_tour.draw import render, svg
from packsolve.puzzles.knights_tour.rules import (
    Board,
    board_problem,
    pohl_order,
    roth_order,
    squirrel_cull_order,
    why_no_tour,
)
from packsolve.puzzles.knights_tour.search import (
    PathProblem,
    Restarts,
    four_wide_rule,
    knight_adjacency,
    knight_path_restarts,
    roth_key,
    toward_key,
)

NAME = "knights_tour"
MAX_SQUARES = 4_000_000


def _int_field(data: Mapping[str, Any], key: str, low: int = 1) -> int:
    value = data[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise LevelError(f"{NAME} field {key!r} must be an integer, not {value!r}")
    if value < low:
        raise LevelError(f"{NAME} field {key!r} must be at least {low}, not {value}")
    return value


def parse(data: Mapping[str, Any]) -> Board:
    """Return the Board of a level object; raise LevelError saying which field is wrong."""
    if not isinstance(data, Mapping):
        raise LevelError(f"a {NAME} level must be a JSON object, not {type(data).__name__}")
    if "size" in data:
        if "rows" in data or "cols" in data:
            raise LevelError(f"{NAME} level: give either 'size' or 'rows' and 'cols', not both")
        rows = cols = _int_field(data, "size")
    elif "rows" in data and "cols" in data:
        rows, cols = _int_field(data, "rows"), _int_field(data, "cols")
    else:
        raise LevelError(f"{NAME} level needs 'size' (N for an N x N board) or 'rows' and 'cols'")
    if rows * cols > MAX_SQUARES:
        raise LevelError(f"{NAME} board {rows}x{cols} has more than the {MAX_SQUARES} squares supported")
    start = field_of(data, "start", NAME)
    if (
        not isinstance(start, (list, tuple))
        or len(start) != 2
        or not all(isinstance(x, int) and not isinstance(x, bool) for x in start)
    ):
        raise LevelError(f"{NAME} field 'start' must be [row, col] (0-based integers), not {start!r}")
    r, c = start
    if not (0 <= r < rows and 0 <= c < cols):
        raise LevelError(
            f"{NAME} start {[r, c]} is off the {rows}x{cols} board (rows and columns count from 0)"
        )
    closed = data.get("closed", False)
    if not isinstance(closed, bool):
        raise LevelError(f"{NAME} field 'closed' must be true or false, not {closed!r}")
    return Board(rows, cols, (r, c), closed)


def canonical(board: Board) -> dict[str, Any]:
    return {"rows": board.rows, "cols": board.cols, "start": list(board.start), "closed": board.closed}


def read_knights(text: str) -> Iterator[tuple[int, dict[str, Any] | LevelError]]:
    """Read a .knights file: a level a line, ``ROWSxCOLS ROW COL [closed]`` or ``N ROW COL``; '#' comments."""
    for number, line in enumerate(text.splitlines(), 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        try:
            yield number, _knights_line(words)
        except LevelError as exc:
            yield number, LevelError(exc.message, number)


def _knights_line(words: list[str]) -> dict[str, Any]:
    usage = "expected 'ROWSxCOLS ROW COL [closed|open]' or 'N ROW COL [closed|open]'"
    if len(words) not in (3, 4):
        raise LevelError(f"{usage}, got {len(words)} words")
    size, r, c, *mode = words
    try:
        dims = [int(x) for x in size.lower().split("x")]
        start = [int(r), int(c)]
    except ValueError:
        raise LevelError(f"{usage}: sizes and squares are integers") from None
    if len(dims) not in (1, 2):
        raise LevelError(f"{usage}: bad board size {size!r}")
    if mode and mode[0].lower() not in ("closed", "open"):
        raise LevelError(f"{usage}: the last word must be 'closed' or 'open', not {mode[0]!r}")
    level: dict[str, Any] = {"rows": dims[0], "cols": dims[-1], "start": start}
    if mode and mode[0].lower() == "closed":
        level["closed"] = True
    parse(level)
    return level


def _cells(board: Board, path: list[int]) -> list[list[int]]:
    cols = board.cols
    return [[v // cols, v % cols] for v in path]


def _impossible(board: Board) -> Outcome | None:
    reason = why_no_tour(board.rows, board.cols, board.start, board.closed)
    return no_solution(reason) if reason else None


def _exhausted(board: Board) -> Outcome:
    kind = "closed tour" if board.closed else "tour"
    return no_solution(
        f"exhaustive search found no {kind} of {board.rows}x{board.cols} from {list(board.start)}"
    )


def _graph_search(make_order: Callable[[Board], Ordering], board: Board, budget: Budget) -> Outcome:
    """Run graph.depth_first with the board's ordering (the write-ups' style). Solvers hold it as a
    functools.partial with a module-level make_order, so that a job pickles (the kept solver child)."""
    out = _impossible(board)
    if out is not None:
        return out
    path = depth_first(board_problem(board), budget, make_order(board), board.prefix)
    if path is None:
        return _exhausted(board)
    # A part answers from its own start, the last square of its prefix.
    return solved(_cells(board, path[max(0, len(board.prefix) - 1) :]))


def _natural(board: Board) -> Ordering:
    return natural_order


def _warnsdorff(board: Board) -> Ordering:
    return warnsdorff_order


def _pohl(board: Board) -> Ordering:
    return pohl_order


def _roth(board: Board) -> Ordering:
    return roth_order(board.cols, board.rows)


# The heuristics split: the backtracking searches, which are complete and continue a prefix; the
# others restart, stitch or rotate whole tours.
SPLIT_HEURISTICS = frozenset({"plain", "warnsdorff", "pohl", "roth", "squirrel_cull"})


def split(board: Board, heuristic: str, n: int) -> Split | None:
    """Return at least n parts: knight's paths from the start of one length (first found).

    A part is the board with the path as its prefix; its answer runs from the path's last square,
    after the path's other squares. None for a heuristic not split, a level the theorems rule
    out, or a board whose paths all end before n are found.
    """
    if heuristic not in SPLIT_HEURISTICS or board.prefix or _impossible(board) is not None:
        return None
    found = path_prefixes(board_problem(board), n)
    if found is None:
        return None
    paths, expanded = found
    parts = tuple(
        Part(replace(board, prefix=tuple(path)), tuple(_cells(board, path[:-1])), len(path) - 1)
        for path in paths
    )
    return Split(Combine.FIRST_FOUND, parts, expanded)


def _whole_only(board: Board, heuristic: str) -> Outcome | None:
    if board.prefix:
        return Outcome(Status.ERROR, message=f"heuristic {heuristic} does not search a part of a split level")
    return None


def closing_search(board: Board, budget: Budget) -> Outcome:
    """Warnsdorff with dead-end cuts and restarts; closed tours are found from a corner, then rotated.

    Every closed tour passes through the corner (0, 0), whose only two moves
    must be its first and last steps: a narrow target the tie-break steers to.
    Open tours on boards that have closed tours are closed tours cut open at
    the start; the others search from the start with Roth's tie-break.
    """
    out = _whole_only(board, "warnsdorff_closing") or _impossible(board)
    if out is not None:
        return out
    h, w = board.rows, board.cols
    adj = knight_adjacency(h, w)
    s = board.index(*board.start)
    path = None
    # A closed tour read from the start is an open tour too, and closed tours
    # are the easier search (their target is fixed), so try one first.
    if board.closed or (board.squares > 1 and why_no_tour(h, w, board.start, True) is None):
        corner = PathProblem(h, w, adj, toward_key(h, w, adj[0]), frozenset(adj[0]))
        path = knight_path_restarts(corner, 0, budget, Restarts(tries=24))
        if path is not None:
            k = path.index(s)
            path = path[k:] + path[:k]
    if path is None and not board.closed:
        rule = four_wide_rule(h, w) if min(h, w) == 4 else None
        path = knight_path_restarts(PathProblem(h, w, adj, roth_key(h, w), step_rule=rule), s, budget)
    return _exhausted(board) if path is None else solved(_cells(board, path))


def blocks(board: Board, budget: Budget) -> Outcome:
    """Stitch block tours (linear time); boards too thin for blocks go to closing_search."""
    out = _whole_only(board, "blocks") or _impossible(board)
    if out is not None:
        return out
    tour = stitched_tour(board.rows, board.cols, board.start, board.closed, budget)
    if tour is None:
        return closing_search(board, budget)
    return solved(tour)


def auto(board: Board, budget: Budget) -> Outcome:
    """Pick by size: blocks when both sides reach MIN_SIDE squares, closing_search below."""
    if min(board.rows, board.cols) >= MIN_SIDE:
        return blocks(board, budget)
    return closing_search(board, budget)


def verify(board: Board, solution: Any) -> str | None:
    """Return why solution is not a knight's tour of board, or None if it is."""
    R, C = board.rows, board.cols
    if not isinstance(solution, list):
        return "solution must be a list of [row, col]"
    if len(solution) != R * C:
        return f"tour has {len(solution)} squares, the board {R * C}"
    seen = bytearray(R * C)
    prev = None
    for i, sq in enumerate(solution):
        if not isinstance(sq, (list, tuple)) or len(sq) != 2:
            return f"step {i} is not a [row, col] pair: {sq!r}"
        r, c = sq
        if type(r) is not int or type(c) is not int:
            return f"step {i} is not a pair of integers: {sq!r}"
        if not (0 <= r < R and 0 <= c < C):
            return f"step {i} {[r, c]} is off the {R}x{C} board"
        if seen[r * C + c]:
            return f"step {i} {[r, c]} visits a square a second time"
        seen[r * C + c] = 1
        if prev is not None and sorted((abs(r - prev[0]), abs(c - prev[1]))) != [1, 2]:
            return f"step {i} from {list(prev)} to {[r, c]} is not a knight move"
        prev = (r, c)
    if tuple(solution[0]) != board.start:
        return f"tour starts at {list(solution[0])}, not at the start {list(board.start)}"
    if board.closed:
        (r0, c0), (r1, c1) = solution[0], solution[-1]
        if R * C == 1 or sorted((abs(r0 - r1), abs(c0 - c1))) != [1, 2]:
            return f"tour is not closed: {[r1, c1]} is not a knight move from {[r0, c0]}"
    return None


def generate(size_spec: str, count: int, seed: int) -> list[dict[str, Any]]:
    """Return count levels of the size 'N', 'RxC', optionally ':closed'; starts random but tourable colour."""
    spec, _, mode = str(size_spec).partition(":")
    try:
        dims = [int(x) for x in spec.lower().split("x")]
    except ValueError:
        raise LevelError(f"size must be N or ROWSxCOLS, optionally ':closed', not {size_spec!r}") from None
    if len(dims) not in (1, 2) or min(dims) < 1 or mode not in ("", "open", "closed"):
        raise LevelError(f"size must be N or ROWSxCOLS, optionally ':closed', not {size_spec!r}")
    rows, cols = dims[0], dims[-1]
    rng = random.Random(seed)
    levels = []
    for _ in range(count):
        r, c = rng.randrange(rows), rng.randrange(cols)
        if (rows * cols) % 2 and (r + c) % 2:  # a minority-colour start has no tour
            c = c - 1 if c > 0 else c + 1
        level: dict[str, Any] = {"kind": NAME, "rows": rows, "cols": cols, "start": [r, c]}
        if mode == "closed":
            level["closed"] = True
        levels.append(level)
    return levels


KIND = PuzzleKind(
    name=NAME,
    parse=parse,
    canonical=canonical,
    solvers={
        "plain": solver(functools.partial(_graph_search, _natural)),
        "warnsdorff": solver(functools.partial(_graph_search, _warnsdorff)),
        "pohl": solver(functools.partial(_graph_search, _pohl)),
        "roth": solver(functools.partial(_graph_search, _roth)),
        "squirrel_cull": solver(functools.partial(_graph_search, squirrel_cull_order)),
        "warnsdorff_closing": solver(closing_search),
        "blocks": solver(blocks),
        "auto": solver(auto),
    },
    default="auto",
    verify=verify,
    render=render,
    svg=svg,
    size=lambda board: board.squares,
    formats={".knights": read_knights},
    description="knight's tour (open or closed) of a rows x cols board from a start square",
    generate=generate,
    size_help="N or RxC, :closed for closed tours, e.g. 8 or 6x8:closed",
    examples=(
        {"size": 5, "start": [0, 0]},
        {"rows": 3, "cols": 4, "start": [0, 0]},
        {"size": 4, "start": [0, 0]},
        {"size": 5, "start": [0, 0], "closed": True},
    ),
    split=split,
)
