"""IDA* for sliding tiles in C: Manhattan, linear conflict, pattern databases, and weighted."""

from __future__ import annotations

import time
from dataclasses import dataclass
from fractions import Fraction

from packsolve.api import Budget, BudgetExhausted, SharedBound
from packsolve.puzzles.sliding.board import Board

MANHATTAN, LINEAR_CONFLICT, PDB = 0, 1, 2
# Not C modes: PDB over the stronger split of the pdb module's STRONG_PARTITIONS, and over its
# RANKED_PARTITIONS (Korf & Felner's 6-6-6-6 on 5x5, compact tables).
PDB_STRONG, PDB_6666 = 3, 4
_SOLVED, _NODE_LIMIT, _TIME_LIMIT, _DEPTH, _BOUND = 0, 1, 2, 3, 4
# The C search's "next bound" when nothing was cut off: the whole tree was searched.
_EVERYTHING = 0x7FFFFFFF

# Weighted IDA* runs these weights in turn, keeping the shortest answer: the
# first finds a solution fast, the later ones tighten the bound while time lasts.
WEIGHTS = (Fraction(2), Fraction(3, 2), Fraction(4, 3), Fraction(5, 4))
# Each refinement after the first answer may use at most this share of the time
# left, at most REFINE_SECONDS, and REFINE_NODES when the budget has no deadline,
# so an answer is always returned well before the limit.
REFINE_SHARE = 0.5
REFINE_SECONDS = 15.0
REFINE_NODES = 60_000_000


@dataclass(frozen=True)
class Found:
    """A solution and the weight it was found with (1 means optimal)."""

    moves: list[int]
    weight: Fraction


def _native():
    from packsolve.native import sliding

    return sliding


def ida_star(
    board: Board,
    budget: Budget,
    mode: int,
    weight: Fraction = Fraction(1),
    node_cap: int | None = None,
    stop_at: float | None = None,
) -> list[int] | None:
    """Return the moves found by (weighted) IDA* with the given heuristic; None if node_cap or stop_at hit.

    Raises BudgetExhausted when the budget's deadline or node limit is reached.
    The C search counts its expansions; they are charged to the budget in one go.

    A part of a split level (board.depth > 0 or board.back set) starts below its prefix without
    undoing its last move. Unweighted, with budget.bound set (a best-of-all split), it wants only
    answers shorter than the bound's best (None when there is none) and searches only the
    iterations in bound.window (lengths of the whole level), setting bound.resume to the first
    iteration it did not search (None: its tree is searched through).
    """
    tables: tuple[object, ...] | None = None
    groups = None
    ranked, maps = False, None
    if mode in (PDB, PDB_STRONG, PDB_6666):
        # Imported on use: were the package to import pdb, `python -m packsolve.puzzles.sliding.pdb`
        # would find it already imported and run a second copy of it.
        from packsolve.puzzles.sliding import pdb

        db = pdb.load(board.n, strong=mode == PDB_STRONG, ranked=mode == PDB_6666)
        tables, groups, ranked, maps = db.tables, db.groups, db.ranked, db.maps
        mode = PDB
    limits = []
    if budget.node_limit is not None:
        limits.append(budget.node_limit - budget.nodes + 1)
    if node_cap is not None:
        limits.append(node_cap)
    node_limit = max(1, min(limits)) if limits else 0
    deadlines = [d for d in (budget.deadline, stop_at) if d is not None]
    deadline = min(deadlines) if deadlines else 0.0
    budget.check_clock()
    shared = budget.bound if weight == 1 else None
    part = _part_args(board, shared)
    status, moves, nodes, reached = _native().ida_star(
        bytes(board.tiles),
        board.n,
        mode,
        weight.numerator,
        weight.denominator,
        node_limit,
        deadline,
        tables,
        groups,
        ranked=ranked,
        maps=maps,
        **part,
    )
    if status == _BOUND:
        budget.charge(nodes)
        if shared is not None and reached != _EVERYTHING:
            shared.resume = board.depth + reached
        return None
    if status == _SOLVED:
        # The answer is in hand: count the work without letting a limit passed meanwhile discard it.
        budget.nodes += nodes
        return moves
    own_stop = stop_at is not None and (budget.deadline is None or stop_at < budget.deadline)
    if status == _TIME_LIMIT and own_stop:
        budget.nodes += nodes
        return None
    budget.charge(nodes)
    if status == _TIME_LIMIT:
        raise BudgetExhausted(budget.wall_message())
    if status == _DEPTH:
        raise BudgetExhausted("search depth limit reached")
    if node_cap is not None:
        return None
    raise BudgetExhausted(f"node limit {budget.node_limit} reached")


def _part_args(board: Board, shared: SharedBound | None) -> dict[str, object]:
    """Return the native search's arguments of a part: its move back, and the shared bound and window."""
    part: dict[str, object] = {"back": board.back}
    if shared is not None:
        shared.resume = None
        part.update(shared=shared.buffer, offset=board.depth)
        if shared.window is not None:
            lo, hi = shared.window
            part.update(first_bound=max(0, lo - board.depth), max_bound=max(0, hi - board.depth))
    return part


def weighted(board: Board, budget: Budget, mode: int) -> Found:
    """Return the shortest answer of weighted IDA* over WEIGHTS (length <= weight x optimal).

    Raises BudgetExhausted if even the first weight finds nothing in the budget.
    """
    best: Found | None = None
    for weight in WEIGHTS:
        cap = stop_at = None
        if best is not None:
            left = budget.remaining()
            if left is None:
                cap = REFINE_NODES
            else:
                stop_at = time.monotonic() + min(left * REFINE_SHARE, REFINE_SECONDS)
        try:
            moves = ida_star(board, budget, mode, weight, cap, stop_at)
        except BudgetExhausted:
            if best is None:
                raise
            break
        if moves is None:
            break
        if best is None or len(moves) <= len(best.moves):
            best = Found(moves, weight)
        else:
            best = Found(best.moves, weight)
    assert best is not None
    return best
