"""Tic-tac-toe levels (m x n, k in a row): the value for the side to move and every winning move."""

from __future__ import annotations

import random
from collections.abc import Mapping
from html import escape
from typing import Any

from packsolve.api import LevelError, PuzzleKind, field_of
from packsolve.puzzles.tictactoe.search import SOLVERS, Board

MAX_CELLS = 64
# verify re-solves the position with its own plain search; past this many positions it checks
# the answer's form only (a 4x4 board from empty has millions of positions).
VERIFY_MAX_POSITIONS = 40_000
BLANK = "."


def parse(data: Mapping[str, Any]) -> Board:
    rows = field_of(data, "board", "tictactoe")
    to_move = field_of(data, "to_move", "tictactoe")
    k = data.get("k", 3)
    if not isinstance(rows, list) or not rows:
        raise LevelError("'board' must be a non-empty list of rows of '.', 'X' and 'O'")
    text = []
    for i, row in enumerate(rows):
        if isinstance(row, list) and all(isinstance(ch, str) and len(ch) == 1 for ch in row):
            row = "".join(row)
        if not isinstance(row, str):
            raise LevelError(f"board row {i + 1} must be a string of '.', 'X' and 'O'")
        row = row.upper()
        bad = next((j for j, ch in enumerate(row) if ch not in ".XO"), None)
        if bad is not None:
            raise LevelError(f"board row {i + 1}, column {bad + 1}: {row[bad]!r} is not '.', 'X' or 'O'")
        text.append(row)
    width = len(text[0])
    if not width or any(len(r) != width for r in text):
        raise LevelError("the board must be a rectangle: every row as long as the first, and not empty")
    if len(text) * width > MAX_CELLS:
        raise LevelError(f"board has {len(text) * width} cells, more than the {MAX_CELLS} supported")
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= max(len(text), width):
        raise LevelError(
            f"'k' (in a row to win) must be an integer from 1 to {max(len(text), width)}, not {k!r}"
        )
    if to_move not in ("X", "O", "x", "o"):
        raise LevelError(f"'to_move' must be 'X' or 'O', not {to_move!r}")
    to_move = to_move.upper()
    x = sum(1 << (r * width + c) for r, row in enumerate(text) for c, ch in enumerate(row) if ch == "X")
    o = sum(1 << (r * width + c) for r, row in enumerate(text) for c, ch in enumerate(row) if ch == "O")
    board = Board(len(text), width, k, x, o, to_move)
    _check_legal(board)
    return board


def _check_legal(board: Board) -> None:
    """Raise LevelError unless the position can arise in play and the game is not over."""
    nx, no = board.x.bit_count(), board.o.bit_count()
    mover, other = (nx, no) if board.to_move == "X" else (no, nx)
    # Either side may have started: the side to move has as many stones as the other, or one fewer.
    if mover not in (other, other - 1):
        raise LevelError(
            f"impossible position: {nx} X and {no} O with {board.to_move} to move "
            f"({board.to_move} must have as many stones as the other side, or one fewer)"
        )
    x_won, o_won = board.won(board.x), board.won(board.o)
    if x_won and o_won:
        raise LevelError(f"impossible position: both X and O have {board.k} in a row")
    if x_won or o_won:
        raise LevelError(f"the game is over: {'X' if x_won else 'O'} already has {board.k} in a row")


def rows_of(board: Board) -> list[str]:
    return [
        "".join(
            "X"
            if board.x >> (r * board.cols + c) & 1
            else "O"
            if board.o >> (r * board.cols + c) & 1
            else BLANK
            for c in range(board.cols)
        )
        for r in range(board.rows)
    ]


def canonical(board: Board) -> dict[str, Any]:
    return {"board": rows_of(board), "to_move": board.to_move, "k": board.k}


