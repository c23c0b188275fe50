"""`report cactus`: decided-count against time, one line per run, and a scatter of two runs' times."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from packsolve.db.models import Attempt, Run
from packsolve.report.metrics import SUCCESS_VALUES, par2, rounded

FORMATS = (".png", ".svg")


def cactus_data(session: Session, runs: list[Run]) -> list[dict[str, Any]]:
    """Return per run the sorted wall times of its decided attempts (the cactus line's points)."""
    out = []
    for run in runs:
        q = select(Attempt.wall_s).where(Attempt.run_id == run.id, Attempt.status.in_(SUCCESS_VALUES))
        times = sorted(w or 0.0 for (w,) in session.execute(q))
        out.append(
            {"run": run.id, "label": _label(run), "decided": len(times), "times": [rounded(t) for t in times]}
        )
    return out


def scatter_data(session: Session, a: Run, b: Run) -> dict[str, Any]:
    """Return the PAR-2 scores of the levels two runs share (unsolved ones sit at twice the limit)."""
    runs = {}
    for run in (a, b):
        q = select(Attempt.level_hash, Attempt.name, Attempt.status, Attempt.wall_s).where(
            Attempt.run_id == run.id
        )
        runs[run.id] = {h: (name, par2(s, w, run.time_limit), s) for h, name, s, w in session.execute(q)}
    points = []
    for h, (name, pa, sa) in runs[a.id].items():
        if h in runs[b.id] and pa is not None and runs[b.id][h][1] is not None:
            _, pb, sb = runs[b.id][h]
            points.append(
                {
                    "level": name,
                    "level_hash": h,
                    "x": rounded(pa),
                    "y": rounded(pb),
                    "x_status": sa,
                    "y_status": sb,
                }
            )
    return {"x_run": a.id, "x_label": _label(a), "y_run": b.id, "y_label": _label(b), "points": points}


def _label(run: Run) -> str:
    return f"run {run.id}" + (f" {run.label}" if run.label else "") + f" ({run.heuristic})"


def _figure() -> Any:
    # The object API with the Agg canvas: no pyplot global state, no display needed.
    from matplotlib.figure import Figure

    return Figure(figsize=(7, 4.5), dpi=100, layout="constrained")


def cactus_figure(data: list[dict[str, Any]]) -> Any:
    """Return a matplotlib Figure: x the time limit one would need, y how many levels are decided by then."""
    fig = _figure()
    ax = fig.add_subplot()
    for line in data:
        times = line["times"]
        if times:
            ax.step([0.0, *times], list(range(len(times) + 1)), where="post", label=line["label"])
        else:
            ax.plot([], [], label=f"{line['label']} (none decided)")
    ax.set_xlabel("wall time per level (s)")
    ax.set_ylabel("levels decided")
    ax.set_title("cactus plot")
    ax.grid(True, alpha=0.3)
    if any(line["times"] and line["times"][-1] > 0 and line["times"][0] > 0 for line in data):
        ax.set_xscale("log")
    ax.legend(loc="lower right")
    return fig


def scatter_figure(data: dict[str, Any]) -> Any:
    """Return a matplotlib Figure of one point per level: x one run's PAR-2 time, y the other's."""
    fig = _figure()
    ax = fig.add_subplot()
    pts = data["points"]
    for decided, marker, label in ((True, "o", "decided by both"), (False, "x", "unsolved by one or both")):
        sel = [
            p for p in pts if (p["x_status"] in SUCCESS_VALUES and p["y_status"] in SUCCESS_VALUES) == decided
        ]
        ax.scatter([p["x"] for p in sel], [p["y"] for p in sel], marker=marker, label=label, alpha=0.7)
    top = max([p["x"] for p in pts] + [p["y"] for p in pts] + [1e-3])
    ax.plot([0, top], [0, top], color="grey", linewidth=0.8, linestyle="--")
    ax.set_xlabel(f"{data['x_label']}: wall s (PAR-2)")
    ax.set_ylabel(f"{data['y_label']}: wall s (PAR-2)")
    ax.set_title("per-level times: below the diagonal the second run is faster")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left")
    return fig


def save(fig: Any, path: str | Path) -> Path:
    """Write the figure as PNG or SVG by the file's suffix; raise ValueError for another suffix."""
    path = Path(path)
    if path.suffix.lower() not in FORMATS:
        raise ValueError(f"{path.name}: the plot file must end in .png or .svg")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format=path.suffix.lower()[1:])
    return path


def to_svg(fig: Any) -> str:
    """Return the figure as SVG text (for inlining in HTML)."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg")
    return buf.getvalue()
