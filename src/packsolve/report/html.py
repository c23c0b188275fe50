"""`report html`: one self-contained HTML file: summaries, plots, hardest levels, levels with pictures."""

from __future__ import annotations

import base64
import hashlib
import json
from datetime import UTC, datetime
from html import escape
from itertools import zip_longest
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from packsolve import __version__
from packsolve.db.models import Attempt, LevelRow, Run
from packsolve.report.cactus import cactus_data, cactus_figure, scatter_data, scatter_figure, to_svg
from packsolve.report.compare import compare_runs, speedup_text
from packsolve.report.failures import failure_groups
from packsolve.report.hardest import hardest_in_run
from packsolve.report.merged import merged_view
from packsolve.report.show import picture
from packsolve.report.summary import run_summary

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


def _img(svg_text: str, alt: str) -> str:
    # As a data: image the SVG cannot run script nor break out of the page, whatever the level holds.
    data = base64.b64encode(svg_text.encode("utf-8")).decode("ascii")
    return f'<img src="data:image/svg+xml;base64,{data}" alt="{escape(alt)}">'


def _breakable(name: str) -> str:
    """Return a level name escaped, with break opportunities after / and : (never inside a word)."""
    return "".join(escape(ch) + ("<wbr>" if ch in "/:" else "") for ch in name)


def _td(value: Any, numeric: bool = False, cls: str | None = None) -> str:
    text = "—" if value is None else (f"{value:.3f}" if isinstance(value, float) else str(value))
    classes = " ".join(c for c in ("n" if numeric else "", cls or "") if c)
    return f'<td class="{classes}">{escape(text)}</td>' if classes else f"<td>{escape(text)}</td>"


def _table(headers: list[str], rows: list[str], cls: str = "") -> str:
    """Return a table; every one but the summary (a list of figures, not of rows) sorts by a header click."""
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    classes = cls if cls == "summary" else f"{cls} sortable".strip()
    return f'<table class="{classes}"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


SUMMARY_FIELDS = [
    ("label", "label"), ("heuristic", "heuristic"), ("state", "state"), ("total", "levels"),
    ("solved", "solved"), ("decided", "decided (solved or no solution)"), ("par2_s", "PAR-2 (s)"),
    ("par2_mean_s", "PAR-2 mean (s)"), ("cpu_s_total", "CPU total (s)"), ("cpu_s_median", "CPU median (s)"),
    ("wall_s_total", "wall total (s)"), ("wall_s_median", "wall median (s)"), ("wall_s_max", "wall max (s)"),
    ("makespan_s", "makespan (s)"), ("time_limit", "time limit (s)"), ("node_limit", "node limit"),
    ("memory_limit_mb", "memory limit (MB)"), ("concurrency", "concurrency"), ("workers", "workers seen"),
    ("hosts", "hosts"), ("host", "submitted from"), ("version", "packsolve version"),
]  # fmt: skip


KIND_FIELDS = ("total", "solved", "decided", "wall_s_median", "cpu_s_total", "par2_s")
# The small script that sorts a table by the header clicked; the dashboard serves the same file.
SORT_JS = (Path(__file__).parent / "sort.js").read_text(encoding="utf-8")
_SORT_HASH = base64.b64encode(hashlib.sha256(SORT_JS.encode("utf-8")).digest()).decode("ascii")
# No network, and no script but the sorter (allowed by its hash: a script a level name smuggled in would
# not match it): the page may only show its own inline styles and data: images.
CSP = f"default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'sha256-{_SORT_HASH}'"


