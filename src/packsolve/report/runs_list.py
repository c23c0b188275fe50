"""`packsolve runs`: the runs in a database, newest first, with what each ran and how far it got."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, NotRequired, TypedDict

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from packsolve.db.local_runs import shown_state
from packsolve.db.models import RUN_FIGURES, Run, as_utc
from packsolve.db.tables import PENDING_VALUES
from packsolve.db.workers import db_now
from packsolve.outcome import SUCCESS_VALUES, Status
from packsolve.report.export import iso
from packsolve.report.progress import duration
from packsolve.report.text import short_name
from packsolve.runstate import ShownState


class RunRow(TypedDict):
    """`packsolve runs`: one run, its state, packs, heuristics and counts."""

    run: int
    label: str | None
    state: ShownState
    mode: str
    parent: int | None
    packs: list[str]
    heuristic: str
    heuristics: list[str]
    solved: int
    decided: int
    done: int
    total: int
    created_at: str | None
    finished_at: str | None
    duration_s: float | None
    # Not from run_rows: the dashboard's list adds a going run's rate and ETA (report.progress).
    rate_per_s: NotRequired[float]
    eta_s: NotRequired[float | None]


def run_rows(
    session: Session, limit: int | None = 20, now: datetime | None = None, ids: Sequence[int] | None = None
) -> list[RunRow]:
    """Return one JSON-ready dict per run, newest first (the newest `limit`; None: all); [] if none.

    ids, if given, names the runs (limit is then ignored).
    """
    now = now or db_now(session)  # the database server's clock: runs were stamped in it
    query = select(Run).order_by(Run.id.desc())
    if ids is not None:
        query, limit = query.where(Run.id.in_(list(ids))), None
    runs = list(session.scalars(query.limit(limit) if limit else query))
    ids = [r.id for r in runs]
    counts: dict[int, dict[str, int]] = {i: {} for i in ids}
    heuristics: dict[int, set[str]] = {i: set() for i in ids}
    for i in range(0, len(ids), 500):
        part = ids[i : i + 500]
        # run_figures: a few rows per run, kept as attempts change (never the runs' attempts themselves).
        f = RUN_FIGURES.c
        grouped = (
            select(f.run_id, f.status, f.heuristic, func.sum(f.attempts))
            .where(f.run_id.in_(part))
            .group_by(f.run_id, f.status, f.heuristic)
            .having(func.sum(f.attempts) > 0)
        )
        for run_id, status, heuristic, n in session.execute(grouped):
            counts[run_id][status] = counts[run_id].get(status, 0) + int(n)
            if status != Status.INVALID:
                heuristics[run_id].add(heuristic)
    rows: list[RunRow] = []
    for run in runs:
        c = counts[run.id]
        total = sum(c.values())
        created, finished = as_utc(run.created_at), as_utc(run.finished_at)
        took = ((finished or now) - created).total_seconds() if created else None
        rows.append(
            {
                "run": run.id,
                "label": run.label,
                "state": shown_state(run),
                "mode": run.mode,
                "parent": run.parent_id,
                "packs": _packs(run),
                "heuristic": run.heuristic,
                "heuristics": sorted(heuristics[run.id]),
                "solved": c.get(Status.SOLVED, 0),
                "decided": sum(c.get(s, 0) for s in SUCCESS_VALUES),
                "done": total - sum(c.get(s, 0) for s in PENDING_VALUES),
                "total": total,
                "created_at": iso(run.created_at),
                "finished_at": iso(run.finished_at),
                "duration_s": None if took is None else round(took, 1),
            }
        )
    return rows


def _packs(run: Run) -> list[str]:
    """Return what a run ran: the paths given to solve/submit, or 'rerun of N' for a rerun."""
    options = run.options or {}
    if run.parent_id is not None or "rerun_of" in options:
        return [f"rerun of {options.get('rerun_of', run.parent_id)}"]
    return [str(p) for p in options.get("paths", [])]


def render_runs(rows: list[RunRow], where: str) -> Any:
    """Return a rich table of run rows that fits 80 columns (or a line saying there is none)."""
    from rich import box
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    if not rows:
        return Text(f"no runs yet in {where}: start one with `packsolve solve PACK`")
    t = Table(
        title=f"runs in {where}",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    # Nothing is ever cut: long names fold onto more lines; state and mode, date and time share a cell.
    for name in ("run", "label", "state\nmode", "packs", "heuristic", "solved", "created\n(UTC)", "took"):
        right = name in ("run", "solved", "took")
        fixed = name in ("run", "solved", "took")
        t.add_column(
            name,
            justify="right" if right else "left",
            overflow="fold",
            no_wrap=fixed,
            ratio=None if fixed or "\n" in name else 1,
        )
    for r in rows:
        state_style = _STYLES.get(r["state"], "cyan")
        packs = ", ".join(short_name(p, 24) for p in r["packs"]) or "—"
        took = duration(r["duration_s"]) + ("" if r["finished_at"] else "…")
        created = (r["created_at"] or "")[:16].replace("T", "\n")
        state = Text(r["state"], style=state_style) + Text("\n" + r["mode"], style="dim")
        t.add_row(
            str(r["run"]),
            Text(r["label"] or ""),
            state,
            Text(packs),
            Text(r["heuristic"]),
            f"{r['solved']}/{r['total']}",
            created,
            took,
        )
    gone = [r["run"] for r in rows if r["state"] == ShownState.INTERRUPTED]
    notes = [
        Text(
            f"run {n} is interrupted (its solve process is gone): `packsolve resume {n}` runs the rest",
            style="yellow",
        )
        for n in gone
    ]
    return Group(t, *notes) if notes else t


_STYLES = {
    ShownState.FINISHED: "green",
    ShownState.CANCELLED: "yellow",
    ShownState.UNSENT: "red",
    ShownState.SENDING: "yellow",
    ShownState.INTERRUPTED: "red",
}
