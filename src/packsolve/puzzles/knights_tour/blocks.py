"""Linear-time knight's tours of big boards: Warnsdorff–Roth paths on small blocks, stitched.

Divide and conquer in the manner of Parberry (1997): the board is cut into
blocks of 6 to 13 squares a side, the blocks are visited along a Hamiltonian
cycle of the block grid, and inside each block a backtracking Warnsdorff search
(``search``) finds a path from the square the previous block handed over
to a square that has a knight move into the next block. Blocks repeat, so the
paths are cached by (block shape, entry, exit region): a 1000x1000 board costs a
few dozen small searches and then copying. Nothing depends on luck: a block
that cannot be crossed from one entry makes the previous block pick another exit.

Colours are kept consistent by construction: every block has an even number
of squares, except on odd x odd boards the one block holding the start, whose
corner has the board's corner colour (all parts before it are even).
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Iterator
from dataclasses import dataclass

from packsolve.api import Budget
from packsolve.puzzles.knights_tour.search import (
    MOVES,
    PathProblem,
    Restarts,
    knight_adjacency,
    knight_path_restarts,
    roth_key,
    toward_key,
)

MIN_SIDE = 12  # two parts of at least 6
# A block that resists a few short tries is left for another exit region: no try runs to the end.
_BLOCK_RESTARTS = Restarts(tries=6, first_limit=3000, complete=False)


@dataclass(frozen=True)
class Block:
    """A rectangle of the board: top-left (r, c), height h, width w."""

    r: int
    c: int
    h: int
    w: int

    def holds(self, r: int, c: int) -> bool:
        return self.r <= r < self.r + self.h and self.c <= c < self.c + self.w


def _split_even(x: int, k: int) -> list[int]:
    if k == 0:
        return []
    half, extra = divmod(x // 2, k)
    return [2 * (half + 1)] * extra + [2 * half] * (k - extra)


def _even_counts(x: int) -> list[int]:
    """Return the numbers of even parts of 6..12 that x splits into, nearest to size 8 first."""
    if x == 0:
        return [0]
    if x % 2 or x < 6:
        return []
    ks = range(-(-x // 12), x // 6 + 1)
    return sorted(ks, key=lambda k: abs(x / k - 8))


def partition(n: int, cover: int, odd: bool, parity: int | None) -> list[int] | None:
    """Return part sizes (6..13) summing to n, or None.

    With odd, exactly one part is odd, it holds index cover and only even parts
    precede it; otherwise every part is even. parity (0/1) fixes the number of
    parts mod 2. There are always at least two parts.
    """
    if not odd:
        for k in _even_counts(n):
            if k >= 2 and (parity is None or k % 2 == parity):
                return _split_even(n, k)
        return None
    for length in (7, 9, 11, 13):
        for p in range(cover - cover % 2, max(-1, cover - length), -2):
            s = n - p - length
            if s < 0:
                continue
            for kp in _even_counts(p):
                for ks in _even_counts(s):
                    k = kp + 1 + ks
                    if k >= 2 and (parity is None or k % 2 == parity):
                        return _split_even(p, kp) + [length] + _split_even(s, ks)
    return None


def block_cycle(kr: int, kc: int) -> list[tuple[int, int]]:
    """Return a Hamiltonian cycle of the kr x kc grid (kr even, kc >= 2): down column 0, snake back."""
    cycle = [(i, 0) for i in range(kr)]
    for i in range(kr - 1, -1, -1):
        cols = range(1, kc) if (kr - 1 - i) % 2 == 0 else range(kc - 1, 0, -1)
        cycle.extend((i, j) for j in cols)
    return cycle


def layout(rows: int, cols: int, start: tuple[int, int], closed: bool) -> list[Block] | None:
    """Return the blocks in tour order, the start's block first; None when the board is too thin."""
    if min(rows, cols) < MIN_SIDE:
        return None
    if closed and rows % 2 and cols % 2:
        return None
    for row_parity in (None, 0):
        rp = partition(rows, start[0], rows % 2 == 1, row_parity)
        if rp is None:
            continue
        cp = partition(cols, start[1], cols % 2 == 1, 0 if len(rp) % 2 else None)
        if cp is None:
            continue
        break
    else:
        return None
    if len(rp) % 2:  # block_cycle wants an even number of block rows: walk the transpose
        order = [(i, j) for j, i in block_cycle(len(cp), len(rp))]
    else:
        order = block_cycle(len(rp), len(cp))
    r0 = [sum(rp[:i]) for i in range(len(rp))]
    c0 = [sum(cp[:j]) for j in range(len(cp))]
    blocks = [Block(r0[i], c0[j], rp[i], cp[j]) for i, j in order]
    first = next(k for k, b in enumerate(blocks) if b.holds(*start))
    return blocks[first:] + blocks[:first]