def _summary_section(summaries: list[dict[str, Any]]) -> str:
    rows = []
    for key, title in SUMMARY_FIELDS:
        cells = "".join(
            _td(
                ", ".join(s[key]) if isinstance(s[key], list) else s[key],
                numeric=isinstance(s[key], (int, float)),
            )
            for s in summaries
        )
        rows.append(f"<tr><th>{escape(title)}</th>{cells}</tr>")
    for status in sorted({k for s in summaries for k in s["counts"]}):
        cells = "".join(_td(s["counts"].get(status, 0), numeric=True) for s in summaries)
        rows.append(f'<tr><th class="{escape(status)}">{escape(status)}</th>{cells}</tr>')
    heads = ["", *(f"run {s['run']}" for s in summaries)]
    kind_rows = []
    for s in summaries:
        for kind, f in s["kinds"].items():
            kind_rows.append(
                "<tr>" + _td(s["run"]) + _td(kind) + "".join(
                    _td(f[k], numeric=True) for k in KIND_FIELDS
                ) + "</tr>"
            )  # fmt: skip
    kinds = _table(
        ["run", "kind", "levels", "solved", "decided", "median wall (s)", "CPU (s)", "PAR-2 (s)"], kind_rows
    )
    summary = _table(heads, rows, "summary")
    # Side by side: the page's width, not a long column of narrow tables.
    per_kind = f"<div><h3>Per kind</h3>{kinds}</div>"
    return f'<h2 id="summary">Summary</h2><div class="side"><div>{summary}</div>{per_kind}</div>'


def _best_solutions(session: Session, ids: list[int], hashes: list[str]) -> dict[str, Any]:
    """Return level hash -> its shortest solution among the runs' solved attempts."""
    best: dict[str, tuple[int, Any]] = {}
    for i in range(0, len(hashes), 500):
        q = select(Attempt.level_hash, Attempt.length, Attempt.solution).where(
            Attempt.run_id.in_(ids), Attempt.level_hash.in_(hashes[i : i + 500]), Attempt.status == "solved"
        )
        for h, length, sol in session.execute(q):
            if sol is not None and (h not in best or (length or 0) < best[h][0]):
                best[h] = (length or 0, sol)
    return {h: json.loads(sol) for h, (_, sol) in best.items()}