def _wins_at(board: Board, cells: str, i: int, s: str) -> bool:
    """Return whether the stone s on cell i of cells (the board's rows, joined) completes k in a row."""
    m, n, k = board.rows, board.cols, board.k
    r, c = divmod(i, n)
    for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
        run = 1
        for sign in (1, -1):
            rr, cc = r + sign * dr, c + sign * dc
            while 0 <= rr < m and 0 <= cc < n and cells[rr * n + cc] == s:
                run += 1
                rr, cc = rr + sign * dr, cc + sign * dc
        if run >= k:
            return True
    return False


def _values(board: Board, limit: int) -> dict[int, int] | None:
    """Return {cell: value for the mover} for every empty cell by plain memoised negamax, or None past limit.

    Written apart from the solvers on purpose: different state (strings), different win test.
    """
    memo: dict[tuple[str, str], int] = {}

    def move_value(cells: str, i: int, s: str) -> int:
        after = cells[:i] + s + cells[i + 1 :]
        if _wins_at(board, after, i, s):
            return 1
        return -value(after, "O" if s == "X" else "X")

    def value(cells: str, s: str) -> int:
        if (cells, s) in memo:
            return memo[(cells, s)]
        if len(memo) >= limit:
            raise OverflowError
        best = -1 if BLANK in cells else 0
        for i, ch in enumerate(cells):
            if ch == BLANK:
                best = max(best, move_value(cells, i, s))
                if best == 1:
                    break  # nothing beats a win
        memo[(cells, s)] = best
        return best

    cells = "".join(rows_of(board))
    try:
        return {i: move_value(cells, i, board.to_move) for i, ch in enumerate(cells) if ch == BLANK}
    except OverflowError:
        return None


def verify(board: Board, solution: Any, limit: int = VERIFY_MAX_POSITIONS) -> str | None:
    """Return why solution is not the position's value and all its winning moves, or None."""
    if not isinstance(solution, Mapping) or set(solution) != {"value", "winning_moves"}:
        return 'solution must be {"value": "win"/"draw"/"loss", "winning_moves": [[r, c], ...]}'
    value, moves = solution["value"], solution["winning_moves"]
    if value not in ("win", "draw", "loss"):
        return f"value must be 'win', 'draw' or 'loss', not {value!r}"
    if not isinstance(moves, list) or any(
        not isinstance(mv, list) or len(mv) != 2 or not all(type(v) is int for v in mv) for mv in moves
    ):
        return "winning_moves must be a list of [row, col]"
    cells = []
    for r, c in moves:
        if (
            not (0 <= r < board.rows and 0 <= c < board.cols)
            or (board.x | board.o) >> (r * board.cols + c) & 1
        ):
            return f"winning move {[r, c]} is not an empty cell of the board"
        cells.append(r * board.cols + c)
    if len(set(cells)) != len(cells):
        return "winning_moves lists a cell twice"
    if (value == "win") != bool(moves):
        return "the value is 'win' exactly when there is a winning move"
    truth = _values(board, limit)
    if truth is None:
        return None  # too big to re-solve here; the form has been checked
    best = max(truth.values(), default=0)
    expected = {1: "win", 0: "draw", -1: "loss"}[best]
    if value != expected:
        return f"the position is a {expected} for {board.to_move}, not a {value}"
    winning = sorted(i for i, v in truth.items() if v == 1)
    if sorted(cells) != winning:
        listed = [[i // board.cols, i % board.cols] for i in winning]
        return f"the winning moves are {listed}, not {moves}"
    return None


def render(board: Board, solution: Any = None) -> str:
    """Return the board as text; with a solution, winning moves marked '!' and the value."""
    marks = {tuple(mv) for mv in solution["winning_moves"]} if solution else set()
    out = [
        " ".join("!" if (r, c) in marks else ch for c, ch in enumerate(row))
        for r, row in enumerate(rows_of(board))
    ]
    head = f"{board.to_move} to move, {board.k} in a row"
    if solution:
        head += f": {solution['value']}"
    return "\n".join([head, *out])


def svg(board: Board, solution: Any = None, cell: int = 48) -> str:
    """Return an SVG of the board, X and O drawn, winning moves shaded green."""
    w, h = board.cols * cell, board.rows * cell
    marks = {tuple(mv) for mv in solution["winning_moves"]} if solution else set()
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h + 24}" viewBox="0 0 {w} {h + 24}">',
        f'<text x="4" y="16" font-family="sans-serif" font-size="14">'
        f"{escape(render(board, solution).splitlines()[0])}</text>",
    ]
    pad = cell / 5
    for r, row in enumerate(rows_of(board)):
        for c, ch in enumerate(row):
            x, y = c * cell, r * cell + 24
            fill = "#a5d6a7" if (r, c) in marks else "#fff"
            parts.append(
                f'<rect x="{x}" y="{y}" width="{cell}" height="{cell}" fill="{fill}" stroke="#333"/>'
            )
            if ch == "X":
                a, b = x + pad, x + cell - pad
                top, bottom = y + pad, y + cell - pad
                parts.append(
                    f'<path d="M{a},{top} L{b},{bottom} M{b},{top} L{a},{bottom}" '
                    'stroke="#1e88e5" stroke-width="4"/>'
                )
            elif ch == "O":
                parts.append(
                    f'<circle cx="{x + cell / 2}" cy="{y + cell / 2}" r="{cell / 2 - pad}" fill="none" '
                    'stroke="#e53935" stroke-width="4"/>'
                )
    parts.append("</svg>")
    return "\n".join(parts)


