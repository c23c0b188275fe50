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


def dancing_links(cells: list[int], budget: Budget, cap: int = 2) -> Count:
    """Count sudoku solutions (up to cap) by Algorithm X choosing the column with fewest rows."""
    L, R, U, D, C, S = _L[:], _R[:], _U[:], _D[:], _C[:], _SIZE[:]

    def cover(col: int) -> None:
        L[R[col]], R[L[col]] = L[col], R[col]
        i = D[col]
        while i != col:
            j = R[i]
            while j != i:
                U[D[j]], D[U[j]] = U[j], D[j]
                S[C[j]] -= 1
                j = R[j]
            i = D[i]

    def uncover(col: int) -> None:
        i = U[col]
        while i != col:
            j = L[i]
            while j != i:
                S[C[j]] += 1
                U[D[j]] = D[U[j]] = j
                j = L[j]
            i = U[i]
        L[R[col]] = R[L[col]] = col

    def select(row: int) -> None:
        """Take a placement into the partial solution: cover every column it satisfies."""
        cover(C[row])
        j = R[row]
        while j != row:
            cover(C[j])
            j = R[j]

    # The givens are rows forced into the solution; a given whose column is gone clashes.
    chosen: list[int] = []
    taken: set[int] = set()
    for cell in range(81):
        if cells[cell]:
            row = _ROW_NODE[cell * 9 + cells[cell] - 1]
            cols = {C[row + k] for k in range(4)}
            if cols & taken:
                return Count(0, None)
            taken |= cols
            select(row)
            chosen.append(row)

    found: list[str] = []
    count = 0

    def search() -> bool:
        """Return True once the cap is reached."""
        nonlocal count
        budget.charge()
        if R[ROOT] == ROOT:
            count += 1
            if not found:
                grid = [0] * 81
                for row in chosen:
                    cell, d = divmod(_row_index(row), 9)
                    grid[cell] = d + 1
                found.append("".join(map(str, grid)))
            return count >= cap
        # Knuth's S heuristic: the column with the fewest remaining rows
        col, best = R[ROOT], 1 << 30
        j = col
        while j != ROOT:
            if S[j] < best:
                col, best = j, S[j]
                if best <= 1:
                    break
            j = R[j]
        if best == 0:
            return False
        cover(col)
        row = D[col]
        while row != col:
            chosen.append(row)
            j = R[row]
            while j != row:
                cover(C[j])
                j = R[j]
            stop = search()
            j = L[row]
            while j != row:
                uncover(C[j])
                j = L[j]
            chosen.pop()
            if stop:
                uncover(col)
                return True
            row = D[row]
        uncover(col)
        return False

    search()
    return Count(count, found[0] if found else None)


def _row_index(node: int) -> int:
    """Return the placement index (cell * 9 + digit) of a node in any of its row's four slots."""
    return (node - (N_COLS + 1)) // 4