def html_report(session: Session, runs: list[Run], top: int = 20, max_pictures: int = 300) -> str:
    """Return the whole report as one HTML document (no external files; no script but the table sorter)."""
    summaries = [run_summary(session, r) for r in runs]
    comparison = compare_runs(session, runs)
    parts = [f"<h1>packsolve report: {escape(', '.join(f'run {r.id}' for r in runs))}</h1>"]
    parts.append(
        f"<p>generated {escape(datetime.now(UTC).isoformat(timespec='seconds'))} by packsolve "
        f"{escape(__version__)} · <a href='#summary'>summary</a> · <a href='#failures'>failures</a> · "
        "<a href='#plots'>plots</a> · <a href='#hardest'>hardest</a> · <a href='#levels'>levels</a> · "
        "<a href='#merged'>with reruns</a> · <a href='#pictures'>pictures</a></p>"
    )
    parts.append(_summary_section(summaries))
    parts += [f'<p class="warn">warning: {escape(w)}</p>' for w in comparison["warnings"]]
    parts.append(_failures_section(session, runs))
    parts.append('<h2 id="plots">Plots</h2>')
    # Side by side, together the page's width; each takes the whole width when the page is narrow.
    cactus = _img(to_svg(cactus_figure(cactus_data(session, runs))), "cactus plot")
    plots = [f'<figure class="plot">{cactus}<figcaption>cactus: how many levels each run decided within '
             "a time per level (further right and lower: slower)</figcaption></figure>"]  # fmt: skip
    if len(runs) == 2:
        scatter = to_svg(scatter_figure(scatter_data(session, runs[0], runs[1])))
        plots.append(
            f'<figure class="plot">{_img(scatter, "scatter plot")}<figcaption>'
            "per-level times of the two runs, log scales; under the diagonal the second run is faster, "
            "undecided levels at twice the time limit</figcaption></figure>"
        )
    parts.append(f'<div class="plots">{"".join(plots)}</div>')
    rows = comparison["rows"]
    hardest = {run.id: hardest_in_run(session, run, top=top) for run in runs}
    # Pictures: the hardest levels (each run's, by rank), then others in pack order, up to max_pictures;
    # a picture of every level would make the file megabytes for a big pack.
    order = [r["level_hash"] for rank in zip_longest(*hardest.values()) for r in rank if r is not None]
    order += [r["level_hash"] for r in rows]
    chosen = list(dict.fromkeys(order))[:max_pictures]
    pictured = {h: f"lvl-{i}" for i, h in enumerate(chosen)}
    by_hash = {r["level_hash"]: r for r in rows}

    def level_cell(name: str, h: str) -> str:
        anchor = pictured.get(h)
        return f'<td><a href="#{anchor}">{escape(name)}</a></td>' if anchor else _td(name)

    parts.append('<h2 id="hardest">Hardest levels</h2>')
    for run in runs:
        hrows = [
            "<tr>" + _td(r["rank"], True) + level_cell(r["level"], r["level_hash"]) + _td(r["kind"])
            + _td(r["status"], cls=r["status"]) + _td(r["wall_s"], True) + _td(r["nodes"], True)
            + _td(r["par2_s"], True) + _td(_message(r["message"], r["level"]), cls="msg") + "</tr>"
            for r in hardest[run.id]
        ]  # fmt: skip
        heads = ["#", "level", "kind", "status", "wall (s)", "nodes", "PAR-2 (s)", "message"]
        parts.append(f"<h3>run {run.id}</h3>" + _table(heads, hrows, "hardest"))
    heads = ["level", "kind"]
    for r in comparison["runs"]:
        heads += [f"run {r['run']} status", "wall (s)", "nodes", "message"]
    lrows = []
    for r in rows:
        cells = level_cell(r["level"], r["level_hash"]) + _td(r["kind"])
        for c in r["results"]:
            cells += (_td("not run") + _td(None) * 3) if c is None else (
                _td(c["status"], cls=c["status"]) + _td(c["wall_s"], True) + _td(c["nodes"], True)
                + _td(_message(c["message"], r["level"]), cls="msg")
            )  # fmt: skip
        lrows.append(f"<tr>{cells}</tr>")
    foot = []
    for f in comparison["footer"]:
        line = f"run {f['run']}: {f['solved']} solved, {f['decided']} decided of {f['levels']}"
        if len(runs) > 1:
            line += (
                f"; PAR-2 {f['common_par2_s']:.3f} s on the {f['common_levels']} levels every run attempted"
            )
            if f["run"] != runs[0].id:
                line += f"; {speedup_text(f, runs[0].id)}"
        else:
            line += f"; PAR-2 {f['par2_s']:.3f} s"
        foot.append(f"<li>{escape(line)}</li>")
    parts.append(f'<h2 id="levels">Levels</h2><ul>{"".join(foot)}</ul>{_table(heads, lrows, "levels")}')
    parts += [_merged_section(session, run, level_cell) for run in runs if merged_view_needed(session, run)]
    parts.append(_pictures(session, [r.id for r in runs], [by_hash[h] for h in chosen], pictured, len(rows)))
    body = "\n".join(parts)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>packsolve report {escape(', '.join(str(r.id) for r in runs))}</title>"
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        f"<style>{STYLE}</style><script>{SORT_JS}</script></head><body>\n{body}\n</body></html>\n"
    )


def _pictures(session: Session, ids: list[int], rows: list[dict], anchors: dict[str, str], total: int) -> str:
    hashes = [r["level_hash"] for r in rows]
    solutions = _best_solutions(session, ids, hashes)
    data = {}
    for i in range(0, len(hashes), 500):
        q = select(LevelRow.hash, LevelRow.data).where(LevelRow.hash.in_(hashes[i : i + 500]))
        data.update({h: json.loads(d) for h, d in session.execute(q)})
    out = ['<h2 id="pictures">Pictures</h2>']
    if total > len(rows):
        out.append(
            f"<p>{len(rows)} of {total} levels are pictured, the hardest first (raise --max-pictures for "
            "more; `packsolve serve` pictures every level on its page)</p>"
        )
    for r in rows:
        h = r["level_hash"]
        sol = solutions.get(h)
        svg = picture(r["kind"], data.get(h, {}), sol, svg=True)
        img = (
            _img(svg, f"{r['level']}")
            if svg
            else "<p>(no picture: the level is invalid or its kind unknown)</p>"
        )
        proved = any(c and c["status"] == "no_solution" for c in r["results"])
        note = (
            "with its best solution"
            if sol is not None
            else ("proved to have none" if proved else "no solution known")
        )
        out.append(
            f'<figure id="{anchors[h]}">{img}<figcaption>{_breakable(r["level"])} · {escape(r["kind"])} · '
            f"{escape(note)}</figcaption></figure>"
        )
    return "\n".join(out)


