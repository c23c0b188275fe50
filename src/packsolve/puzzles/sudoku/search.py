"""Sudoku searches: the write-up's first-empty-cell DFS, and constraint propagation on bitsets.

Every search counts solutions up to a cap (2 by default: enough to tell a
unique puzzle from an ambiguous one) and charges the budget once per search
node, a node being one partial grid the search expands.
"""

from __future__ import annotations

import importlib
import random
from dataclasses import dataclass

from packsolve.api import Budget, BudgetExhausted

ALL = 0x1FF  # candidates 1..9 as bits 0..8

ROWS = [[r * 9 + c for c in range(9)] for r in range(9)]
COLS = [[r * 9 + c for r in range(9)] for c in range(9)]
BOXES = [[(b // 3 * 3 + i // 3) * 9 + b % 3 * 3 + i % 3 for i in range(9)] for b in range(9)]
UNITS = ROWS + COLS + BOXES
PEERS = [tuple(sorted({p for unit in UNITS if cell in unit for p in unit} - {cell})) for cell in range(81)]
BIT_DIGIT = {1 << d: d + 1 for d in range(9)}


@dataclass(frozen=True)
class Count:
    """Solutions found (at most the cap asked for) and the first of them, or None."""

    count: int
    first: str | None


def clash(cells: list[int]) -> str | None:
    """Return where the givens repeat a digit in a row, column or box, or None if they do not."""
    for kind, units in (("row", ROWS), ("column", COLS), ("box", BOXES)):
        for k, unit in enumerate(units, 1):
            seen: set[int] = set()
            for cell in unit:
                d = cells[cell]
                if d and d in seen:
                    return f"the givens repeat {d} in {kind} {k}"
                seen.add(d)
    return None


def first_empty_dfs(cells: list[int], budget: Budget, cap: int = 2) -> Count:
    """Count solutions by the write-up's DFS: fill the first empty cell with each digit that fits.

    A digit fits when its row, column and box do not hold it yet, as in the
    write-up (kept as bitmasks of used digits, which tests the same thing
    faster); nothing is propagated, so this is the baseline the other
    heuristics are measured against.
    """
    grid = list(cells)
    row_used, col_used, box_used = [0] * 9, [0] * 9, [0] * 9
    for cell, d in enumerate(grid):
        if d:
            r, c = divmod(cell, 9)
            row_used[r] |= 1 << d
            col_used[c] |= 1 << d
            box_used[r // 3 * 3 + c // 3] |= 1 << d
    empties = [cell for cell in range(81) if not grid[cell]]
    found: list[str] = []
    count = 0

    def dfs(k: int) -> bool:
        """Fill empties[k:]; return True once the cap is reached (stop everything)."""
        nonlocal count
        budget.charge()
        if k == len(empties):
            count += 1
            if not found:
                found.append("".join(map(str, grid)))
            return count >= cap
        cell = empties[k]
        r, c = divmod(cell, 9)
        b = r // 3 * 3 + c // 3
        used = row_used[r] | col_used[c] | box_used[b]
        for d in range(1, 10):
            bit = 1 << d
            if not used & bit:
                grid[cell] = d
                row_used[r] |= bit
                col_used[c] |= bit
                box_used[b] |= bit
                stop = dfs(k + 1)
                row_used[r] ^= bit
                col_used[c] ^= bit
                box_used[b] ^= bit
                if stop:
                    return True
        grid[cell] = 0
        return False

    dfs(0)
    return Count(count, found[0] if found else None)


class _Contradiction(Exception):
    pass


def _assign(cand: list[int], cell: int, bit: int, queue: list[int]) -> None:
    """Fix cell to bit and remove bit from its peers; raise _Contradiction if a peer runs dry."""
    cand[cell] = bit
    for p in PEERS[cell]:
        m = cand[p]
        if m & bit:
            m &= ~bit
            if not m:
                raise _Contradiction
            cand[p] = m
            if not m & (m - 1):
                queue.append(p)


def _propagate(cand: list[int], fixed: list[bool], queue: list[int]) -> None:
    """Apply naked and hidden singles to a fixpoint; raise _Contradiction on a dead end."""
    while True:
        while queue:
            p = queue.pop()
            if not fixed[p]:
                fixed[p] = True
                _assign(cand, p, cand[p], queue)
        placed = False
        for unit in UNITS:
            once = twice = 0
            for c in unit:
                m = cand[c]
                twice |= once & m
                once |= m
            if once != ALL:
                raise _Contradiction
            hidden = once & ~twice
            while hidden:
                bit = hidden & -hidden
                hidden ^= bit
                for c in unit:
                    if cand[c] & bit:
                        if not fixed[c]:
                            cand[c] = bit
                            queue.append(c)
                            placed = True
                        break
        if not placed:
            return


def _most_constrained(cand: list[int], fixed: list[bool]) -> int:
    """Return the first open cell with two candidates, else the first with the fewest; -1 if none is open."""
    best, best_n = -1, 10
    for c in range(81):
        if not fixed[c]:
            n = cand[c].bit_count()
            if n < best_n:
                best, best_n = c, n
                if n == 2:
                    break
    return best


def propagation_search(
    cells: list[int], budget: Budget, cap: int = 2, rng: random.Random | None = None
) -> Count:
    """Count solutions by bitset constraint propagation (singles) and most-constrained-cell branching.

    With rng the digits of each branch are tried in random order (for the
    level generator); the count does not depend on the order.
    """
    cand = [ALL] * 81
    fixed = [False] * 81
    queue = [c for c in range(81) if cells[c]]
    for c in queue:
        if not cand[c] & (1 << (cells[c] - 1)):
            return Count(0, None)
        cand[c] = 1 << (cells[c] - 1)
    found: list[str] = []
    count = 0

    def search(cand: list[int], fixed: list[bool], queue: list[int]) -> bool:
        """Return True once the cap is reached."""
        nonlocal count
        budget.charge()
        try:
            _propagate(cand, fixed, queue)
        except _Contradiction:
            return False
        best = _most_constrained(cand, fixed)
        if best < 0:
            count += 1
            if not found:
                found.append("".join(str(BIT_DIGIT[m]) for m in cand))
            return count >= cap
        m = cand[best]
        bits = [1 << d for d in range(9) if m >> d & 1]
        if rng is not None:
            rng.shuffle(bits)
        for bit in bits:
            child = cand[:]
            child[best] = bit
            if search(child, fixed[:], [best]):
                return True
        return False

    search(cand, fixed, queue)
    return Count(count, found[0] if found else None)


def native_search(
    cells: list[int], budget: Budget, cap: int = 2, module: str = "sudoku", *, configs: bool = False
) -> Count | None:
    """Count solutions with the C search packsolve.native.<module>; None when it is not built.

    ``sudoku`` is the per-cell bitset search of ``propagate``; ``sudoku_bands``
    the bit-parallel digit bands with row-box triads of ``band-triads``, and
    with configs those of ``band-configs`` (minirow counts, branching on a
    digit's row-box matching).
    """
    try:
        native = importlib.import_module(f"packsolve.native.{module}")
    except ImportError:
        return None
    node_cap = -1 if budget.node_limit is None else max(0, budget.node_limit - budget.nodes)
    deadline = -1.0 if budget.deadline is None else budget.deadline
    flags = (True,) if configs else ()  # the per-cell search takes no flag
    stop, count, first, nodes = native.count(bytes(cells), cap, node_cap, deadline, *flags)
    if stop == 0:
        # The search finished; its answer stands even if the clock ran out on the last node.
        budget.nodes += nodes
        return Count(count, first)
    budget.charge(nodes)
    budget.check_clock()
    raise BudgetExhausted(budget.wall_message())
