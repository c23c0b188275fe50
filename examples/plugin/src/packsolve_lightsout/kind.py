"""The Lights Out kind: parse, two solvers, verify, pictures, a generator and examples."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from packsolve.api import Budget, LevelError, Outcome, PuzzleKind, no_solution, solved, solver

NAME = "lightsout"
MAX_SIDE = 20


@dataclass(frozen=True)
class Board:
    """A rows x cols grid of lights; ``on`` holds the (row, col) of the lights that are on."""

    rows: int
    cols: int
    on: frozenset[tuple[int, int]]


def parse(data: Mapping[str, Any]) -> Board:
    """Return the Board of a level object; raise LevelError saying what to fix."""
    if not isinstance(data, Mapping):
        raise LevelError(f"a {NAME} level must be a JSON object, not {type(data).__name__}")
    lights = data.get("lights")
    if lights is None:
        raise LevelError(f'{NAME} level has no "lights" field (rows of 0 and 1, e.g. ["010", "111"])')
    if not isinstance(lights, list) or not lights:
        raise LevelError(f'{NAME} "lights" must be a non-empty list of rows, e.g. ["010", "111"]')
    rows = []
    for r, row in enumerate(lights):
        if isinstance(row, str):
            cells = list(row)
        elif isinstance(row, list):
            cells = [str(v) if type(v) is int and v in (0, 1) else "?" for v in row]
        else:
            raise LevelError(f"{NAME} row {r} must be a string of 0 and 1 or a list of 0 and 1, not {row!r}")
        if any(c not in "01" for c in cells):
            raise LevelError(f"{NAME} row {r} may hold only 0 (off) and 1 (on): {row!r}")
        rows.append(cells)
    width = len(rows[0])
    if width == 0 or any(len(row) != width for row in rows):
        raise LevelError(f"{NAME} rows must all have the same, non-zero length")
    if len(rows) > MAX_SIDE or width > MAX_SIDE:
        raise LevelError(f"{NAME} boards are at most {MAX_SIDE}x{MAX_SIDE}, not {len(rows)}x{width}")
    on = frozenset((r, c) for r, row in enumerate(rows) for c, v in enumerate(row) if v == "1")
    return Board(len(rows), width, on)


def canonical(board: Board) -> dict[str, Any]:
    rows = range(board.rows)
    return {"lights": ["".join("01"[(r, c) in board.on] for c in range(board.cols)) for r in rows]}


def _press(state: set[tuple[int, int]], board: Board, r: int, c: int) -> None:
    for rr, cc in ((r, c), (r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)):
        if 0 <= rr < board.rows and 0 <= cc < board.cols:
            state ^= {(rr, cc)}


def _after(board: Board, presses: list[tuple[int, int]]) -> set[tuple[int, int]]:
    state = set(board.on)
    for r, c in presses:
        _press(state, board, r, c)
    return state


@solver
def brute_force(board: Board, budget: Budget) -> Outcome:
    """Try every set of presses, fewest first (one node = one set tried): exponential, the baseline."""
    cells = [(r, c) for r in range(board.rows) for c in range(board.cols)]
    for k in range(len(cells) + 1):
        for presses in itertools.combinations(cells, k):
            budget.charge()
            if not _after(board, list(presses)):
                return solved([list(p) for p in presses])
    return no_solution(f"none of the 2^{len(cells)} sets of presses turns every light off")


@solver
def light_chasing(board: Board, budget: Budget) -> Outcome:
    """Choose the first row's presses, then press under every light still on, row by row.

    Each of the 2^cols first rows fixes everything below it (one node per first row); the
    fewest presses among those that clear the last row is the answer, so it is minimal too.
    """
    best: list[tuple[int, int]] | None = None
    for first in itertools.product((0, 1), repeat=board.cols):
        budget.charge()
        presses = [(0, c) for c in range(board.cols) if first[c]]
        state = _after(board, presses)
        for r in range(1, board.rows):
            for c in range(board.cols):
                if (r - 1, c) in state:
                    presses.append((r, c))
                    _press(state, board, r, c)
        if not state and (best is None or len(presses) < len(best)):
            best = presses
    if best is None:
        return no_solution(f"none of the 2^{board.cols} first rows clears the board")
    return solved([list(p) for p in sorted(best)])


def verify(board: Board, solution: Any) -> str | None:
    """Return why solution does not turn every light off, or None if it does."""
    if not isinstance(solution, list):
        return "a solution is a list of [row, col] presses"
    presses = []
    for i, press in enumerate(solution):
        if not isinstance(press, list) or len(press) != 2 or not all(type(x) is int for x in press):
            return f"press {i} is not a [row, col] pair of integers: {press!r}"
        r, c = press
        if not (0 <= r < board.rows and 0 <= c < board.cols):
            return f"press {i} {press} is off the {board.rows}x{board.cols} board"
        presses.append((r, c))
    if len(set(presses)) != len(presses):
        return "a light is pressed twice (twice is the same as not at all)"
    left = _after(board, presses)
    if left:
        return f"{len(left)} light(s) still on, e.g. {list(min(left))}"
    return None


def render(board: Board, solution: Any) -> str:
    """Return the board as text: '#' on, '.' off; a press shows as 'x' on an off light, 'X' on a lit one."""
    pressed = {tuple(p) for p in solution} if isinstance(solution, list) else set()
    lines = []
    for r in range(board.rows):
        line = ""
        for c in range(board.cols):
            lit = (r, c) in board.on
            line += ("X" if lit else "x") if (r, c) in pressed else ("#" if lit else ".")
        lines.append(line)
    return "\n".join(lines)


def svg(board: Board, solution: Any, cell: int = 24) -> str:
    """Return an SVG picture: lit squares yellow, presses as dark dots."""
    pressed = {tuple(p) for p in solution} if isinstance(solution, list) else set()
    w, h = board.cols * cell, board.rows * cell
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}">']
    for r in range(board.rows):
        for c in range(board.cols):
            fill = "#f5d33b" if (r, c) in board.on else "#333"
            x, y = c * cell, r * cell
            square = f'width="{cell}" height="{cell}" fill="{fill}" stroke="#999"'
            parts.append(f'<rect x="{x}" y="{y}" {square}/>')
            if (r, c) in pressed:
                half = cell / 2
                parts.append(f'<circle cx="{x + half}" cy="{y + half}" r="{cell / 5}" fill="#c00"/>')
    parts.append("</svg>")
    return "\n".join(parts)


def generate(size: str, count: int, seed: int) -> list[dict[str, Any]]:
    """Return count solvable levels of size 'N' or 'RxC': random presses on a dark board."""
    try:
        dims = [int(x) for x in str(size).lower().split("x")]
    except ValueError:
        raise LevelError(f"size must be N or ROWSxCOLS, not {size!r}") from None
    if len(dims) not in (1, 2) or not all(1 <= d <= MAX_SIDE for d in dims):
        raise LevelError(f"size must be N or ROWSxCOLS with sides 1..{MAX_SIDE}, not {size!r}")
    board = Board(dims[0], dims[-1], frozenset())
    rng = random.Random(seed)
    levels = []
    for _ in range(count):
        cells = [(r, c) for r in range(board.rows) for c in range(board.cols)]
        presses = rng.sample(cells, rng.randint(1, max(1, len(cells) // 2)))
        lit = frozenset(_after(board, presses))
        levels.append({"kind": NAME, **canonical(Board(board.rows, board.cols, lit))})
    return levels


def read_lights(text: str) -> Iterator[tuple[int, dict[str, Any] | LevelError]]:
    """Read a .lights file: boards of '0'/'1' rows, a blank line between boards, '#' comments."""
    rows: list[str] = []
    first = 0
    for number, line in enumerate([*text.splitlines(), ""], 1):
        line = line.split("#", 1)[0].strip()
        if line:
            first = first or number
            rows.append(line)
            continue
        if rows:
            try:
                yield first, canonical(parse({"lights": rows}))
            except LevelError as exc:
                yield first, LevelError(exc.message, first)
            rows, first = [], 0


KIND = PuzzleKind(
    name=NAME,
    parse=parse,
    canonical=canonical,
    solvers={"plain": brute_force, "chase": light_chasing},
    default="chase",
    verify=verify,
    render=render,
    svg=svg,
    size=lambda board: board.rows * board.cols,
    formats={".lights": read_lights},
    description="Lights Out: press lights (each toggles itself and its neighbours) until all are off",
    generate=generate,
    size_help=f"N or ROWSxCOLS: the board, sides 1 to {MAX_SIDE}, e.g. 5 or 4x6",
    examples=(
        {"lights": ["010", "111", "010"]},
        {"lights": ["11", "10"]},
        {"lights": ["1000", "0000", "0000", "0000"]},
    ),
)
