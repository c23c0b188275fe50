"""A run merged with its reruns: for each of its levels the best final result any of them got, and whose."""

from __future__ import annotations

from collections import Counter
from typing import Any, TypedDict

from sqlalchemy import select
from sqlalchemy.orm import Session

from packsolve.db.models import Attempt, Run
from packsolve.figures.par2 import par2, par2_limit
from packsolve.outcome import PENDING, SUCCESS, SUCCESS_VALUES, Status
from packsolve.report.columns import name_cell
from packsolve.report.metrics import rounded
from packsolve.report.text import short_message

_NOT_FINAL = PENDING


def reruns_of(session: Session, run: Run) -> list[Run]:
    """Return the reruns of run, and theirs, oldest first ([] if it has none)."""
    found: list[Run] = []
    frontier = [run.id]
    while frontier:
        children = list(session.scalars(select(Run).where(Run.parent_id.in_(frontier)).order_by(Run.id)))
        found += children
        frontier = [c.id for c in children]
    return sorted(found, key=lambda r: r.id)


def _better(new: MergedLevel, old: MergedLevel) -> bool:
    """Return True if new is the better final result: decided beats not, then faster, then later."""
    new_decided, old_decided = new["status"] in SUCCESS_VALUES, old["status"] in SUCCESS_VALUES
    if new_decided != old_decided:
        return new_decided
    if new_decided:
        return (new["wall_s"] or 0.0) < (old["wall_s"] or 0.0)
    return new["status"] not in _NOT_FINAL  # a later final attempt says more than an earlier failure


class MergedLevel(TypedDict):
    """A level's best result across a run and its reruns, the run that got it, and how many runs tried it."""

    level: str
    level_hash: str
    kind: str
    status: str
    wall_s: float | None
    nodes: int | None
    message: str | None
    run: int
    heuristic: str
    par2_s: float | None
    tries: int


class FamilyRun(TypedDict):
    """The run or one of its reruns, and for how many levels it got the best result."""

    run: int
    label: str | None
    heuristic: str
    time_limit: float | None
    cpu_limit: float | None
    parent: int | None
    best_for: int


class Alone(TypedDict):
    """What the run got by itself, before its reruns."""

    solved: int
    decided: int
    par2_s: float  # over the run's own results, at its own time limit


class Merged(TypedDict):
    """`report summary --with-reruns`: the run merged with its reruns, level by level."""

    run: int
    label: str | None
    reruns: list[int]
    runs: list[FamilyRun]
    total: int
    solved: int
    decided: int
    counts: dict[str, int]
    par2_s: float
    before: Alone
    levels: list[MergedLevel]


