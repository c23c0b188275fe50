"""`packsolve show LEVEL`: find a level by path, name or hash; its best solution and its history."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, TypedDict, cast

from sqlalchemy import select
from sqlalchemy.orm import Session, undefer

from packsolve.db.models import Attempt, LevelRow, Part, Run
from packsolve.db.parts import of_its_attempt, of_its_claim
from packsolve.errors import LevelNotFound
from packsolve.figures.measures import measured_shown
from packsolve.outcome import Status
from packsolve.report.export import iso
from packsolve.report.metrics import rounded
from packsolve.report.text import short_message, visible, visible_output

_HEX = re.compile(r"[0-9a-f]{4,64}")


def _from_file(ref: str, follow_links: bool = False) -> list[tuple[str, str]]:
    """Return (name, hash) of the levels of the file ref names ('PATH' or 'PATH:LINE'), [] if none."""
    from packsolve.levels import read_levels

    path, line = ref, None
    if not Path(ref).exists() and re.fullmatch(r".+:\d+", ref):
        path, line = ref.rsplit(":", 1)
    if not Path(path).is_file():
        return []
    levels = [(lv.name, lv.hash) for lv in read_levels([path], follow_links=follow_links)]
    if line is not None:
        levels = [(n, h) for n, h in levels if n.endswith(f":{line}")]
    return levels


def find_level(
    session: Session, ref: str, follow_links: bool = False
) -> tuple[LevelRow | None, dict[str, Any] | None]:
    """Return (the level's row or None, the level read from a file or None); raise LevelNotFound if none.

    ref is tried as a level file (PATH or PATH:LINE), a hash or unique hash
    prefix (4+ hex digits), then a level name as recorded in runs. A file linked from outside its
    directory is read only with follow_links.
    """
    found = _from_file(ref, follow_links)
    if len(found) > 1:
        names = ", ".join(n for n, _ in found[:5])
        raise LevelNotFound(f"{ref} holds {len(found)} levels; name one as PATH:LINE ({names}, ...)")
    if found:
        name, h = found[0]
        return session.get(LevelRow, h), {"name": name, "hash": h, "path": ref}
    if _HEX.fullmatch(ref.lower()):
        rows = session.scalars(select(LevelRow).where(LevelRow.hash.like(ref.lower() + "%")).limit(6)).all()
        if len(rows) > 1:
            raise LevelNotFound(
                f"hash prefix {ref} is ambiguous: {', '.join(r.hash[:12] for r in rows)}, ..."
            )
        if rows:
            return rows[0], None
    row = session.scalars(select(LevelRow).where(LevelRow.name == ref).limit(1)).first()
    if row is None:
        found_hash = session.scalars(select(Attempt.level_hash).where(Attempt.name == ref).limit(1)).first()
        row = session.get(LevelRow, found_hash) if found_hash else None
    if row is None:
        raise LevelNotFound(f"no level file, hash or level name {ref!r} (names are as listed in reports)")
    return row, None


class Attempted(TypedDict):
    """One attempt at a level, in any run."""

    run: int
    label: str | None
    level: str
    heuristic: str
    status: str
    length: int | None
    # The measured figures (figures.measures.MEASURED; a later one is in the row without being named here).
    nodes: int | None
    wall_s: float | None
    cpu_s: float | None
    peak_rss_mb: float | None
    worker: str | None
    time_limit: float | None  # the attempt's own where it had one (a relative run's), else its run's
    cpu_limit: float | None
    relative: dict[str, str] | None  # the run's relative limits ({"time_limit": "3x,1s"}), if any
    finished_at: str | None
    message: str | None
    # What the solver printed beyond its answer, as kept (head, cut marker, tail); null if nothing.
    stdout: str | None
    stderr: str | None
    # A level split into parts (issue 38): each part's run, a best-of-all part once per round; null if
    # the attempt ran whole. The attempt's own figures are the level's: its parts' nodes and CPU summed.
    parts: list[PartShown] | None


class PartShown(TypedDict):
    """One run of one part of a split level."""

    part: int  # 1-based, of parts
    parts: int
    round: int
    window: list[int] | None  # best of all: the iteration bounds the round searched
    status: str
    nodes: int | None
    wall_s: float | None
    cpu_s: float | None
    resume: int | None  # the first bound it left unsearched
    worker: str | None
    message: str | None


class Best(TypedDict):
    """A level's best known solution: the shortest, then the fastest, and the run that found it."""

    run: int
    heuristic: str
    length: int | None
    wall_s: float | None
    solution: Any


class LevelReport(TypedDict):
    """`show LEVEL`: the level, its best known solution and every attempt at it."""

    level: str
    level_hash: str
    kind: str
    data: dict[str, Any]
    best: Best | None
    history: list[Attempted]


def level_report(session: Session, ref: str, follow_links: bool = False) -> LevelReport:
    """Return the level, its best known solution and every attempt at it, as a JSON-ready dict."""
    from packsolve.levels import read_levels

    row, read = find_level(session, ref, follow_links)
    history: list[dict[str, Any]] = []
    split = _parts(session, row.hash) if row is not None else {}
    if row is not None:
        q = (
            select(Attempt, Run)
            .join(Run, Run.id == Attempt.run_id)
            .where(Attempt.level_hash == row.hash)
            .order_by(Attempt.run_id)
            .options(undefer(Attempt.stdout), undefer(Attempt.stderr))
        )
        for a, run in session.execute(q):
            history.append(
                {
                    "run": a.run_id,
                    "label": run.label,
                    "level": a.name,
                    "heuristic": a.heuristic,
                    "status": a.status,
                    "length": a.length,
                    **measured_shown(a),
                    "worker": a.worker,
                    # Its own limits where it had them (a relative run's), else its run's.
                    "time_limit": a.time_limit if a.time_limit is not None else run.time_limit,
                    "cpu_limit": a.cpu_limit if a.cpu_limit is not None else run.cpu_limit,
                    "relative": (run.options or {}).get("relative"),
                    "finished_at": iso(a.finished_at),
                    "message": a.message,
                    "stdout": a.stdout,
                    "stderr": a.stderr,
                    "parts": split.get((a.run_id, a.heuristic)),
                    "solution": json.loads(a.solution) if a.solution is not None else None,
                }
            )
    solved = [h for h in history if h["status"] == Status.SOLVED and h["solution"] is not None]
    # Best: the shortest solution (fewest moves matter to players), then the fastest.
    best = min(
        solved, key=lambda h: (h["length"] is None, h["length"] or 0, h["wall_s"] or 0.0), default=None
    )
    if row is not None:
        data, kind, h, name = json.loads(row.data), row.kind, row.hash, row.name
    else:
        assert read is not None
        file = read["path"].rsplit(":", 1)[0]
        level = next(lv for lv in read_levels([file], follow_links=follow_links) if lv.hash == read["hash"])
        data, kind, h, name = dict(level.data), level.kind, level.hash, level.name
    return {
        "level": name,
        "level_hash": h,
        "kind": kind,
        "data": data,
        "best": None if best is None else cast(Best, {k: best[k] for k in Best.__annotations__}),
        "history": [cast(Attempted, {k: v for k, v in h.items() if k != "solution"}) for h in history],
    }


def _parts(session: Session, level_hash: str) -> dict[tuple[int, str], list[PartShown]]:
    """Return the part runs of every split attempt of the level, per (run, heuristic)."""
    out: dict[tuple[int, str], list[PartShown]] = {}
    query = (
        select(Part)
        .join(Attempt, of_its_attempt())
        .where(Part.level_hash == level_hash, of_its_claim())
        .order_by(Part.run_id, Part.part, Part.round)
    )
    for p in session.scalars(query):
        out.setdefault((p.run_id, p.heuristic), []).append(
            {
                "part": p.part + 1,
                "parts": p.parts,
                "round": p.round,
                "window": None if p.window_lo is None else [p.window_lo, p.window_hi or p.window_lo],
                "status": str(p.status),
                "nodes": p.nodes,
                "wall_s": rounded(p.wall_s),
                "cpu_s": rounded(p.cpu_s),
                "resume": p.resume,
                "worker": p.worker,
                "message": p.message,
            }
        )
    return out


def picture(kind: str, data: dict[str, Any], solution: Any, svg: bool = False) -> str | None:
    """Return the kind's terminal rendering (or SVG) of a level with a solution; None if it cannot."""
    from packsolve.puzzles import get_kind

    try:
        k = get_kind(kind)
        value = k.parse(data)
        return (k.svg if svg else k.render)(value, solution)
    except Exception:
        # An unknown kind, an invalid level or a solution the picture code rejects: no picture.
        return None


def render_level(rep: LevelReport) -> Any:
    """Return a rich renderable: the picture with the best solution, then the history table."""
    from rich.console import Group
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    best = rep["best"]
    pic = picture(rep["kind"], rep["data"], best["solution"] if best else None)
    if pic is None:
        pic = picture(rep["kind"], rep["data"], None) or json.dumps(rep["data"])[:2000]
    caption = (
        f"best: run {best['run']} ({best['heuristic']}), length {best['length']}, {best['wall_s']} s"
        if best
        else "no solution known"
    )
    title = Text(f"{visible(rep['level'])}  {rep['kind']}  {rep['level_hash'][:12]}")
    panel = Panel(Text(pic), title=title, subtitle=caption, expand=False)
    t = Table(title="history", title_justify="left")
    for name in ("run", "heuristic", "status", "length", "wall s", "limit", "nodes", "worker", "finished"):
        t.add_column(name, overflow="fold")
    why = []
    for h in rep["history"]:
        t.add_row(
            str(h["run"]) + (f" {h['label']}" if h["label"] else ""),
            h["heuristic"],
            h["status"],
            str(h["length"] or ""),
            "" if h["wall_s"] is None else f"{h['wall_s']:.3f}",
            _limit_cell(h),
            str(h["nodes"] or ""),
            Text(h["worker"] or ""),
            (h["finished_at"] or "")[:19].replace("T", " "),
        )
        if h["message"]:
            why.append(Text(f"run {h['run']} {h['status']}: {short_message(h['message'], h['level'], 200)}"))
    if not rep["history"]:
        return Group(panel, Text("never attempted in this database"))
    return Group(panel, t, *why, *_part_tables(rep["history"]), *_outputs(rep["history"]))


def _part_tables(history: list[Attempted]) -> list[Any]:
    """Return a table per split attempt: each part's rounds, status at its last, nodes and times summed."""
    from rich.table import Table

    tables = []
    for h in history:
        runs = h.get("parts")
        if not runs:
            continue
        per: dict[int, list[PartShown]] = {}
        for r in runs:
            per.setdefault(r["part"], []).append(r)
        rounds = max(r["round"] for r in runs)
        title = f"run {h['run']} {h['heuristic']}: {runs[0]['parts']} parts, {rounds} round(s)"
        t = Table(title=title, title_justify="left")
        for name in ("part", "rounds", "status", "nodes", "CPU s", "wall s", "worker"):
            t.add_column(name, overflow="fold", justify="left" if name in ("status", "worker") else "right")
        for index, mine in sorted(per.items()):
            last = mine[-1]
            t.add_row(
                str(index),
                str(len(mine)),
                last["status"],
                f"{sum(r['nodes'] or 0 for r in mine):,}",
                f"{sum(r['cpu_s'] or 0.0 for r in mine):.3f}",
                f"{sum(r['wall_s'] or 0.0 for r in mine):.3f}",
                last["worker"] or "",
            )
        tables.append(t)
    return tables


def _limit_cell(h: Attempted) -> str:
    """Return the limit an attempt ran under: "1.5 s (3x)" where its run's was relative, CPU ones marked."""
    relative = h.get("relative") or {}
    parts = []
    for name, value, unit in (("time_limit", h["time_limit"], "s"), ("cpu_limit", h["cpu_limit"], "s CPU")):
        if value is not None:
            given = relative.get(name)
            parts.append(f"{value:.3g} {unit}" + (f" ({given.split(',')[0]})" if given else ""))
    return ", ".join(parts)


def _outputs(history: list[Attempted]) -> list[Any]:
    """Return a panel per attempt and stream with kept output: what the solver printed, as kept."""
    from rich.panel import Panel
    from rich.text import Text

    panels = []
    for h in history:
        for stream in ("stdout", "stderr"):
            kept = h[stream]  # type: ignore[literal-required]
            if kept:
                title = Text(f"run {h['run']} {h['heuristic']} {h['status']}: {stream}")
                # Text, never markup: a program's output shown as printed, its control characters visible.
                panels.append(Panel(Text(visible_output(kept)), title=title, title_align="left"))
    return panels
