"""`report html`: one self-contained HTML file: summaries, plots, hardest levels, levels with pictures.

This module gathers the figures; templates/report.html lays them out (Jinja2, autoescaped).
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from itertools import zip_longest
from pathlib import Path
from typing import Any, cast

from markupsafe import Markup
from sqlalchemy import select
from sqlalchemy.orm import Session

from packsolve import __version__
from packsolve.db.models import Attempt, LevelRow, Run
from packsolve.outcome import Status
from packsolve.report.cactus import cactus_data, cactus_figure, scatter_data, scatter_figure, to_svg
from packsolve.report.compare import ComparedRow, Footer, compare_runs, speedup_text
from packsolve.report.failures import failure_groups
from packsolve.report.hardest import hardest_in_run
from packsolve.report.jinja import environment
from packsolve.report.merged import Merged, merged_view
from packsolve.report.show import picture
from packsolve.report.summary import Summary, relative_text, run_summary

STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222;max-width:1400px}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}
th{background:#f0f0f0}td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.msg{max-width:32em;color:#555;font-size:13px}td.cmd{font-family:monospace;font-size:12px;white-space:nowrap}
td.nw{white-space:nowrap}tr.rerun td:first-child{border-left:4px solid #1e88e5}
.side{display:flex;flex-wrap:wrap;gap:0 3em;align-items:flex-start}.side h3{margin-top:0.6em}
.solved,.no_solution{background:#e8f5e9}.timeout,.memout,.error,.wrong,.lost{background:#ffebee}
.cancelled,.invalid{background:#f5f5f5}
.warn{color:#a15c00}figure{display:inline-block;margin:1em;vertical-align:top}
figure img{max-width:420px;border:1px solid #ddd}figcaption{max-width:420px;overflow-wrap:normal}
.plots{display:flex;flex-wrap:wrap;gap:1em;align-items:flex-start}
figure.plot{flex:1 1 560px;margin:0}figure.plot img{width:100%;max-width:100%;height:auto;border:0}
figure.plot figcaption{max-width:none}
th.sorts{cursor:pointer}th[aria-sort=ascending]::after{content:" \\25B2"}
th[aria-sort=descending]::after{content:" \\25BC"}
"""


SUMMARY_FIELDS = [
    ("label", "label"),
    ("heuristic", "heuristic"),
    ("state", "state"),
    ("total", "levels"),
    ("solved", "solved"),
    ("decided", "decided (solved or no solution)"),
    ("par2_s", "PAR-2 (s)"),
    ("par2_mean_s", "PAR-2 mean (s)"),
    ("cpu_s_total", "CPU total (s)"),
    ("cpu_s_median", "CPU median (s)"),
    ("wall_s_total", "wall total (s)"),
    ("wall_s_median", "wall median (s)"),
    ("wall_s_max", "wall max (s)"),
    ("makespan_s", "makespan (s)"),
    ("time_limit", "time limit (s)"),
    ("cpu_limit", "CPU limit (s)"),
    ("node_limit", "node limit"),
    ("memory_limit_mb", "memory limit (MB)"),
    ("concurrency", "concurrency"),
    ("workers", "workers seen"),
    ("hosts", "hosts"),
    ("host", "submitted from"),
    ("version", "packsolve version"),
]
KIND_FIELDS = ("total", "solved", "decided", "wall_s_median", "cpu_s_total", "par2_s")
# The small script that sorts a table by the header clicked; the dashboard serves the same file.
SORT_JS = (Path(__file__).parent / "sort.js").read_text(encoding="utf-8")
_SORT_HASH = base64.b64encode(hashlib.sha256(SORT_JS.encode("utf-8")).digest()).decode("ascii")
# No network, and no script but the sorter (allowed by its hash: a script a level name smuggled in would
# not match it): the page may only show its own inline styles and data: images.
CSP = f"default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'sha256-{_SORT_HASH}'"


