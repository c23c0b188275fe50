"""Splitting a sliding-tile level for its IDA* heuristics: the frontier at a depth with enough parts."""

from __future__ import annotations

from packsolve.api import Combine, Part, Split
from packsolve.puzzles.sliding.board import Board, neighbours, unsolvable_reason

# The heuristics searched by the native IDA*, which starts a part below its prefix and prunes with
# the shared bound; the others (breadth-first, A*, weighted) are not split.
SPLIT_HEURISTICS = frozenset({"idastar", "linear-conflict", "pdb", "pdb-663", "pdb-6666"})


def split(board: Board, heuristic: str, n: int) -> Split | None:
    """Return at least n parts: the boards exactly d moves from the start, for the least such d.

    Breadth first, each board once: a board reached again (by another path of the same length, or
    already nearer the start) is not a part, so no two parts are one board and every optimal
    answer passes through exactly one part's board. Each part keeps one shortest path to it as
    its prefix and forbids the move back. When the goal is nearer than such a d, the one part is
    the goal (its answer is empty): that prefix is optimal. Best of all. None for a heuristic
    not split or a board without a solution.
    """
    if heuristic not in SPLIT_HEURISTICS or unsolvable_reason(board) is not None:
        return None
    near = neighbours(board.n)
    start = board.tiles
    # board -> (blank cell, the blank's cell before the last move, the moves from the start)
    layer: dict[tuple[int, ...], tuple[int, int, tuple[int, ...]]] = {start: (board.blank, -1, ())}
    seen = {start}
    expanded = 0
    goal = board.goal
    while True:
        if goal in layer:
            _, back, moves = layer[goal]
            part = Part(Board(board.n, goal, depth=len(moves), back=back), moves, len(moves))
            return Split(Combine.BEST_OF_ALL, (part,), expanded)
        if len(layer) >= n:
            break
        nxt: dict[tuple[int, ...], tuple[int, int, tuple[int, ...]]] = {}
        for tiles, (blank, back, moves) in layer.items():
            expanded += 1
            # The C search's order of moves (up, left, right, down), so parts come in its order.
            for p in near[blank]:
                if p == back:
                    continue
                cells = list(tiles)
                cells[blank], cells[p] = cells[p], 0
                key = tuple(cells)
                if key in seen:
                    continue
                seen.add(key)
                nxt[key] = (p, blank, (*moves, tiles[p]))
        layer = nxt
    parts = tuple(
        Part(Board(board.n, tiles, depth=len(moves), back=back), moves, len(moves))
        for tiles, (_, back, moves) in layer.items()
    )
    return Split(Combine.BEST_OF_ALL, parts, expanded)