class _Solver:
    """Cached block searches sharing one budget."""

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self.paths: dict[tuple, list[int] | None] = {}
        self.adj: dict[tuple[int, int], list[tuple[int, ...]]] = {}

    def path(self, h: int, w: int, entry: int, ends: frozenset[int] | None) -> list[int] | None:
        key = (h, w, entry, ends)
        if key not in self.paths:
            adj = self.adj.setdefault((h, w), knight_adjacency(h, w))
            tie = roth_key(h, w) if ends is None else toward_key(h, w, ends)
            problem = PathProblem(h, w, adj, tie, ends)
            self.paths[key] = knight_path_restarts(problem, entry, self.budget, _BLOCK_RESTARTS)
        return self.paths[key]


def _exits(a: Block, b: Block, colour: int | None) -> frozenset[int]:
    """Return a's squares (relative) with a knight move into b, of the given colour (abs parity)."""
    # The answer depends only on the shapes, their offset and the colour relative
    # to a's corner, and a big board has few of those.
    rel = None if colour is None else (colour - a.r - a.c) % 2
    return _relative_exits(Block(0, 0, a.h, a.w), Block(b.r - a.r, b.c - a.c, b.h, b.w), rel)


@functools.lru_cache(maxsize=1024)
def _relative_exits(a: Block, b: Block, colour: int | None) -> frozenset[int]:
    out = set()
    for r in range(a.r, a.r + a.h):
        for c in range(a.c, a.c + a.w):
            if colour is not None and (r + c) % 2 != colour:
                continue
            if any(b.holds(r + dr, c + dc) for dr, dc in MOVES):
                out.add((r - a.r) * a.w + (c - a.c))
    return frozenset(out)


def _targets(a: Block, square: tuple[int, int], colour: int | None) -> frozenset[int]:
    """Return a's squares (relative) a knight move from square, of the given colour."""
    r, c = square
    return frozenset(
        (r + dr - a.r) * a.w + (c + dc - a.c)
        for dr, dc in MOVES
        if a.holds(r + dr, c + dc) and (colour is None or (r + dr + c + dc) % 2 == colour)
    )


def _exit_colour(b: Block, entry: tuple[int, int]) -> int:
    parity = (entry[0] + entry[1]) % 2
    return parity if (b.h * b.w) % 2 else 1 - parity


def stitched_tour(
    rows: int, cols: int, start: tuple[int, int], closed: bool, budget: Budget
) -> list[list[int]] | None:
    """Return a tour of rows x cols from start (closed if asked), or None if the blocks do not fit."""
    blocks = layout(rows, cols, start, closed)
    if blocks is None:
        return None
    solver = _Solver(budget)
    if closed:
        # Enter the first block at a square next to the last block, then rotate to start.
        last = blocks[-1]
        first_entries = sorted(
            (blocks[0].r + v // blocks[0].w, blocks[0].c + v % blocks[0].w)
            for v in _exits(blocks[0], last, None)
        )
    else:
        first_entries = [start]
    for e0 in first_entries:
        tour = _chain(blocks, e0, closed, solver)
        if tour is not None:
            if closed:
                k = tour.index(list(start))
                tour = tour[k:] + tour[:k]
            return tour
    return None


def _options(
    blocks: list[Block], i: int, entry: tuple[int, int], e0: tuple[int, int], closed: bool, solver: _Solver
) -> Iterator[tuple[list[int], tuple[int, int] | None]]:
    """Yield (relative path through block i, entry square of block i+1) choices, best first."""
    b = blocks[i]
    rel = (entry[0] - b.r) * b.w + (entry[1] - b.c)
    colour = _exit_colour(b, entry)
    if i == len(blocks) - 1:
        ends = _targets(b, e0, colour) if closed else None
        p = solver.path(b.h, b.w, rel, ends)
        if p is not None:
            yield p, None
        return
    nxt = blocks[i + 1]
    exits = _exits(b, nxt, colour)
    while exits:
        p = solver.path(b.h, b.w, rel, exits)
        if p is None:
            return
        x = divmod(p[-1], b.w)
        xr, xc = b.r + x[0], b.c + x[1]
        for dr, dc in MOVES:
            if nxt.holds(xr + dr, xc + dc):
                yield p, (xr + dr, xc + dc)
        exits = exits - {p[-1]}


def _chain(blocks: list[Block], e0: tuple[int, int], closed: bool, solver: _Solver) -> list[list[int]] | None:
    """Return the stitched tour through all blocks entering the first at e0, or None."""
    stack = [_options(blocks, 0, e0, e0, closed, solver)]
    chosen: list[list[int]] = []
    while stack:
        i = len(stack) - 1
        step = next(stack[-1], None)
        if step is None:
            stack.pop()
            continue
        p, nxt_entry = step
        del chosen[i:]
        chosen.append(p)
        if nxt_entry is None:
            break
        stack.append(_options(blocks, i + 1, nxt_entry, e0, closed, solver))
    else:
        return None
    tour: list[list[int]] = []
    # A million small lists would wake the cyclic garbage collector thousands
    # of times for nothing (lists of ints hold no cycles).
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        for b, p in zip(blocks, chosen, strict=True):
            w, r0, c0 = b.w, b.r, b.c
            tour.extend([r0 + v // w, c0 + v % w] for v in p)
    finally:
        if was_enabled:
            gc.enable()
    return tour