def cell(value: Any) -> str:
    """Return a table cell's text: a dash for nothing, floats to the millisecond."""
    return "—" if value is None else (f"{value:.3f}" if isinstance(value, float) else str(value))


def without_name(message: str | None, name: str) -> str | None:
    """Return a message whole, without the level name it may start with (the row names the level)."""
    if not message:
        return None
    return message[len(name) + 2 :] if message.startswith(f"{name}: ") else message


def _base64(text: str) -> str:
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


ENV = environment("packsolve.report")
ENV.filters.update(cell=cell, without_name=without_name, base64=_base64)


def html_report(session: Session, runs: list[Run], top: int = 20, max_pictures: int = 300) -> str:
    """Return the whole report as one HTML document (no external files; no script but the table sorter)."""
    comparison = compare_runs(session, runs)
    rows = comparison["rows"]
    hardest = {run.id: hardest_in_run(session, run, top=top) for run in runs}
    # Pictures: the hardest levels (each run's, by rank), then others in pack order, up to max_pictures;
    # a picture of every level would make the file megabytes for a big pack.
    order = [r["level_hash"] for rank in zip_longest(*hardest.values()) for r in rank if r is not None]
    order += [r["level_hash"] for r in rows]
    chosen = list(dict.fromkeys(order))[:max_pictures]
    by_hash = {r["level_hash"]: r for r in rows}
    scatter = to_svg(scatter_figure(scatter_data(session, runs[0], runs[1]))) if len(runs) == 2 else None
    level_heads = ["level", "kind"]
    for r in comparison["runs"]:
        level_heads += [f"run {r['run']} status", "wall (s)", "nodes", "message"]
    page = ENV.get_template("report.html").render(
        ids=", ".join(str(r.id) for r in runs),
        names=", ".join(f"run {r.id}" for r in runs),
        generated=datetime.now(UTC).isoformat(timespec="seconds"),
        version=__version__,
        csp=CSP,
        style=Markup(STYLE),  # the page's own, fixed text
        sort_js=Markup(SORT_JS),  # the page's own script, allowed by its hash
        **_summary_context([run_summary(session, r) for r in runs]),
        warnings=comparison["warnings"],
        failures=[(run.id, failure_groups(session, run)) for run in runs],
        cactus=to_svg(cactus_figure(cactus_data(session, runs))),
        scatter=scatter,
        pictured={h: f"lvl-{i}" for i, h in enumerate(chosen)},
        hardest=list(hardest.items()),
        footer=_footer(comparison["footer"], runs),
        comparison=comparison,
        level_heads=level_heads,
        merged=[_merged_context(session, run) for run in runs if merged_view_needed(session, run)],
        pictures=_pictures(session, [r.id for r in runs], [by_hash[h] for h in chosen]),
        total_levels=len(rows),
    )
    return page + "\n"


def _summary_context(summaries: list[Summary]) -> dict[str, Any]:
    """Return the summary table (a row per figure, a column per run) and the per-kind table's rows."""
    # Read by the names SUMMARY_FIELDS and KIND_FIELDS list: as plain mappings.
    records: list[Mapping[str, Any]] = list(summaries)
    summary_rows = []
    for key, title in SUMMARY_FIELDS:
        values = [", ".join(r[key]) if isinstance(r[key], list) else r[key] for r in records]
        summary_rows.append((title, [(v, isinstance(v, (int, float))) for v in values]))
    # A relative run's limits (--time-limit 3x): its time_limit row is only the largest attempt's.
    relative = [
        ", ".join(
            f"{text}{' CPU' if name == 'cpu_limit' else ''}"
            for name in ("time_limit", "cpu_limit")
            if (text := relative_text(s.get("relative") or {}, name))
        )
        for s in summaries
    ]
    if any(relative):
        summary_rows.append(("relative limits", [(v, False) for v in relative]))
    peaks = [max(s["memory"]["by_kind"].values(), default=None) for s in summaries]
    summary_rows.append(("peak memory (MB)", [(v, v is not None) for v in peaks]))
    statuses = sorted({k for s in summaries for k in s["counts"]})
    return {
        "summary_heads": ["", *(f"run {s['run']}" for s in summaries)],
        "summary_rows": summary_rows,
        "status_rows": [(status, [s["counts"].get(status, 0) for s in summaries]) for status in statuses],
        "kind_rows": [
            (
                s["run"],
                kind,
                [*(cast(Mapping[str, Any], f)[k] for k in KIND_FIELDS), s["memory"]["by_kind"].get(kind)],
            )
            for s in summaries
            for kind, f in s["kinds"].items()
        ],
    }


