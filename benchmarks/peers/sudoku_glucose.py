"""Glucose 4 (through python-sat) as a sudoku peer: one incremental CNF, each puzzle's givens as assumptions.

Variables x(r, c, d) say "digit d in row r, column c". The CNF is built once:
every cell holds exactly one digit, and every digit appears exactly once in
every row, column and box (at-least-one plus pairwise at-most-one). Each
puzzle is one ``solve(assumptions=givens)`` call on the same solver, so clauses
learnt on earlier puzzles stay (that is what "incremental" buys). Like Norvig's
solver it stops at the first solution.
"""

from __future__ import annotations

from itertools import combinations


def var(r: int, c: int, d: int) -> int:
    return r * 81 + c * 9 + d + 1


def sudoku_cnf() -> list[list[int]]:
    units = (
        [[(r, c) for c in range(9)] for r in range(9)]
        + [[(r, c) for r in range(9)] for c in range(9)]
        + [[(br + i, bc + j) for i in range(3) for j in range(3)] for br in (0, 3, 6) for bc in (0, 3, 6)]
    )
    clauses = []
    for r in range(9):
        for c in range(9):
            clauses.append([var(r, c, d) for d in range(9)])
            clauses.extend([-var(r, c, a), -var(r, c, b)] for a, b in combinations(range(9), 2))
    for unit in units:
        for d in range(9):
            clauses.append([var(r, c, d) for r, c in unit])
            clauses.extend([-var(*p, d), -var(*q, d)] for p, q in combinations(unit, 2))
    return clauses


class Glucose:
    """One Glucose 4 instance for a whole set; nodes are the solver's decisions per puzzle."""

    def __init__(self) -> None:
        from pysat.solvers import Glucose4

        self.sat = Glucose4(bootstrap_with=sudoku_cnf())
        self.nodes = 0

    def solve(self, grid: str) -> str | None:
        """Return a solution as 81 digits, or None if the givens admit none."""
        givens = [var(i // 9, i % 9, int(ch) - 1) for i, ch in enumerate(grid) if ch in "123456789"]
        before = self.sat.accum_stats().get("decisions", 0)
        ok = self.sat.solve(assumptions=givens)
        self.nodes = self.sat.accum_stats().get("decisions", 0) - before
        if not ok:
            return None
        model = self.sat.get_model()  # model[v - 1] is +v when v is true
        return "".join(next(str(d + 1) for d in range(9) if model[cell * 9 + d] > 0) for cell in range(81))

    def close(self) -> None:
        self.sat.delete()
