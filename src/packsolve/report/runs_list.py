"""`packsolve runs`: the runs in a database, newest first, with what each ran and how far it got."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from packsolve.db.local_runs import solver_alive
from packsolve.db.models import Attempt, Run
from packsolve.db.tables import PENDING_VALUES
from packsolve.db.workers import db_now
from packsolve.report.export import iso
from packsolve.report.metrics import SUCCESS_VALUES
from packsolve.report.progress import duration
from packsolve.report.text import short_name


def _aware(dt: datetime | None) -> datetime | None:
    return None if dt is None else (dt if dt.tzinfo else dt.replace(tzinfo=UTC))


def run_rows(
    session: Session, limit: int | None = 20, now: datetime | None = None, ids: Sequence[int] | None = None
) -> list[dict[str, Any]]:
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
        grouped = (
            select(Attempt.run_id, Attempt.status, Attempt.heuristic, func.count())
            .where(Attempt.run_id.in_(part))
            .group_by(Attempt.run_id, Attempt.status, Attempt.heuristic)
        )
        for run_id, status, heuristic, n in session.execute(grouped):
            counts[run_id][status] = counts[run_id].get(status, 0) + n
            if status != "invalid":
                heuristics[run_id].add(heuristic)
    rows = []
    for run in runs:
        c = counts[run.id]
        total = sum(c.values())
        created, finished = _aware(run.created_at), _aware(run.finished_at)
        took = ((finished or now) - created).total_seconds() if created else None
        rows.append(
            {
                "run": run.id,
                "label": run.label,
                "state": _state(run),
                "mode": run.mode,
                "parent": run.parent_id,
                "packs": _packs(run),
                "heuristic": run.heuristic,
                "heuristics": sorted(heuristics[run.id]),
                "solved": c.get("solved", 0),
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
    try:
        options = json.loads(run.options or "{}")
    except ValueError:
        options = {}
    if run.parent_id is not None or "rerun_of" in options:
        return [f"rerun of {options.get('rerun_of', run.parent_id)}"]
    return [str(p) for p in options.get("paths", [])]


def render_runs(rows: list[dict[str, Any]], where: str) -> Any:
    """Return a rich table of run rows that fits 80 columns (or a line saying there is none)."""
    from rich import box
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    if not rows:
        return Text(f"no runs yet in {where}: start one with `packsolve solve PACK`")
    t = Table(title=f"runs in {where}", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False,
              collapse_padding=True)  # fmt: skip
    # Nothing is ever cut: long names fold onto more lines; state and mode, date and time share a cell.
    for name in ("run", "label", "state\nmode", "packs", "heuristic", "solved", "created\n(UTC)", "took"):
        right = name in ("run", "solved", "took")
        fixed = name in ("run", "solved", "took")
        t.add_column(name, justify="right" if right else "left", overflow="fold", no_wrap=fixed,
                     ratio=None if fixed or "\n" in name else 1)  # fmt: skip
    for r in rows:
        state_style = _STYLES.get(r["state"], "cyan")
        packs = ", ".join(short_name(p, 24) for p in r["packs"]) or "—"
        took = duration(r["duration_s"]) + ("" if r["finished_at"] else "…")
        created = (r["created_at"] or "")[:16].replace("T", "\n")
        state = Text(r["state"], style=state_style) + Text("\n" + r["mode"], style="dim")
        t.add_row(
            str(r["run"]), Text(r["label"] or ""), state, Text(packs), Text(r["heuristic"]),
            f"{r['solved']}/{r['total']}", created, took,
        )  # fmt: skip
    gone = [r["run"] for r in rows if r["state"] == "interrupted"]
    notes = [
        Text(f"run {n} is interrupted (its solve process is gone): `packsolve resume {n}` runs the rest",
             style="yellow")
        for n in gone
    ]  # fmt: skip
    return Group(t, *notes) if notes else t


_STYLES = {
    "finished": "green",
    "cancelled": "yellow",
    "unsent": "red",
    "sending": "yellow",
    "interrupted": "red",
}


def _state(run: Any) -> str:
    """Return the state `runs` shows.

    A distributed run not sent in full is `unsent` (its submit failed: resume or
    delete it) or `sending` (its submit is at work, or was killed). A local run
    whose solve process on this machine is gone (killed, crashed) is `interrupted`.
    """
    if run.finished_at is not None and run.state != "cancelled":
        return "finished"
    if run.finished_at is None and solver_alive(run) is False:
        return "interrupted"
    if run.mode == "distributed" and run.sent_at is None and run.state == "running":
        return "unsent" if run.send_error else "sending"
    return str(run.state)