def _footer(footer: list[Footer], runs: list[Run]) -> list[str]:
    """Return one line per run under the levels table: what it decided, its PAR-2 and speedup."""
    lines = []
    for f in footer:
        line = f"run {f['run']}: {f['solved']} solved, {f['decided']} decided of {f['levels']}"
        if len(runs) > 1:
            common = f["common_par2_s"]
            line += (
                "; PAR-2 —: no level every run attempted"
                if common is None
                else f"; PAR-2 {common:.3f} s on the {f['common_levels']} levels every run attempted"
            )
            if f["run"] != runs[0].id:
                line += f"; {speedup_text(f, runs[0].id)}"
        else:
            line += f"; PAR-2 {f['par2_s']:.3f} s"
        lines.append(line)
    return lines


def _merged_context(session: Session, run: Run) -> tuple[int, Merged, dict[int, str]]:
    """Return run merged with its reruns (each level's best result, and which run got it), and run names."""
    m = merged_view(session, run)
    who = {r["run"]: f"run {r['run']}" + (f" {r['label']}" if r["label"] else "") for r in m["runs"]}
    return run.id, m, who


def _pictures(session: Session, ids: list[int], rows: list[ComparedRow]) -> list[dict[str, Any]]:
    """Return each pictured level's anchor, SVG (None if it cannot be drawn), name, kind and caption note."""
    hashes = [r["level_hash"] for r in rows]
    solutions = _best_solutions(session, ids, hashes)
    data = {}
    for i in range(0, len(hashes), 500):
        q = select(LevelRow.hash, LevelRow.data).where(LevelRow.hash.in_(hashes[i : i + 500]))
        data.update({h: json.loads(d) for h, d in session.execute(q)})
    out = []
    for i, r in enumerate(rows):
        h = r["level_hash"]
        sol = solutions.get(h)
        proved = any(c and c["status"] == Status.NO_SOLUTION for c in r["results"])
        note = (
            "with its best solution"
            if sol is not None
            else ("proved to have none" if proved else "no solution known")
        )
        svg = picture(r["kind"], data.get(h, {}), sol, svg=True)
        out.append({"anchor": f"lvl-{i}", "svg": svg, "level": r["level"], "kind": r["kind"], "note": note})
    return out


def _best_solutions(session: Session, ids: list[int], hashes: list[str]) -> dict[str, Any]:
    """Return level hash -> its shortest solution among the runs' solved attempts."""
    best: dict[str, tuple[int, Any]] = {}
    for i in range(0, len(hashes), 500):
        q = select(Attempt.level_hash, Attempt.length, Attempt.solution).where(
            Attempt.run_id.in_(ids),
            Attempt.level_hash.in_(hashes[i : i + 500]),
            Attempt.status == Status.SOLVED,
        )
        for h, length, sol in session.execute(q):
            if sol is not None and (h not in best or (length or 0) < best[h][0]):
                best[h] = (length or 0, sol)
    return {h: json.loads(sol) for h, (_, sol) in best.items()}


def merged_view_needed(session: Session, run: Run) -> bool:
    """Return True if run has reruns (the report then shows it merged with them)."""
    return session.scalar(select(Run.id).where(Run.parent_id == run.id).limit(1)) is not None