def _message(message: str | None, name: str) -> str | None:
    """Return a message whole, without the level name it may start with (the row names the level)."""
    if not message:
        return None
    return message[len(name) + 2 :] if message.startswith(f"{name}: ") else message


def _failures_section(session: Session, runs: list[Run]) -> str:
    """Return the section saying why levels failed: per run, groups of status and message, whole."""
    out = ['<h2 id="failures">Why levels failed</h2>']
    for run in runs:
        data = failure_groups(session, run)
        if not data["groups"]:
            out.append(f"<p>run {run.id}: no failure among its {data['total']} levels</p>")
            continue
        rows = [
            "<tr>" + _td(g["status"], cls=g["status"]) + _td(g["count"], True)
            + _td(", ".join(f"{k} {n}" for k, n in g["kinds"].items()))
            + _td(_message(g["message"], g["examples"][0]), cls="msg")
            + f"<td>{'<br>'.join(_breakable(n) for n in g['examples'])}</td>"
            + _td(g["rerun"], cls="cmd" if g["rerun"].startswith("packsolve ") else "msg")
            + "</tr>"
            for g in data["groups"]
        ]  # fmt: skip
        heads = ["status", "levels", "kinds", "message (the first)", "e.g.", "next step"]
        out.append(f"<h3>run {run.id}: {data['failed']} of {data['total']} failed</h3>" + _table(heads, rows))
    return "\n".join(out)


def merged_view_needed(session: Session, run: Run) -> bool:
    """Return True if run has reruns (the report then shows it merged with them)."""
    return session.scalar(select(Run.id).where(Run.parent_id == run.id).limit(1)) is not None


def _merged_section(session: Session, run: Run, level_cell: Any) -> str:
    """Return the section of run merged with its reruns: each level's best result, and which run got it."""
    m = merged_view(session, run)
    who = {r["run"]: f"run {r['run']}" + (f" {r['label']}" if r["label"] else "") for r in m["runs"]}
    rows = [
        ('<tr class="rerun">' if r["run"] != run.id else "<tr>") + level_cell(r["level"], r["level_hash"])
        + _td(r["kind"]) + _td(r["status"], cls=r["status"]) + _td(r["wall_s"], True) + _td(r["nodes"], True)
        + _td(who[r["run"]], cls="nw") + _td(r["heuristic"]) + _td(r["tries"], True)
        + _td(_message(r["message"], r["level"]), cls="msg") + "</tr>"
        for r in m["levels"]
    ]  # fmt: skip
    made = []
    for r in m["runs"]:
        origin = "the run" if r["parent"] is None else f"rerun of run {r['parent']}"
        made.append(
            f"<li>{escape(who[r['run']])} ({escape(r['heuristic'])}): {origin}, best result of "
            f"{r['best_for']} level(s)</li>"
        )
    heads = [
        "level",
        "kind",
        "best status",
        "wall (s)",
        "nodes",
        "by run",
        "heuristic",
        "runs tried",
        "message",
    ]
    return (
        f'<h2 id="merged">Run {run.id} with its reruns</h2>'
        f"<p>solved {m['solved']} of {m['total']} (run {run.id} alone: {m['before']['solved']}), decided "
        f"{m['decided']} (alone: {m['before']['decided']}), PAR-2 {m['par2_s']:.3f} s</p>"
        f"<ul>{''.join(made)}</ul><p>Rows marked blue on the left got their best result from a rerun.</p>"
        + _table(heads, rows, "merged")
    )