def merged_view(session: Session, run: Run) -> Merged:
    """Return run merged with its reruns as a JSON-ready dict (fields in docs/reports.md).

    Each level of run gets the best final result across run and its reruns
    (decided beats undecided, then the fastest; among failures the latest run's),
    with the run that produced it; figures are over those merged results.
    """
    family = [run, *reruns_of(session, run)]
    runs_by_id = {r.id: r for r in family}
    levels: dict[str, MergedLevel] = {}
    own_par2 = 0.0  # the run's own results' PAR-2, before its reruns
    order = (Attempt.run_id, Attempt.seq)
    cols = (
        Attempt.run_id,
        Attempt.level_hash,
        Attempt.name,
        Attempt.kind,
        Attempt.heuristic,
        Attempt.status,
        Attempt.wall_s,
        Attempt.nodes,
        Attempt.message,
        Attempt.time_limit,
        Attempt.cpu_limit,
    )
    q = select(*cols).where(Attempt.run_id.in_([r.id for r in family])).order_by(*order)
    for row in session.connection().execute(q):
        run_id, h, name, kind, heuristic, status, wall, nodes, message = row[:9]
        limit = par2_limit(runs_by_id[run_id], row)  # the attempt's own limit where it had one
        cell: MergedLevel = {
            "level": name,
            "level_hash": h,
            "kind": kind,
            "status": status,
            "wall_s": rounded(wall),
            "nodes": nodes,
            "message": message,
            "run": run_id,
            "heuristic": heuristic,
            "par2_s": rounded(par2(status, wall, limit)),
            "tries": 1,
        }
        if run_id == run.id:
            own_par2 += cell["par2_s"] or 0.0
        old = levels.get(h)
        if old is None:
            if run_id == run.id:  # a rerun's levels are the run's own; anything else is not merged
                levels[h] = cell
            continue
        tries = old["tries"] + 1
        if _better(cell, old):
            levels[h] = {**cell, "level": old["level"]}
        levels[h]["tries"] = tries
    rows = list(levels.values())
    counts = Counter(r["status"] for r in rows)
    best_for = Counter(r["run"] for r in rows)
    alone = Counter(a for (a,) in session.execute(select(Attempt.status).where(Attempt.run_id == run.id)))
    return {
        "run": run.id,
        "label": run.label,
        "reruns": [r.id for r in family[1:]],
        "runs": [
            {
                "run": r.id,
                "label": r.label,
                "heuristic": r.heuristic,
                "time_limit": r.time_limit,
                "cpu_limit": r.cpu_limit,
                "parent": r.parent_id,
                "best_for": best_for.get(r.id, 0),
            }
            for r in family
        ],
        "total": len(rows),
        "solved": counts.get(Status.SOLVED, 0),
        "decided": sum(counts.get(s, 0) for s in SUCCESS_VALUES),
        "counts": dict(sorted(counts.items())),
        "par2_s": round(sum(r["par2_s"] or 0.0 for r in rows), 3),
        "before": {
            "solved": alone.get(Status.SOLVED, 0),
            "decided": sum(alone.get(s, 0) for s in SUCCESS),
            "par2_s": round(own_par2, 3),
        },
        "levels": rows,
    }


def render_merged(m: Merged, width: int = 100) -> Any:
    """Return a rich renderable: the merged figures, whose results they are, the levels reruns changed."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    title = f"run {m['run']}" + (f" ({m['label']})" if m["label"] else "") + " with its reruns"
    if not m["reruns"]:
        return Text(f"{title}: it has none (`packsolve rerun {m['run']} ...` makes one)")
    t = Table(title=title, show_header=False, title_justify="left")
    t.add_column(style="bold")
    t.add_column()
    t.add_row("solved", f"{m['solved']} of {m['total']} (run {m['run']} alone: {m['before']['solved']})")
    t.add_row("decided", f"{m['decided']} of {m['total']} (run {m['run']} alone: {m['before']['decided']})")
    for status, n in m["counts"].items():
        t.add_row(f"  {status}", str(n))
    # Beside it too: an undecided level takes the latest run's result at its own limit, so the
    # merged PAR-2 may exceed the run's own while more levels are solved.
    t.add_row("PAR-2", f"{m['par2_s']:.2f} s (run {m['run']} alone: {m['before']['par2_s']:.2f} s)")
    for r in m["runs"]:
        who = f"run {r['run']}" + (f" {r['label']}" if r["label"] else "")
        made = "the run" if r["parent"] is None else f"rerun of {r['parent']}"
        t.add_row(f"  {who}", f"{made}, {r['heuristic']}: best result of {r['best_for']} level(s)")
    changed = [lv for lv in m["levels"] if lv["run"] != m["run"]]
    if not changed:
        return Group(t, Text("no level's result came from a rerun"))
    c = Table(
        "level",
        "kind",
        "best result",
        "by run",
        title="levels whose best result came from a rerun",
        title_justify="left",
    )
    for lv in changed:
        wall = "" if lv["wall_s"] is None else f" {lv['wall_s']:.3f}s"
        result = Text(f"{lv['status']}{wall}", style="green" if lv["status"] in SUCCESS_VALUES else "red")
        if lv["message"] and lv["status"] not in SUCCESS_VALUES:
            result.append("\n" + short_message(lv["message"], lv["level"], 40), style="dim")
        c.add_row(
            name_cell(lv["level"]),
            lv["kind"],
            result,
            f"{lv['run']} ({lv['heuristic']})",
        )
    return Group(t, c)
