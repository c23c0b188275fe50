"""The sliding-tile board value: parsing, solvability by permutation parity, applying moves."""

from __future__ import annotations

import math
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from packsolve.api import LevelError

MIN_N, MAX_N = 2, 5


@dataclass(frozen=True)
class Board:
    """An N x N board, tiles row by row, 0 the blank; the goal is 0, 1, 2, ... (blank top-left)."""

    n: int
    tiles: tuple[int, ...]
    # The optimal length the level file states (Korf's lists do), checked against optimal answers;
    # not part of the board's identity in searches.
    optimal: int | None = field(default=None, compare=False)
    # A part of a split level (packsolve.api.Part): the moves already made before this board
    # (answers of the whole level are depth + this board's answer long) and the cell the blank
    # left with the last of them, which its first move must not undo (-1: none).
    depth: int = field(default=0, compare=False)
    back: int = field(default=-1, compare=False)

    @property
    def blank(self) -> int:
        return self.tiles.index(0)

    @property
    def goal(self) -> tuple[int, ...]:
        return tuple(range(self.n * self.n))

    def is_goal(self) -> bool:
        return self.tiles == self.goal

    def rows(self) -> list[list[int]]:
        n = self.n
        return [list(self.tiles[r * n : (r + 1) * n]) for r in range(n)]


def neighbours(n: int) -> list[tuple[int, ...]]:
    """Return, per position, the positions next to it (up, left, right, down)."""
    out = []
    for p in range(n * n):
        r, c = divmod(p, n)
        near = []
        if r > 0:
            near.append(p - n)
        if c > 0:
            near.append(p - 1)
        if c < n - 1:
            near.append(p + 1)
        if r < n - 1:
            near.append(p + n)
        out.append(tuple(near))
    return out


def board_from_tiles(flat: Sequence[Any], where: str = "") -> Board:
    """Return the Board of a flat tile list; raise LevelError saying which tile is wrong."""
    prefix = f"{where}: " if where else ""
    count = len(flat)
    n = math.isqrt(count)
    if n * n != count or not MIN_N <= n <= MAX_N:
        raise LevelError(f"{prefix}{count} tiles do not make an N x N board with N = {MIN_N}..{MAX_N}")
    tiles = []
    for i, t in enumerate(flat):
        if isinstance(t, bool) or not isinstance(t, int):
            raise LevelError(f"{prefix}tile {i + 1} is {t!r}, not an integer")
        tiles.append(t)
    seen: dict[int, int] = {}
    for i, t in enumerate(tiles):
        if not 0 <= t < count:
            raise LevelError(f"{prefix}tile {i + 1} is {t}; tiles must be 0..{count - 1} (0 the blank)")
        if t in seen:
            raise LevelError(f"{prefix}tile {t} appears twice (places {seen[t] + 1} and {i + 1})")
        seen[t] = i
    return Board(n, tuple(tiles))


# Far above any N <= 5 board's optimum (80 for the 15-puzzle, at most 208 known for the 24-puzzle).
MAX_STATED_OPTIMAL = 10_000


def with_stated_optimal(board: Board, value: Any) -> Board:
    """Return board carrying the optimal length its level states ('optimal'), if it states one."""
    if value is None:
        return board
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_STATED_OPTIMAL:
        raise LevelError(
            f"'optimal' must be a whole number of moves from 0 to {MAX_STATED_OPTIMAL}, not {value!r}"
        )
    return replace(board, optimal=value)


def parse_tiles(value: Any) -> Board:
    """Return the Board of DESIGN's 'tiles' (N rows of N ints; a flat list is accepted too)."""
    if not isinstance(value, list) or not value:
        raise LevelError("'tiles' must be a list of N rows of N integers (0 the blank)")
    if all(isinstance(row, list) for row in value):
        n = len(value)
        for i, row in enumerate(value):
            if len(row) != n:
                raise LevelError(f"'tiles' row {i + 1} has {len(row)} entries; a {n} x {n} board needs {n}")
        return board_from_tiles([t for row in value for t in row])
    if any(isinstance(row, list) for row in value):
        raise LevelError("'tiles' mixes rows (lists) and single tiles")
    return board_from_tiles(value)


