"""`report cactus`: decided-count against time, one line per run (per heuristic of a run of several side
by side), and a scatter of two runs' times."""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Any, NamedTuple, TypedDict

from sqlalchemy import func, select
from sqlalchemy.orm import Session, aliased

from packsolve.db.models import Attempt, Run
from packsolve.figures.matrix import run_columns
from packsolve.figures.par2 import par2, par2_limit
from packsolve.outcome import SUCCESS_VALUES

FORMATS = (".png", ".svg", ".pdf")
# Times below this are drawn at it: a log axis has no zero, and a level solved in no
# measurable time is still a point on the plot.
FLOOR_S = 1e-4


class CactusLine(TypedDict):
    """One line of a cactus plot: a run's (or, in a run of several heuristics side by side, one of its
    heuristics') sorted wall times of its decided attempts."""

    run: int
    heuristic: str  # the run's, or its column's (`report matrix`'s: kinds' heuristics joined by |)
    label: str
    decided: int
    times: list[float]  # rounded as metrics.rounded does


class ScatterPoint(TypedDict):
    """A level both runs ran: its PAR-2 score in each, and its status in each."""

    level: str
    level_hash: str
    x: float
    y: float
    x_status: str
    y_status: str


class Scatter(TypedDict):
    """Two runs' per-level PAR-2 scores against each other."""

    x_run: int
    x_label: str
    y_run: int
    y_label: str
    points: list[ScatterPoint]


def cactus_data(session: Session, runs: list[Run]) -> list[CactusLine]:
    """Return per run the sorted wall times of its decided attempts (the cactus line's points); a run of
    several heuristics side by side gives a line per heuristic (per `report matrix` column)."""
    out: list[CactusLine] = []
    for run in runs:
        split = run_columns(run.heuristic, _tried(session, run.id))
        if split is None:
            one = select(Attempt.wall_s).where(Attempt.run_id == run.id, Attempt.status.in_(SUCCESS_VALUES))
            out.append(_line(run, run.heuristic, [w or 0.0 for (w,) in session.execute(one)]))
            continue
        times: list[list[float]] = [[] for _ in split.names]
        q = select(Attempt.kind, Attempt.heuristic, Attempt.wall_s).where(
            Attempt.run_id == run.id, Attempt.status.in_(SUCCESS_VALUES)
        )
        for kind, heuristic, wall in session.execute(q):
            times[split.of[kind, heuristic]].append(wall or 0.0)
        out += [_line(run, name, mine) for name, mine in zip(split.names, times, strict=True)]
    return out


def _tried(session: Session, run_id: int) -> list[tuple[str, str]]:
    """Return the (kind, heuristic) pairs a run tried, in the order first met (one row per pair)."""
    first = func.min(Attempt.seq)
    q = (
        select(Attempt.kind, Attempt.heuristic)
        .where(Attempt.run_id == run_id)
        .group_by(Attempt.kind, Attempt.heuristic)
        .order_by(first, func.min(Attempt.id))
    )
    return [(kind, heuristic) for kind, heuristic in session.execute(q)]


def _line(run: Run, heuristic: str, times: list[float]) -> CactusLine:
    return {
        "run": run.id,
        "heuristic": heuristic,
        "label": _label(run, heuristic),
        "decided": len(times),
        "times": [round(t, 4) for t in sorted(times)],
    }


class _Own(NamedTuple):
    """An attempt's own limits (None: its run's), as par2_limit reads them."""

    time_limit: float | None
    cpu_limit: float | None


def scatter_data(session: Session, a: Run, b: Run, limit: int | None = None) -> Scatter:
    """Return the PAR-2 scores of the levels two runs share (unsolved ones sit at twice the limit).

    limit keeps the first levels of a in pack order: the join is made in SQL, so two runs of
    200,000 attempts each give a page its few thousand points without reading the rest.
    """
    other = aliased(Attempt)
    q = (
        select(
            Attempt.level_hash,
            Attempt.name,
            Attempt.status,
            Attempt.wall_s,
            other.status,
            other.wall_s,
            # Each attempt's own limits where it had them (a relative run's): par2_limit takes them first.
            Attempt.time_limit,
            Attempt.cpu_limit,
            other.time_limit,
            other.cpu_limit,
        )
        .join(other, (other.level_hash == Attempt.level_hash) & (other.run_id == b.id))
        .where(Attempt.run_id == a.id)
        .order_by(Attempt.seq)
        .limit(limit)
    )
    points: list[ScatterPoint] = []
    for h, name, sa, wa, sb, wb, ta, ca, tb, cb in session.execute(q):
        la, lb = par2_limit(a, _Own(ta, ca)), par2_limit(b, _Own(tb, cb))
        pa, pb = par2(sa, wa, la), par2(sb, wb, lb)
        if pa is not None and pb is not None:  # rounded as metrics.rounded does
            points.append(
                ScatterPoint(
                    level=name, level_hash=h, x=round(pa, 4), y=round(pb, 4), x_status=sa, y_status=sb
                )
            )
    return {"x_run": a.id, "x_label": _label(a), "y_run": b.id, "y_label": _label(b), "points": points}


