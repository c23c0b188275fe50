"""A figure of the pipeline benchmark (one row of its table), and the best of repeated ones."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Figure:
    """One measured value: which part, what was measured, on which database, the value and its unit."""

    part: str
    what: str
    database: str
    value: float
    unit: str
    note: str = ""

    def row(self) -> str:
        """Return the figure as a row of the results table."""
        value = f"{self.value:,.1f}" if self.value >= 10 else f"{self.value:.2f}"
        return f"| {self.part} | {self.what} | {self.database} | {value} {self.unit} | {self.note} |"


def best_of(figures: list[Figure]) -> list[Figure]:
    """Merge repeated figures (same part, what, database): the best value, noting all of them."""
    merged: dict[tuple[str, str, str], list[Figure]] = {}
    for f in figures:
        merged.setdefault((f.part, f.what, f.database), []).append(f)
    out = []
    for same in merged.values():
        best = max(same, key=lambda f: f.value)  # only rates are repeated: higher is better
        if len(same) > 1:
            runs = f"best of {len(same)} ({', '.join(f'{f.value:,.0f}' for f in same)})"
            note = f"{runs}; {best.note}" if best.note else runs
            best = Figure(best.part, best.what, best.database, best.value, best.unit, note)
        out.append(best)
    return out