def unsolvable_reason(board: Board) -> str | None:
    """Return why board cannot reach the goal (permutation parity), or None if it can.

    Every move swaps the blank with a neighbour: one transposition, and the
    blank's taxicab distance to its home changes by one.  So the permutation's
    parity always equals the parity of that distance; boards where they differ
    can never be solved.
    """
    n, tiles = board.n, board.tiles
    seen = [False] * len(tiles)
    transpositions = 0
    for start in range(len(tiles)):
        length = 0
        p = start
        while not seen[p]:
            seen[p] = True
            p = tiles[p]
            length += 1
        transpositions += max(0, length - 1)
    r, c = divmod(board.blank, n)
    if transpositions % 2 == (r + c) % 2:
        return None
    parity = "odd" if transpositions % 2 else "even"
    return (
        f"unsolvable: the tiles form an {parity} permutation of the goal but the blank is "
        f"{r + c} moves from its home, so no sequence of moves reaches the goal (permutation parity)"
    )


def apply_moves(board: Board, moves: Sequence[Any]) -> tuple[Board, str | None]:
    """Return the board after the moves, and why a move is illegal (None if all are legal)."""
    tiles = list(board.tiles)
    near = neighbours(board.n)
    blank = tiles.index(0)
    for i, t in enumerate(moves):
        if isinstance(t, bool) or not isinstance(t, int) or not 0 < t < len(tiles):
            return Board(board.n, tuple(tiles)), f"move {i + 1} is {t!r}, not a tile 1..{len(tiles) - 1}"
        p = tiles.index(t)
        if p not in near[blank]:
            return Board(board.n, tuple(tiles)), f"move {i + 1}: tile {t} is not next to the blank"
        tiles[blank], tiles[p] = t, 0
        blank = p
    return Board(board.n, tuple(tiles)), None


def read_slide(text: str) -> Iterator[tuple[int, dict[str, Any] | LevelError]]:
    """Read a .slide file: per line the tiles row by row, optionally 'id' or 'id optimal' first.

    The token count decides: N*N tiles, N*N + 1 (an id first) or N*N + 2 (an
    id and the expected optimal length, as in Korf's list).  '#' starts a comment.
    """
    squares = {k * k: k for k in range(MIN_N, MAX_N + 1)}
    for number, line in enumerate(text.splitlines(), 1):
        body = line.split("#", 1)[0].split()
        if not body:
            continue
        count = len(body)
        extra = next((e for e in (0, 1, 2) if count - e in squares), None)
        if extra is None:
            yield (
                number,
                LevelError(
                    f"{count} tokens: expected N*N tiles (4, 9, 16 or 25), optionally after an id "
                    "and an expected optimal length",
                    number,
                ),
            )
            continue
        flat: list[int] = []
        bad = None
        for j, tok in enumerate(body[extra:], extra + 1):
            try:
                flat.append(int(tok))
            except ValueError:
                bad = LevelError(f"token {j} ({tok!r}) is not a tile number", number)
                break
        if bad is not None:
            yield number, bad
            continue
        if extra == 2 and not (body[1].isdigit() and len(body[1]) <= len(str(MAX_STATED_OPTIMAL))):
            yield number, LevelError(f"expected optimal length {body[1]!r} is not a number", number)
            continue
        try:
            board = board_from_tiles(flat)
        except LevelError as exc:
            yield number, LevelError(exc.message, number)
            continue
        level: dict[str, Any] = {"tiles": board.rows()}
        if extra >= 1:
            level["id"] = body[0]  # the level's name in the pack (FILE:ID), not part of its identity
        if extra == 2:
            level["optimal"] = int(body[1])  # a check on optimal answers, part of the level
        yield number, level


def random_board(n: int, rng: random.Random) -> Board:
    """Return a uniformly random solvable N x N board (one of the (N*N)!/2 solvable ones)."""
    tiles = list(range(n * n))
    rng.shuffle(tiles)
    board = Board(n, tuple(tiles))
    if unsolvable_reason(board) is not None:
        # Swapping two tiles flips the permutation parity and keeps the blank in place.
        a, b = [i for i, t in enumerate(tiles) if t != 0][:2]
        tiles[a], tiles[b] = tiles[b], tiles[a]
        board = Board(n, tuple(tiles))
    return board
