"""Knight's-tour facts: the board's moves, when a tour exists, and the move-ordering rules.

Existence is decided here before any search so that impossible levels come back
as ``no_solution`` at once, with the theorem that rules them out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from packsolve.puzzles.hamilton.graph import HamiltonProblem, dead_end_allowed, onward_exits
from packsolve.puzzles.knights_tour.search import MOVES

# Squirrel & Cull number the eight moves clockwise from "two up, one right"
# (x = row, y = column, 1-based, the tour starting in the corner (1, 1)).
SQUIRREL_MOVES: dict[str, tuple[int, int]] = {
    "1": (-2, 1),
    "2": (-1, 2),
    "3": (1, 2),
    "4": (2, 1),
    "5": (2, -1),
    "6": (1, -2),
    "7": (-1, -2),
    "8": (-2, -1),
}


@dataclass(frozen=True)
class Board:
    """A knight's-tour level: a rows x cols board, a start square, open or closed."""

    rows: int
    cols: int
    start: tuple[int, int]
    closed: bool = False
    # A part of a split level: the squares (indices) of the tour's first moves, from the start; the
    # search continues from the last of them (empty: the whole level).
    prefix: tuple[int, ...] = ()

    @property
    def squares(self) -> int:
        return self.rows * self.cols

    def index(self, r: int, c: int) -> int:
        return r * self.cols + c

    def cell(self, v: int) -> tuple[int, int]:
        return divmod(v, self.cols)


def why_no_tour(rows: int, cols: int, start: tuple[int, int], closed: bool) -> str | None:
    """Return the theorem that rules out a tour of this level, or None when one exists.

    None is exact for closed tours (Schwenk) and for open tours on every board
    but a few small 3 x n ones (3x4, 3x7, 3x8), where some starts fail for no
    simpler reason and the search decides in milliseconds.
    """
    m, n = sorted((rows, cols))
    if closed:
        if m * n == 1:
            return "a closed tour needs a knight move from the last square back to the first; 1x1 has none"
        if m % 2 and n % 2:
            return (
                f"no closed tour on {rows}x{cols}: both sides are odd, so the squares are odd in number "
                "and a closed tour, alternating colours, needs an even number (Schwenk 1991)"
            )
        if m in (1, 2, 4):
            return f"no closed tour on {rows}x{cols}: a board with a side of {m} has none (Schwenk 1991)"
        if m == 3 and n in (4, 6, 8):
            return f"no closed tour on {rows}x{cols}: 3x4, 3x6 and 3x8 have none (Schwenk 1991)"
        return None
    if m * n == 1:
        return None
    if m <= 2:
        return f"no knight's tour on {rows}x{cols}: with a side of {m} the knight cannot reach every square"
    if m == 3 and n in (3, 5, 6):
        return f"no knight's tour on {rows}x{cols}: 3x3, 3x5 and 3x6 have none (Conrad et al. 1994)"
    if m == 4 and n == 4:
        return "no knight's tour on 4x4: boards below 5x5 have none except 1x1 (and 3x4, 3x7, 3x8+)"
    r, c = start
    if m == 4 and (r if rows == 4 else c) in (1, 2):
        return (
            f"no knight's tour from {[r, c]} on {rows}x{cols}: on a board 4 wide every move from an edge "
            "line lands on a middle line, so a tour from a middle line would alternate middle, edge, "
            "middle..., putting every middle square on one colour, yet half of them are of each colour"
        )
    if (m * n) % 2 and (r + c) % 2:
        return (
            f"no knight's tour from {[r, c]} on {rows}x{cols}: the board has an odd number of squares, "
            "so a tour, alternating colours, starts and ends on the majority colour (the corners' colour), "
            "and this square has the minority colour"
        )
    return None


def board_problem(board: Board, moves: tuple[tuple[int, int], ...] = MOVES) -> HamiltonProblem:
    """Return the board as a Hamiltonian-path problem, neighbours listed in the given move order."""
    R, C = board.rows, board.cols
    adj = []
    for r in range(R):
        for c in range(C):
            adj.append(
                tuple((r + dr) * C + c + dc for dr, dc in moves if 0 <= r + dr < R and 0 <= c + dc < C)
            )
    return HamiltonProblem(tuple(adj), board.index(*board.start), closed=board.closed)


def pohl_order(p: HamiltonProblem, visited: list[bool], v: int, cands: list[int]) -> list[int]:
    """Warnsdorff with Pohl's (1967) second level: ties go to the smallest sum of the successors' exits."""
    scored = []
    for u in cands:
        exits = onward_exits(p, visited, u)
        if exits == 0 and not dead_end_allowed(visited, cands):
            continue
        visited[u] = True  # the successors' exits as seen after stepping on u
        second = sum(onward_exits(p, visited, w) for w in p.adj[u] if not visited[w])
        visited[u] = False
        scored.append((exits, second, u))
    scored.sort(key=lambda t: (t[0], t[1]))
    return [u for *_, u in scored]


def roth_order(cols: int, rows: int):  # noqa: ANN201 - returns an Ordering
    """Return Warnsdorff with Roth's tie-break: among ties, the square farthest from the centre first."""
    cy, cx = (rows - 1) / 2, (cols - 1) / 2

    def order(p: HamiltonProblem, visited: list[bool], v: int, cands: list[int]) -> list[int]:
        scored = []
        for u in cands:
            exits = onward_exits(p, visited, u)
            if exits == 0 and not dead_end_allowed(visited, cands):
                continue
            r, c = divmod(u, cols)
            scored.append((exits, -math.hypot(r - cy, c - cx), u))
        scored.sort(key=lambda t: (t[0], t[1]))
        return [u for *_, u in scored]

    return order