def _label(run: Run, heuristic: str | None = None) -> str:
    return f"run {run.id}" + (f" {run.label}" if run.label else "") + f" ({heuristic or run.heuristic})"


def _figure(size: tuple[float, float] = (7, 4.5)) -> Any:
    # The object API with the Agg canvas: no pyplot global state, no display needed.
    from matplotlib.figure import Figure

    return Figure(figsize=size, dpi=100, layout="constrained")


def cactus_figure(data: list[CactusLine]) -> Any:
    """Return a matplotlib Figure: x the time limit one would need, y how many levels are decided by then.

    A run with nothing decided is named in the legend; when no run decided
    anything the plot says so in words instead of drawing empty axes.
    """
    fig = _figure((9, 4.5))  # room for the legend at the right
    ax = fig.add_subplot()
    ax.set_title("cactus plot: levels decided within a time")
    if not any(line["times"] for line in data):
        names = ", ".join(line["label"] for line in data) or "no run"
        ax.text(
            0.5,
            0.5,
            f"nothing decided in {names}:\nno level was solved or proved unsolvable",
            ha="center",
            va="center",
            fontsize=12,
            transform=ax.transAxes,
            wrap=True,
        )
        ax.set_axis_off()
        return fig
    for line in data:
        times = [max(t, FLOOR_S) for t in line["times"]]
        if times:
            ax.step([times[0], *times], [0, *range(1, len(times) + 1)], where="post", label=line["label"])
        else:
            ax.plot([], [], label=f"{line['label']} (none decided)")
    every = [max(t, FLOOR_S) for line in data for t in line["times"]]
    if max(every) / min(every) > 20:
        ax.set_xscale("log")
        ax.set_xlabel("wall time per level (s, log scale)")
    else:
        ax.set_xlabel("wall time per level (s)")
    ax.set_ylabel("levels decided")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3, which="both")
    # Beside the axes, never over them: a legend inside hid the line of a run it sat on.
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1), borderaxespad=0, fontsize="small")
    return fig


def scatter_figure(data: Scatter) -> Any:
    """Return a matplotlib Figure of one point per level, log axes: x one run's PAR-2 time, y the other's.

    The diagonal marks equal times: points under it are levels the second run
    did faster. Levels one run did not decide sit at twice its time limit.
    """
    fig = _figure((8, 5.5))  # square axes (the diagonal at 45 degrees) and the legend beside them
    ax = fig.add_subplot()
    pts = data["points"]
    ax.set_title("per-level time: under the diagonal the second run is faster")
    if not pts:
        ax.text(
            0.5,
            0.5,
            "no level was run by both runs",
            ha="center",
            va="center",
            fontsize=12,
            transform=ax.transAxes,
        )
        ax.set_axis_off()
        return fig
    xs = [max(p["x"], FLOOR_S) for p in pts]
    ys = [max(p["y"], FLOOR_S) for p in pts]
    lo, hi = min(xs + ys) / 1.5, max(xs + ys) * 1.5
    ax.plot([lo, hi], [lo, hi], color="grey", linewidth=0.9, linestyle="--", label="same time")
    for decided, marker, label in ((True, "o", "decided by both"), (False, "x", "undecided by one or both")):
        both = [p["x_status"] in SUCCESS_VALUES and p["y_status"] in SUCCESS_VALUES for p in pts]
        sel = [i for i, b in enumerate(both) if b == decided]
        if sel:
            ax.scatter([xs[i] for i in sel], [ys[i] for i in sel], marker=marker, label=label, alpha=0.7)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_aspect("equal", adjustable="box")
    ax.set_xlabel(f"{data['x_label']}: wall s (PAR-2)")
    ax.set_ylabel(f"{data['y_label']}: wall s (PAR-2)")
    ax.grid(True, alpha=0.3, which="both")
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1), borderaxespad=0, fontsize="small")
    return fig


def time_text(seconds: float) -> str:
    """Return a time for a table: 4 decimals under a second, else 4 significant digits (at least one
    decimal) with thousands separated; '<0.0001' for what 4 decimals would show as 0."""
    if seconds < 0.0001:
        return "<0.0001"
    if seconds < 1:
        return f"{seconds:.4f}"
    return f"{seconds:,.{max(1, 3 - int(math.log10(seconds)))}f}"


def save(fig: Any, path: str | Path) -> Path:
    """Write the figure as PNG, SVG or PDF by the file's suffix; raise ValueError for another suffix."""
    path = Path(path)
    if path.suffix.lower() not in FORMATS:
        raise ValueError(f"{path.name}: the plot file must end in {', '.join(FORMATS)}")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format=path.suffix.lower()[1:])
    return path


def to_svg(fig: Any) -> str:
    """Return the figure as SVG text (for inlining in HTML)."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg")
    return buf.getvalue()