def generate(size: str, count: int, seed: int) -> list[dict[str, Any]]:
    """Return count random unfinished positions: size 'MxN' or 'MxNkK' (default k = min(3, M, N))."""
    text = str(size).lower()
    dims, _, k_text = text.partition("k")
    try:
        m_text, _, n_text = dims.partition("x")
        m = int(m_text)
        n = int(n_text or m_text)
        k = int(k_text) if k_text else min(3, m, n)
    except ValueError:
        raise ValueError(f"tictactoe size must be MxN or MxNkK, not {size!r}") from None
    if m < 1 or n < 1 or m * n > MAX_CELLS or not 1 <= k <= max(m, n):
        raise ValueError(f"tictactoe size {size!r} is out of range")
    rng = random.Random(seed)
    levels: list[dict[str, Any]] = []
    while len(levels) < count:
        first = rng.choice("XO")
        cells = [BLANK] * (m * n)
        plies = rng.randint(0, max(0, m * n - 2))
        spots = rng.sample(range(m * n), plies)
        for ply, i in enumerate(spots):
            cells[i] = first if ply % 2 == 0 else ("O" if first == "X" else "X")
        to_move = first if plies % 2 == 0 else ("O" if first == "X" else "X")
        board = ["".join(cells[r * n : (r + 1) * n]) for r in range(m)]
        data = {"kind": "tictactoe", "board": board, "to_move": to_move, "k": k}
        try:
            parse(data)
        except LevelError:
            continue  # a random playout that already has a winner is not a level
        levels.append(data)
    return levels


KIND = PuzzleKind(
    name="tictactoe",
    parse=parse,
    canonical=canonical,
    solvers=SOLVERS,
    default="alphabeta",
    verify=verify,
    render=render,
    svg=svg,
    size=lambda board: board.cells - (board.x | board.o).bit_count(),
    length=lambda solution: len(solution["winning_moves"]) if isinstance(solution, Mapping) else None,
    description="m x n, k in a row: the game value for the side to move and every winning move",
    generate=generate,
    size_help="MxN or MxNkK (K in a row wins, default 3), e.g. 4x4k3",
    examples=(
        {"board": [".XO", ".O.", "X.."], "to_move": "O"},
        {"board": ["XXO", "OO.", "X.."], "to_move": "X"},
    ),
)
