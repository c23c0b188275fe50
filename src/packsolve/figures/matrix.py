"""A levels × heuristics matrix: the best heuristic of each level, and the virtual best solver.

The virtual best solver (VBS) runs, for each level, the heuristic that was best on it: its
PAR-2 is the sum over levels of the smallest PAR-2 any heuristic scored there. Set against the
best single heuristic (the one of lowest PAR-2 over the same levels) it says what choosing a
heuristic per level could save. Only levels every column attempted count, so a column that
ran fewer levels is not made to look better.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from packsolve.outcome import SUCCESS_VALUES
from packsolve.request import HeuristicMatrix


@dataclass(frozen=True)
class Cell:
    """One heuristic's result on one level: its status, wall time, nodes, and PAR-2 (None: never ran)."""

    status: str
    wall_s: float | None
    nodes: int | None
    par2_s: float | None

    @property
    def decided(self) -> bool:
        """Return whether this attempt solved its level or proved it has no solution."""
        return self.status in SUCCESS_VALUES


@dataclass(frozen=True)
class RunColumns:
    """How a run of several heuristics side by side splits into columns: each (kind, heuristic) tried
    in one of them, and each column's name (its heuristics, different kinds' joined by |)."""

    of: dict[tuple[str, str], int]
    names: list[str]


def run_columns(heuristic: str, tried: Sequence[tuple[str, str]]) -> RunColumns | None:
    """Return the columns of a run that tried (kind, heuristic) pairs (in the order first met), asked
    as heuristic (its --heuristic text); None when the run is one column (one heuristic per kind).

    A column is a place in the --heuristic text, so a mixed pack's levels share columns: with
    "plain,dlx,astar" sudoku's propagate (its default, for astar it lacks) is third, as sliding's
    astar is. When the text does not account for the heuristics tried, each heuristic is its own column.
    """
    per_kind: dict[str, list[str]] = {}
    for kind, name in tried:
        if name not in per_kind.setdefault(kind, []):
            per_kind[kind].append(name)
    if not any(len(names) > 1 for names in per_kind.values()):
        return None
    slots = _slots(heuristic, per_kind)
    if slots is None:
        names = list(dict.fromkeys(name for _, name in tried))
        return RunColumns({(k, h): names.index(h) for k, h in tried}, names)
    # Columns in the order first met, each named by its heuristics in that order too.
    places = list(dict.fromkeys(slots[pair] for pair in tried))
    members: list[list[str]] = [[] for _ in places]
    for kind, name in tried:
        met = members[places.index(slots[kind, name])]
        if name not in met:
            met.append(name)
    return RunColumns({pair: places.index(slots[pair]) for pair in tried}, ["|".join(m) for m in members])


def _slots(heuristic: str, per_kind: dict[str, list[str]]) -> dict[tuple[str, str], int] | None:
    """Return the place, in the run's --heuristic text, of each (kind, heuristic) a matrix run tried.

    sliding's pdb asked in dlx's place (sudoku=…+dlx, or "plain,dlx" where sliding lacks dlx) is
    second. None when the text does not account for the heuristics tried.
    """
    matrix = HeuristicMatrix.parse(heuristic)
    out: dict[tuple[str, str], int] = {}
    for kind, tried in per_kind.items():
        asked = matrix.names_for(kind)
        # A name the kind lacks ran as its default: in the first such place (a default met twice ran once).
        instead = [i for i, name in enumerate(asked) if name not in tried]
        for name in tried:
            if name in asked:
                out[kind, name] = asked.index(name)
            elif instead:
                out[kind, name] = instead.pop(0)
            else:
                return None
    return out


def best_of(cells: Sequence[Cell | None]) -> int | None:
    """Return the index of the best cell of a level (None: no cell decided it).

    Best: decided, in the least wall time; ties by fewer nodes, then the first column.
    """
    ranked = [
        (c.wall_s or 0.0, c.nodes if c.nodes is not None else 0, i)
        for i, c in enumerate(cells)
        if c is not None and c.decided
    ]
    return min(ranked)[2] if ranked else None


@dataclass(frozen=True)
class ColumnTotals:
    """One column over the levels every column attempted: levels decided, PAR-2, levels it was best on."""

    decided: int
    par2_s: float
    best_on: int


@dataclass(frozen=True)
class VirtualBest:
    """The virtual best solver against the best single column, over the levels every column attempted."""

    levels: int  # attempted by every column
    decided: int  # by at least one column
    par2_s: float  # the smallest PAR-2 per level, summed
    single: int | None  # the column of lowest PAR-2 (ties: more decided, then the first); None: no level
    single_decided: int
    single_par2_s: float

    @property
    def saves_s(self) -> float:
        """Return the PAR-2 seconds the VBS saves over the best single column."""
        return self.single_par2_s - self.par2_s

    @property
    def saves_pct(self) -> float | None:
        """Return saves_s as a percentage of the best single column's PAR-2 (None when that is 0)."""
        return 100.0 * self.saves_s / self.single_par2_s if self.single_par2_s else None


def column_totals(rows: Sequence[Sequence[Cell | None]], columns: int) -> list[ColumnTotals]:
    """Return each column's totals over the rows where every column has a PAR-2."""
    shared = [row for row in rows if _complete(row)]
    bests = [best_of(row) for row in shared]
    return [
        ColumnTotals(
            decided=sum(1 for row in shared if _cell(row, i).decided),
            par2_s=sum(_par2(row, i) for row in shared),
            best_on=sum(1 for b in bests if b == i),
        )
        for i in range(columns)
    ]


def virtual_best(rows: Sequence[Sequence[Cell | None]], columns: int) -> VirtualBest:
    """Return the VBS and the best single column over the rows where every column has a PAR-2."""
    shared = [row for row in rows if _complete(row)]
    totals = column_totals(shared, columns)
    vbs_par2 = sum(min(_par2(row, i) for i in range(columns)) for row in shared)
    decided = sum(1 for row in shared if best_of(row) is not None)
    if not shared or not totals:
        return VirtualBest(len(shared), decided, vbs_par2, None, 0, 0.0)
    single = min(range(columns), key=lambda i: (totals[i].par2_s, -totals[i].decided, i))
    return VirtualBest(len(shared), decided, vbs_par2, single, totals[single].decided, totals[single].par2_s)


def _complete(row: Sequence[Cell | None]) -> bool:
    return all(c is not None and c.par2_s is not None for c in row)


def _cell(row: Sequence[Cell | None], i: int) -> Cell:
    cell = row[i]
    assert cell is not None  # only complete rows are read
    return cell


def _par2(row: Sequence[Cell | None], i: int) -> float:
    par2 = _cell(row, i).par2_s
    assert par2 is not None  # only complete rows are read
    return par2
