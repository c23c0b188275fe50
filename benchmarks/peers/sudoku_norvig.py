"""A re-implementation of Peter Norvig's constraint-propagation sudoku solver ("Solving Every Sudoku Puzzle").

Written from the essay's description, in its style: squares named A1..I9, a
dict square -> string of remaining digits, assignment by eliminating every
other digit, two rules (a square with one digit left removes it from its
peers; a unit with one place left for a digit puts it there), and depth-first
search on the square with the fewest digits, copying the dict per branch.
Like the original it stops at the first solution (it does not check uniqueness).
"""

from __future__ import annotations

ROWS = "ABCDEFGHI"
COLS = "123456789"
DIGITS = "123456789"
SQUARES = [r + c for r in ROWS for c in COLS]
UNITLIST = (
    [[r + c for c in COLS] for r in ROWS]
    + [[r + c for r in ROWS] for c in COLS]
    + [[r + c for r in rs for c in cs] for rs in ("ABC", "DEF", "GHI") for cs in ("123", "456", "789")]
)
UNITS = {s: [u for u in UNITLIST if s in u] for s in SQUARES}
PEERS = {s: set().union(*UNITS[s]) - {s} for s in SQUARES}


class Norvig:
    """Solve grids of 81 characters ('.' or '0' blank); count the search's assignments tried."""

    def __init__(self) -> None:
        self.nodes = 0

    def solve(self, grid: str) -> str | None:
        """Return the first solution as 81 digits, or None if there is none."""
        values = self.parse(grid)
        result = self.search(values) if values else False
        if not result:
            return None
        return "".join(result[s] for s in SQUARES)

    def parse(self, grid: str) -> dict[str, str] | bool:
        values = dict.fromkeys(SQUARES, DIGITS)
        for s, d in zip(SQUARES, grid, strict=True):
            if d in DIGITS and not self.assign(values, s, d):
                return False
        return values

    def assign(self, values: dict[str, str], s: str, d: str) -> dict[str, str] | bool:
        """Eliminate every digit but d from s; False on a contradiction."""
        others = values[s].replace(d, "")
        if all(self.eliminate(values, s, d2) for d2 in others):
            return values
        return False

    def eliminate(self, values: dict[str, str], s: str, d: str) -> dict[str, str] | bool:
        if d not in values[s]:
            return values
        values[s] = values[s].replace(d, "")
        left = values[s]
        if not left:
            return False
        if len(left) == 1 and not all(self.eliminate(values, p, left) for p in PEERS[s]):
            return False
        for unit in UNITS[s]:
            places = [q for q in unit if d in values[q]]
            if not places:
                return False
            if len(places) == 1 and not self.assign(values, places[0], d):
                return False
        return values

    def search(self, values: dict[str, str] | bool) -> dict[str, str] | bool:
        self.nodes += 1
        if values is False:
            return False
        assert isinstance(values, dict)
        if all(len(values[s]) == 1 for s in SQUARES):
            return values
        _, s = min((len(values[s]), s) for s in SQUARES if len(values[s]) > 1)
        for d in values[s]:
            found = self.search(self.assign(values.copy(), s, d))
            if found:
                return found
        return False
