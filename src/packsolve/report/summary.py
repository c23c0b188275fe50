"""`report summary`: solved X of Y, counts per status, CPU and wall time of one run."""

from __future__ import annotations

import statistics
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from packsolve.db.models import Attempt, Run
from packsolve.db.queries import status_counts
from packsolve.outcome import PENDING, Status
from packsolve.report.export import iso


def run_summary(session: Session, run: Run) -> dict[str, Any]:
    """Return the summary of run as a JSON-ready dict (documented fields, stable for scripts)."""
    counts = status_counts(session, run.id)
    rows = session.execute(
        select(Attempt.status, Attempt.wall_s, Attempt.cpu_s).where(Attempt.run_id == run.id)
    ).all()
    walls = [w for s, w, _ in rows if w is not None and s not in (Status.INVALID.value,)]
    cpu = sum(c for _, _, c in rows if c is not None)
    total = sum(counts.values())
    pending = sum(counts.get(s.value, 0) for s in PENDING)
    return {
        "run": run.id,
        "label": run.label,
        "mode": run.mode,
        "state": run.state if run.finished_at is None or run.state == "cancelled" else "finished",
        "heuristic": run.heuristic,
        "time_limit": run.time_limit,
        "node_limit": run.node_limit,
        "memory_limit_mb": run.memory_limit_mb,
        "host": run.host,
        "version": run.version,
        "created_at": iso(run.created_at),
        "finished_at": iso(run.finished_at),
        "total": total,
        "done": total - pending,
        "solved": counts.get(Status.SOLVED.value, 0),
        "counts": {s.value: counts.get(s.value, 0) for s in Status if counts.get(s.value, 0)},
        "cpu_s_total": round(cpu, 3),
        "wall_s_median": round(statistics.median(walls), 4) if walls else None,
        "wall_s_max": round(max(walls), 4) if walls else None,
    }


def render_summary(s: dict[str, Any]) -> Any:
    """Return a rich renderable of a summary dict."""
    from rich.table import Table

    title = f"run {s['run']}" + (f" ({s['label']})" if s["label"] else "")
    t = Table(title=title, show_header=False, title_justify="left")
    t.add_column(style="bold")
    t.add_column()
    t.add_row("solved", f"{s['solved']} of {s['total']}")
    t.add_row("state", f"{s['state']} ({s['done']}/{s['total']} final)")
    for status, n in s["counts"].items():
        t.add_row(f"  {status}", str(n))
    t.add_row("heuristic", s["heuristic"])
    limits = []
    if s["time_limit"] is not None:
        limits.append(f"{s['time_limit']:g} s")
    if s["node_limit"] is not None:
        limits.append(f"{s['node_limit']} nodes")
    if s["memory_limit_mb"] is not None:
        limits.append(f"{s['memory_limit_mb']} MB")
    t.add_row("limits", ", ".join(limits) or "none")
    t.add_row("total CPU", f"{s['cpu_s_total']:.2f} s")
    if s["wall_s_median"] is not None:
        t.add_row("wall median / max", f"{s['wall_s_median']:.3f} s / {s['wall_s_max']:.3f} s")
    t.add_row("host, version", f"{s['host']}, packsolve {s['version']}")
    return t