# Squirrel & Cull (1996), as tabulated in their reference program: for each
# board size m (mod 8, or mod 16 for 5 and 13), a chain of move orderings; the
# knight switches to the next ordering after it stands on the switching square
# (row, column, 1-based, the tour starting at the corner (1, 1)). A square given
# as a formula in m; None ends the chain.
_SC_TABLE: dict[int, list[tuple[str, tuple[str, str] | None]]] = {
    0: [
        ("34261578", ("m-1", "m-2")),
        ("87642135", ("2", "2")),
        ("51867342", ("m-8", "1")),
        ("51342678", ("7", "m-3")),
        ("21435678", None),
    ],
    1: [
        ("34261578", ("m-1", "m-2")),
        ("87642135", ("2", "2")),
        ("51324678", ("m-6", "(m+9)//2")),
        ("32481765", None),
    ],
    2: [
        ("34261578", ("6", "1")),
        ("87642135", ("3", "1")),
        ("54132678", ("m-15", "4")),
        ("52431678", ("10", "m-2")),
        ("85647123", ("5", "(m-6)//2")),
        ("15746823", None),
    ],
    3: [
        ("34625718", ("m-1", "m-2")),
        ("42681357", ("m-6", "m")),
        ("86512347", ("2", "5")),
        ("51867342", ("m-10", "3")),
        ("61825437", ("(m+1)//2", "m-2")),
        ("71642538", None),
    ],
    4: [
        ("34261578", ("m-1", "m-2")),
        ("87642135", ("2", "2")),
        ("51867342", ("m-8", "1")),
        ("51342678", ("10", "m-5")),
        ("86753421", ("13", "(m+2)//2")),
        ("78563421", None),
    ],
    5: [
        ("34261578", ("m-1", "m-2")),
        ("87642135", ("2", "2")),
        ("51324678", ("m-2", "(m-5)//2")),
        ("15234678", None),
    ],
    13: [
        ("34261578", ("m-1", "m-2")),
        ("87642135", ("2", "2")),
        ("51324678", ("m-2", "(m-13)//2")),
        ("15234678", None),
    ],
    6: [
        ("34261578", ("6", "1")),
        ("87642135", ("3", "1")),
        ("54132678", ("m-10", "1")),
        ("52431678", ("10", "m-2")),
        ("85647123", ("3", "(m+8)//2")),
        ("12453678", None),
    ],
    7: [
        ("34625718", ("m-1", "m-2")),
        ("42681357", ("m-6", "m")),
        ("86512347", ("2", "5")),
        ("51867342", ("m-6", "3")),
        ("61825437", ("(m+1)//2", "m-2")),
        ("61357284", None),
    ],
}


def _formula(expr: str, m: int) -> int:
    # The table's formulas use only m, integers, + - and //; evaluate them without eval().
    expr = expr.replace("m", str(m))
    if expr.startswith("("):
        inner, _, div = expr[1:].partition(")//")
        return _formula(inner, m) // int(div)
    for op in ("+", "-"):
        if op in expr[1:]:
            a, b = expr.split(op, 1)
            return int(a) + int(b) if op == "+" else int(a) - int(b)
    return int(expr)


def squirrel_cull_rules(m: int) -> list[tuple[dict[tuple[int, int], int], tuple[int, int] | None]]:
    """Return the chain of (move rank by delta, 0-based switching square) for an m x m board."""
    key = m % 16 if m % 8 == 5 else m % 8
    chain = []
    for ordering, square in _SC_TABLE[key]:
        rank = {SQUIRREL_MOVES[d]: i for i, d in enumerate(ordering)}
        sq = None
        if square is not None:
            r, c = (_formula(x, m) - 1 for x in square)
            sq = (r, c) if 0 <= r < m and 0 <= c < m else None
        chain.append((rank, sq))
    return chain


def squirrel_cull_order(board: Board):  # noqa: ANN201 - returns an Ordering
    """Return Squirrel & Cull's switched move orderings as an Ordering, mirrored to the start's corner.

    The rule in force is the k-th of the chain once the first k switching squares
    have all been visited (the knight switches when it stands on one), so the
    ordering is a function of the visited set and backtracking stays exact for
    tours that meet the switching squares in the table's order. Off-square boards
    fall back to Roth's tie-break.
    """
    m = board.rows
    if board.rows != board.cols or m < 5:
        return roth_order(board.cols, board.rows)
    fr = -1 if board.start[0] > (m - 1) / 2 else 1
    fc = -1 if board.start[1] > (m - 1) / 2 else 1
    chain: list[tuple[dict[tuple[int, int], int], int | None]] = []
    for rank, sq in squirrel_cull_rules(m):
        # Board index of the switching square, and ranks keyed by board deltas.
        at = None
        if sq is not None:
            at = (sq[0] if fr == 1 else m - 1 - sq[0]) * m + (sq[1] if fc == 1 else m - 1 - sq[1])
        chain.append(({(dr * fr, dc * fc): k for (dr, dc), k in rank.items()}, at))

    def order(p: HamiltonProblem, visited: list[bool], v: int, cands: list[int]) -> list[int]:
        k = 0
        while k < len(chain) - 1 and (at := chain[k][1]) is not None and visited[at]:
            k += 1
        rank = chain[k][0]
        vr, vc = divmod(v, m)
        scored = []
        for u in cands:
            exits = onward_exits(p, visited, u)
            if exits == 0 and not dead_end_allowed(visited, cands):
                continue
            ur, uc = divmod(u, m)
            scored.append((exits, rank[(ur - vr, uc - vc)], u))
        scored.sort()
        return [u for *_, u in scored]

    return order
