"""Knuth's Algorithm X with dancing links, on sudoku's exact-cover matrix.

Columns are the 324 constraints (each cell filled; each digit once per row,
column and box); rows are the 729 placements "digit d in cell (r, c)", each
covering four columns. The nodes live in flat integer arrays (left, right, up,
down, column), the classic layout of Knuth's "Dancing Links" paper.
"""

from __future__ import annotations

from packsolve.api import Budget
from packsolve.puzzles.sudoku.search import Count

N_COLS = 324
ROOT = 0  # the header list: node 0 is the root, nodes 1..324 the column headers


def _columns(cell: int, d: int) -> tuple[int, int, int, int]:
    """Return the four constraint columns (1-based headers) that placing digit d (0-8) in cell covers."""
    r, c = divmod(cell, 9)
    b = r // 3 * 3 + c // 3
    return (1 + cell, 1 + 81 + r * 9 + d, 1 + 162 + c * 9 + d, 1 + 243 + b * 9 + d)


def _template() -> tuple[list[int], list[int], list[int], list[int], list[int], list[int]]:
    """Build the full matrix once; each search copies the arrays (cheaper than relinking)."""
    L = list(range(-1, N_COLS))
    R = list(range(1, N_COLS + 2))
    L[ROOT], R[N_COLS] = N_COLS, ROOT
    U = list(range(N_COLS + 1))
    D = list(range(N_COLS + 1))
    C = list(range(N_COLS + 1))
    size = [0] * (N_COLS + 1)
    first_node = []  # node of each placement row, 729 of them in cell-major order
    for cell in range(81):
        for d in range(9):
            first = len(C)
            first_node.append(first)
            cols = _columns(cell, d)
            for k, col in enumerate(cols):
                node = first + k
                L.append(first + (k - 1) % 4)
                R.append(first + (k + 1) % 4)
                # append at the bottom of the column
                U.append(U[col])
                D.append(col)
                D[U[col]] = node
                U[col] = node
                C.append(col)
                size[col] += 1
    return L, R, U, D, C, size + first_node


_L, _R, _U, _D, _C, _SIZE_AND_ROWS = _template()
_SIZE = _SIZE_AND_ROWS[: N_COLS + 1]
_ROW_NODE = _SIZE_AND_ROWS[N_COLS + 1 :]


class _Links:
    """One search's copy of the matrix's links, covered and uncovered in place."""

    __slots__ = ("C", "D", "L", "R", "S", "U")

    def __init__(self) -> None:
        self.L, self.R, self.U, self.D, self.C, self.S = _L[:], _R[:], _U[:], _D[:], _C[:], _SIZE[:]

    def cover(self, col: int) -> None:
        """Unlink column col and every row that meets it from the other columns."""
        L, R, U, D, C, S = self.L, self.R, self.U, self.D, self.C, self.S
        L[R[col]], R[L[col]] = L[col], R[col]
        i = D[col]
        while i != col:
            j = R[i]
            while j != i:
                U[D[j]], D[U[j]] = U[j], D[j]
                S[C[j]] -= 1
                j = R[j]
            i = D[i]

    def uncover(self, col: int) -> None:
        """Undo cover(col), in the reverse order."""
        L, R, U, D, C, S = self.L, self.R, self.U, self.D, self.C, self.S
        i = U[col]
        while i != col:
            j = L[i]
            while j != i:
                S[C[j]] += 1
                U[D[j]] = D[U[j]] = j
                j = L[j]
            i = U[i]
        L[R[col]] = R[L[col]] = col

    def cover_rest(self, row: int) -> None:
        """Cover the columns of row's placement other than the one row was reached through."""
        R, C = self.R, self.C
        j = R[row]
        while j != row:
            self.cover(C[j])
            j = R[j]

    def uncover_rest(self, row: int) -> None:
        """Undo cover_rest(row), in the reverse order."""
        L, C = self.L, self.C
        j = L[row]
        while j != row:
            self.uncover(C[j])
            j = L[j]

    def fewest(self) -> tuple[int, int]:
        """Return Knuth's S heuristic's column (the fewest remaining rows) and its row count."""
        R, S = self.R, self.S
        col, best = R[ROOT], 1 << 30
        j = col
        while j != ROOT:
            if S[j] < best:
                col, best = j, S[j]
                if best <= 1:
                    break
            j = R[j]
        return col, best


def _take_givens(links: _Links, cells: list[int]) -> list[int] | None:
    """Select the givens' rows (forced into the solution); None when two givens share a column."""
    chosen: list[int] = []
    taken: set[int] = set()
    for cell in range(81):
        if cells[cell]:
            row = _ROW_NODE[cell * 9 + cells[cell] - 1]
            cols = {links.C[row + k] for k in range(4)}
            if cols & taken:
                return None
            taken |= cols
            links.cover(links.C[row])
            links.cover_rest(row)
            chosen.append(row)
    return chosen


class _Search:
    """Algorithm X over the links, counting solutions up to cap and keeping the first."""

    def __init__(self, links: _Links, chosen: list[int], budget: Budget, cap: int) -> None:
        self.links, self.chosen, self.budget, self.cap = links, chosen, budget, cap
        self.count = 0
        self.first: str | None = None

    def solution(self) -> str:
        """Return the grid of the chosen rows as 81 digits."""
        grid = [0] * 81
        for row in self.chosen:
            cell, d = divmod(_row_index(row), 9)
            grid[cell] = d + 1
        return "".join(map(str, grid))

    def run(self) -> bool:
        """Search below the current partial solution; return True once the cap is reached."""
        links = self.links
        self.budget.charge()
        if links.R[ROOT] == ROOT:
            self.count += 1
            if self.first is None:
                self.first = self.solution()
            return self.count >= self.cap
        col, best = links.fewest()
        if best == 0:
            return False
        links.cover(col)
        D, chosen = links.D, self.chosen
        row = D[col]
        while row != col:
            chosen.append(row)
            links.cover_rest(row)
            stop = self.run()
            links.uncover_rest(row)
            chosen.pop()
            if stop:
                break
            row = D[row]
        links.uncover(col)
        return row != col


def dancing_links(cells: list[int], budget: Budget, cap: int = 2) -> Count:
    """Count sudoku solutions (up to cap) by Algorithm X choosing the column with fewest rows."""
    links = _Links()
    chosen = _take_givens(links, cells)
    if chosen is None:
        return Count(0, None)
    search = _Search(links, chosen, budget, cap)
    search.run()
    return Count(search.count, search.first)


def _row_index(node: int) -> int:
    """Return the placement index (cell * 9 + digit) of a node in any of its row's four slots."""
    return (node - (N_COLS + 1)) // 4
