"""Game-tree searches for tic-tac-toe levels: minimax, memoised minimax, alpha-beta with symmetry.

Positions are two bitmasks (X stones, O stones) over cells r * cols + c. Values are for the
side to move: 1 win, 0 draw, -1 loss. One node is one position whose moves are generated.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from operator import add
from typing import Any

from packsolve.api import Budget, Outcome, solved, solver

WIN, DRAW, LOSS = 1, 0, -1
NAMES = {WIN: "win", DRAW: "draw", LOSS: "loss"}


@dataclass(frozen=True)
class Board:
    """A legal, unfinished (or full and drawn) position: stones as bitmasks, the side to move, k."""

    rows: int
    cols: int
    k: int
    x: int
    o: int
    to_move: str  # "X" or "O"

    @property
    def cells(self) -> int:
        return self.rows * self.cols

    @cached_property
    def lines(self) -> tuple[int, ...]:
        """Every run of k cells in a row, column or diagonal, as a bitmask."""
        out = []
        for r in range(self.rows):
            for c in range(self.cols):
                for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
                    end_r, end_c = r + dr * (self.k - 1), c + dc * (self.k - 1)
                    if 0 <= end_r < self.rows and 0 <= end_c < self.cols:
                        out.append(sum(1 << ((r + dr * j) * self.cols + c + dc * j) for j in range(self.k)))
        return tuple(out)

    @cached_property
    def lines_through(self) -> tuple[tuple[int, ...], ...]:
        return tuple(tuple(line for line in self.lines if line >> i & 1) for i in range(self.cells))

    def won(self, stones: int) -> bool:
        return any(stones & line == line for line in self.lines)

    @cached_property
    def symmetries(self) -> tuple[tuple[int, ...], ...]:
        """Cell permutations of the board's symmetry group: 8 for a square, 4 for a rectangle."""
        m, n = self.rows, self.cols
        maps: list[Callable[[int, int], tuple[int, int]]] = [
            lambda r, c: (r, c),
            lambda r, c: (m - 1 - r, c),
            lambda r, c: (r, n - 1 - c),
            lambda r, c: (m - 1 - r, n - 1 - c),
        ]
        if m == n:
            maps += [
                lambda r, c: (c, r),
                lambda r, c: (n - 1 - c, r),
                lambda r, c: (c, m - 1 - r),
                lambda r, c: (n - 1 - c, m - 1 - r),
            ]
        return tuple(tuple(a * n + b for a, b in (f(i // n, i % n) for i in range(m * n))) for f in maps)


def _bits(mask: int) -> list[int]:
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def _root(board: Board, child_value: Callable[[int, int, int], int]) -> Outcome:
    """Value every move by child_value(cell, my stones, their stones) -> the opponent's value."""
    mine, theirs = (board.x, board.o) if board.to_move == "X" else (board.o, board.x)
    empty = ((1 << board.cells) - 1) & ~(mine | theirs)
    values = {}
    for i in _bits(empty):
        placed = mine | 1 << i
        values[i] = (
            WIN
            if any(placed & ln == ln for ln in board.lines_through[i])
            else -child_value(i, placed, theirs)
        )
    best = max(values.values(), default=DRAW)
    wins = sorted(i for i, v in values.items() if v == WIN)
    return solved({"value": NAMES[best], "winning_moves": [[i // board.cols, i % board.cols] for i in wins]})


def minimax(board: Board, budget: Budget) -> Outcome:
    """Plain minimax: every line of play to its end, nothing remembered."""
    full, through = (1 << board.cells) - 1, board.lines_through

    def value(mine: int, theirs: int) -> int:
        empty = full & ~(mine | theirs)
        if not empty:
            return DRAW
        budget.charge()
        best = LOSS
        for i in _bits(empty):
            placed = mine | 1 << i
            v = WIN if any(placed & ln == ln for ln in through[i]) else -value(theirs, placed)
            best = max(best, v)
        return best

    return _root(board, lambda i, mine, theirs: value(theirs, mine))


def memo_minimax(board: Board, budget: Budget) -> Outcome:
    """The write-up's memoised minimax: positions keyed by their base-3 code, a win ends the scan."""
    full, through = (1 << board.cells) - 1, board.lines_through
    pow3 = [3**i for i in range(board.cells)]
    memo: dict[int, int] = {}

    def value(mine: int, theirs: int, code: int, me: int) -> int:
        if code in memo:
            return memo[code]
        empty = full & ~(mine | theirs)
        if not empty:
            return DRAW
        budget.charge()
        best = LOSS
        for i in _bits(empty):
            placed = mine | 1 << i
            if any(placed & ln == ln for ln in through[i]):
                best = WIN
                break
            best = max(best, -value(theirs, placed, code + me * pow3[i], 3 - me))
            if best == WIN:
                break
        memo[code] = best
        return best

    start = sum(pow3[i] for i in _bits(board.x)) + sum(2 * pow3[i] for i in _bits(board.o))
    me = 1 if board.to_move == "X" else 2
    # The code tells who is to move only through the stone counts, which a position fixes once
    # its first mover is known; the level fixes the first mover, so one code is one position.
    return _root(board, lambda i, mine, theirs: value(theirs, mine, start + me * pow3[i], 3 - me))


EXACT, LOWER, UPPER = 0, 1, 2

# What a search returns: the value of the position for the side to move, within the window it was given.
Search = Callable[[int, int, tuple[int, ...], int, int, int], int]


def _scan_lines(mine: int, theirs: int, empty: int, lines: tuple[int, ...], k: int) -> tuple[int | None, int]:
    """Return (the position's value when its lines settle it, else None; the cells worth playing).

    The cells worth playing are the opponent's winning cells when it has one (a forced block), else
    the cells on some line still free of one colour. A cell on no such line is dead: a stone there is a
    pass, and since an extra stone never hurts its owner in an m,n,k-game, some useful cell is at least
    as good.
    """
    n_empty = empty.bit_count()
    my_win = their_win = useful = 0
    my_live = their_live = False
    my_moves, their_moves = (n_empty + 1) // 2, n_empty // 2
    for ln in lines:
        a, b = (mine & ln).bit_count(), (theirs & ln).bit_count()
        if not b:
            if a == k - 1:
                my_win |= ln & empty
            my_live = my_live or k - a <= my_moves
            useful |= ln
        if not a:
            if b == k - 1:
                their_win |= ln & empty
            their_live = their_live or k - b <= their_moves
            useful |= ln
    if my_win:
        return WIN, 0
    if their_win & (their_win - 1):
        return LOSS, 0  # two threats: block one, the other wins
    if not my_live and not their_live:
        return DRAW, 0  # no line can be completed by anyone any more
    return None, their_win or useful & empty


def _symmetric_codes(board: Board) -> tuple[tuple[int, ...], list[list[tuple[int, ...]]]]:
    """Return the position's base-3 code under each symmetry, and how each stone changes them.

    inc[v][i] holds how placing stone value v (1 or 2) on cell i changes each symmetric code.
    """
    pow3 = [3**i for i in range(board.cells)]
    syms = board.symmetries
    inc = [[tuple(v * pow3[perm[i]] for perm in syms) for i in range(board.cells)] for v in (0, 1, 2)]
    start = tuple(
        sum(pow3[perm[i]] for i in _bits(board.x)) + sum(2 * pow3[perm[i]] for i in _bits(board.o))
        for perm in syms
    )
    return start, inc


def _negamax(board: Board, budget: Budget, inc: list[list[tuple[int, ...]]]) -> Search:
    """Return the alpha-beta search of board's positions, with its own transposition table.

    The table is keyed by the least of a position's symmetric codes and the side to move.
    """
    lines, k, full = board.lines, board.k, (1 << board.cells) - 1
    # Centre-like cells (on more lines) first: they are the strong moves, so cut-offs come early.
    order = sorted(range(board.cells), key=lambda i: -len(board.lines_through[i]))
    table: dict[int, tuple[int, int]] = {}

    def search(mine: int, theirs: int, codes: tuple[int, ...], me: int, alpha: int, beta: int) -> int:
        empty = full & ~(mine | theirs)
        if not empty:
            return DRAW
        settled, worth = _scan_lines(mine, theirs, empty, lines, k)
        if settled is not None:
            return settled
        key = min(codes) * 2 + (me == 2)
        hit = table.get(key)
        if hit is not None:
            flag, v = hit
            if flag == EXACT or (flag == LOWER and v >= beta) or (flag == UPPER and v <= alpha):
                return v
        budget.charge()
        alpha0, best = alpha, LOSS
        other = 3 - me
        for i in [i for i in order if worth >> i & 1]:
            v = -search(theirs, mine | 1 << i, tuple(map(add, codes, inc[me][i])), other, -beta, -alpha)
            if v > best:
                best = v
                if v > alpha:
                    alpha = v
                    if alpha >= beta:
                        break
        flag = UPPER if best <= alpha0 else LOWER if best >= beta else EXACT
        table[key] = (flag, best)
        return best

    return search


def alpha_beta(board: Board, budget: Budget) -> Outcome:
    """Negamax alpha-beta with a transposition table over symmetric positions, forced moves and dead lines."""
    start, inc = _symmetric_codes(board)
    search = _negamax(board, budget, inc)
    me = 1 if board.to_move == "X" else 2
    mine, theirs = (board.x, board.o) if me == 1 else (board.o, board.x)
    empty = ((1 << board.cells) - 1) & ~(mine | theirs)
    wins, others = [], []
    for i in _bits(empty):
        placed = mine | 1 << i
        if any(placed & ln == ln for ln in board.lines_through[i]):
            wins.append(i)
            continue
        codes = tuple(map(add, start, inc[me][i]))
        # A null window (-1, 0) on the reply only asks "is it lost for the opponent?".
        if search(theirs, placed, codes, 3 - me, LOSS, DRAW) == LOSS:
            wins.append(i)
        else:
            others.append(i)
    best = WIN if wins else DRAW if not others else LOSS
    if best == LOSS:
        for i in others:
            codes = tuple(map(add, start, inc[me][i]))
            # Window (0, 1): a reply worth at most 0 to the opponent means this move draws.
            if search(theirs, mine | 1 << i, codes, 3 - me, DRAW, WIN) <= DRAW:
                best = DRAW
                break
    wins.sort()
    return solved({"value": NAMES[best], "winning_moves": [[i // board.cols, i % board.cols] for i in wins]})


SOLVERS: dict[str, Any] = {
    "plain": solver(minimax),
    "memo": solver(memo_minimax),
    "alphabeta": solver(alpha_beta),
}
