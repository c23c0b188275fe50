"""`report curve`: time and nodes against level size, per kind — the curve a designer orders a pack by.

One row per (kind, size) over the run's attempts that ran: how many levels, how many were decided,
and the median and largest wall time and node count. Sizes are the kind's own measure (cells,
squares, tiles: `packsolve kinds`), so sizes and nodes are only compared within a kind.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from packsolve.db.models import Attempt, LevelRow, Run
from packsolve.outcome import NOT_RUN_VALUES, SUCCESS_VALUES
from packsolve.report.metrics import rounded

# Attempts whose wall time is under this are drawn at it: a log axis has no zero.
FLOOR_S = 1e-4


@dataclass(frozen=True)
class CurvePoint:
    """The attempts of one kind at one level size."""

    kind: str
    size: int
    levels: int
    decided: int
    wall_s_median: float | None
    wall_s_max: float | None
    nodes_median: float | None
    nodes_max: int | None


@dataclass(frozen=True)
class Curve:
    """A run's size curve: its points ordered by kind, then size."""

    run: int
    label: str
    points: list[CurvePoint]

    def as_json(self) -> dict[str, Any]:
        """Return the one JSON document `report curve --format json` prints."""
        return {"run": self.run, "label": self.label, "points": [asdict(p) for p in self.points]}


def size_curve(session: Session, run: Run, kind: str | None = None) -> Curve:
    """Return the run's attempts that ran, grouped by kind and level size (of one kind, if given)."""
    q = (
        select(Attempt.kind, LevelRow.size, Attempt.status, Attempt.wall_s, Attempt.nodes)
        .join(LevelRow, LevelRow.hash == Attempt.level_hash)
        .where(Attempt.run_id == run.id, Attempt.status.not_in(NOT_RUN_VALUES))
    )
    if kind is not None:
        q = q.where(Attempt.kind == kind)
    groups: dict[tuple[str, int], list[tuple[str, float | None, int | None]]] = defaultdict(list)
    for k, size, status, wall, nodes in session.execute(q):
        groups[(k, size or 0)].append((status, wall, nodes))
    points = [_point(k, size, rows) for (k, size), rows in sorted(groups.items())]
    label = f"run {run.id}" + (f" {run.label}" if run.label else "")
    return Curve(run.id, label, points)


def _point(kind: str, size: int, rows: list[tuple[str, float | None, int | None]]) -> CurvePoint:
    walls = [w for _, w, _ in rows if w is not None]
    nodes = [n for _, _, n in rows if n is not None]
    return CurvePoint(
        kind=kind,
        size=size,
        levels=len(rows),
        decided=sum(1 for status, _, _ in rows if status in SUCCESS_VALUES),
        wall_s_median=rounded(statistics.median(walls)) if walls else None,
        wall_s_max=rounded(max(walls)) if walls else None,
        nodes_median=statistics.median(nodes) if nodes else None,
        nodes_max=max(nodes) if nodes else None,
    )


def curve_figure(curve: Curve) -> Any:
    """Return a matplotlib Figure: per kind, median (line) and largest (dots) wall time against size."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kinds = sorted({p.kind for p in curve.points})
    # Constrained layout keeps the title, the panels' titles and the outside legends apart.
    fig, axes = plt.subplots(
        len(kinds) or 1, 1, figsize=(7, 2.6 * max(1, len(kinds))), squeeze=False, layout="constrained"
    )
    for ax, kind in zip(axes[:, 0], kinds, strict=False):
        mine = [p for p in curve.points if p.kind == kind and p.wall_s_median is not None]
        sizes = [p.size for p in mine]
        ax.plot(sizes, [max(FLOOR_S, p.wall_s_median or 0) for p in mine], marker="o", label="median")
        ax.plot(sizes, [max(FLOOR_S, p.wall_s_max or 0) for p in mine], "x", label="slowest")
        ax.set_yscale("log")
        ax.set_title(kind)
        ax.set_xlabel("level size")
        ax.set_ylabel("wall s")
        ax.grid(True, which="both", alpha=0.3)
        # Outside the axes: a legend inside would cover the points of the largest sizes.
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    fig.suptitle(f"{curve.label}: time against level size")
    return fig
