"""One-stroke level generator: random Hamiltonian paths by backbite moves, cut at a random length.

A level made this way is solvable by construction (the kept prefix of the path
is a one-stroke path from its first cell). ``move_start`` turns such a level
into a candidate infeasible one for benchmarks: the start moves to another cell
of the colour that keeps the colour counts possible, so only search can tell.
"""

from __future__ import annotations

import random
import re
from typing import Any

Cell = tuple[int, int]


def parse_size(spec: str) -> tuple[int, int]:
    """Return (width, height) from "WxH" or "N"; raise ValueError saying the accepted forms."""
    m = re.fullmatch(r"\s*(\d+)\s*(?:[xX]\s*(\d+))?\s*", str(spec))
    if not m:
        raise ValueError(f"size {spec!r}: use WxH (e.g. 12x10) or N for an N x N grid")
    w = int(m.group(1))
    h = int(m.group(2)) if m.group(2) else w
    if not (1 <= w <= 500 and 1 <= h <= 500) or w * h < 2:
        raise ValueError(f"size {spec!r}: width and height must be 1..500 with at least 2 cells")
    return w, h


def serpentine(w: int, h: int) -> list[Cell]:
    """Return the boustrophedon Hamiltonian path of a w x h grid, row by row."""
    return [(r, c if r % 2 == 0 else w - 1 - c) for r in range(h) for c in range(w)]


def backbite(path: list[Cell], w: int, h: int, rng: random.Random, moves: int) -> list[Cell]:
    """Return path after `moves` backbite moves (Mansfield 2006), each at a random end.

    A move joins an end to a random grid neighbour x and cuts the path at x's
    old link, reversing the piece between: the result is again a Hamiltonian path.
    """
    path = list(path)
    for _ in range(moves):
        if rng.random() < 0.5:
            path.reverse()  # work on the last cell; reversing picks the other end
        r, c = path[-1]
        dr, dc = rng.choice(((-1, 0), (1, 0), (0, -1), (0, 1)))
        x = (r + dr, c + dc)
        if not (0 <= x[0] < h and 0 <= x[1] < w) or len(path) < 2 or x == path[-2]:
            continue
        i = path.index(x)
        path[i + 1 :] = path[i + 1 :][::-1]
    return path


def level_of(cells: list[Cell], w: int, h: int, start: Cell) -> dict[str, Any]:
    """Return the grid JSON of a level whose open cells are `cells`."""
    rows = [["#"] * w for _ in range(h)]
    for r, c in cells:
        rows[r][c] = "."
    rows[start[0]][start[1]] = "S"
    return {"kind": "onestroke", "grid": ["".join(row) for row in rows]}


def generate(
    size_spec: str, count: int, seed: int, keep: tuple[float, float] = (0.8, 1.0)
) -> list[dict[str, Any]]:
    """Return `count` solvable levels of the given size, the same ones for the same seed.

    Each keeps a random fraction (in `keep`) of a random Hamiltonian path's cells.
    """
    w, h = parse_size(size_spec)
    if count < 0:
        raise ValueError("count must not be negative")
    rng = random.Random(seed)
    n = w * h
    levels = []
    for _ in range(count):
        path = backbite(serpentine(w, h), w, h, rng, moves=20 * n)
        k = max(2, min(n, round(n * rng.uniform(*keep))))
        levels.append(level_of(path[:k], w, h, path[0]))
    return levels


def move_start(level: dict[str, Any], rng: random.Random) -> dict[str, Any] | None:
    """Return the level with its start moved to another cell that keeps colour parity, or None.

    The colour counts of a grid (a chessboard colouring) say which colour a
    start must have; picking such a cell makes a level that parity alone
    cannot refute. Most such levels have no path, but search must prove it.
    """
    rows = [list(row) for row in level["grid"]]
    cells = [(r, c) for r, row in enumerate(rows) for c, ch in enumerate(row) if ch != "#"]
    (sr, sc) = next((r, c) for r, c in cells if rows[r][c] == "S")
    black = sum((r + c) % 2 == 0 for r, c in cells)
    white = len(cells) - black
    ok_colours = {0, 1} if black == white else ({0} if black > white else {1})
    if abs(black - white) > 1:
        return None
    choices = [(r, c) for r, c in cells if (r + c) % 2 in ok_colours and (r, c) != (sr, sc)]
    if not choices:
        return None
    r, c = rng.choice(choices)
    rows[sr][sc] = "."
    rows[r][c] = "S"
    return {"kind": "onestroke", "grid": ["".join(row) for row in rows]}
