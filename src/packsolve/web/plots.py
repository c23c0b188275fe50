"""The plots page (cactus, scatter, time against size, memory) and a run's progress chart, as SVG."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from packsolve.db.runs import resolve_run
from packsolve.errors import ReportError
from packsolve.report.cactus import CactusLine, Scatter, cactus_data, scatter_data
from packsolve.report.difficulty import MAX_POINTS, kinds_of, size_times
from packsolve.report.live import final_over_time
from packsolve.request import HeuristicMatrix
from packsolve.web.pages import db
from packsolve.web.render import page
from packsolve.web.svg import Chart, colour


def _cactus(data: list[CactusLine]) -> str:
    times = [t for d in data for t in d["times"]]
    chart = Chart.over(
        times or [1.0],
        [0, max((d["decided"] for d in data), default=1)],
        ("time limit one would need (s, log)", "levels decided", "cactus"),
        log_x=True,
    )
    for i, d in enumerate(data):
        chart.line(_thinned(d["times"]), i, d["label"], step=True)
    return chart.svg()


def _thinned(times: list[float], most: int = 2000) -> list[tuple[float, int]]:
    """Return the cactus line's (time, levels decided) points, at most `most` of them, the last kept.

    A 640-pixel chart shows no more: 150,000 steps drawn would make a page of megabytes.
    """
    n = len(times)
    picked = range(n) if n <= most else sorted({int(k * n / most) for k in range(most)} | {n - 1})
    return [(times[j], j + 1) for j in picked]


def scatter_svg(points: Scatter, kinds: dict[str, str], order: list[str]) -> str:
    """Return the SVG scatter of two runs' (or matrix columns') PAR-2 per level, coloured by kind (order)."""
    values = [p["x"] for p in points["points"]] + [p["y"] for p in points["points"]]
    chart = Chart.over(
        values or [1.0],
        values or [1.0],
        (f"{points['x_label']}: PAR-2 s", f"{points['y_label']}: PAR-2 s", "scatter"),
        log_x=True,
        log_y=True,
    )
    chart.diagonal()
    for p in points["points"]:
        kind = kinds.get(p["level_hash"], "?")
        name = f"{p['level']} ({kind}): {p['x_status']} {p['x']} s vs {p['y_status']} {p['y']} s"
        chart.point(
            p["x"], p["y"], order.index(kind) if kind in order else 0, name, f"/levels/{p['level_hash']}"
        )
    return chart.svg()


def _sizes(rows: Sequence[Mapping[str, Any]], order: list[str], y: str, y_name: str) -> list[tuple[str, str]]:
    """Return (kind, chart) per kind: a size means one thing within a kind only (cells, digits, tiles)."""
    charts = []
    for kind in order:
        mine = [r for r in rows if r["kind"] == kind]
        if not mine:
            continue
        names = (f"{kind}: level size", y_name, f"{y_name} of {kind}")
        chart = Chart.over([r["size"] for r in mine], [r[y] or 0 for r in mine], names, log_y=True)
        for r in mine:
            name = f"{r['level']} ({kind}, size {r['size']}): {r['status']}, {r[y]}"
            chart.point(r["size"], r[y] or 0, order.index(kind), name, f"/levels/{r['level_hash']}")
        charts.append((kind, chart.svg()))
    return charts


def plots_page(request: Request) -> Response:
    """Plots of ?runs=ID,ID (default: the latest): cactus, scatter of the first two, size, memory."""
    refs = [r for r in re.split(r"[,\s]+", request.query_params.get("runs", "")) if r] or ["latest"]
    if len(refs) > 8:
        raise ReportError("plot at most 8 runs at once")
    with db(request) as session:
        runs = [resolve_run(session, r) for r in refs]
        cactus = cactus_data(session, runs)
        points = scatter_data(session, runs[0], runs[1], MAX_POINTS) if len(runs) >= 2 else None
        kinds = kinds_of(session, [p["level_hash"] for p in points["points"]]) if points else {}
        sized = size_times(session, runs[-1])
    order = sorted({*kinds.values(), *(r["kind"] for r in sized)})
    charts = {
        "cactus": _cactus(cactus),
        "scatter": scatter_svg(points, kinds, order) if points else None,
        "size": _sizes(sized, order, "wall_s", "wall s (log)"),
        "memory": _sizes([r for r in sized if r["peak_rss_mb"]], order, "peak_rss_mb", "peak RSS MB (log)"),
    }
    legend = [(colour(i), d["label"], d["decided"]) for i, d in enumerate(cactus)]
    return page(
        request,
        "plots.html",
        charts=charts,
        legend=legend,
        refs=",".join(refs),
        kinds=[(colour(i), k) for i, k in enumerate(order)],
        last=runs[-1].id,
        matrices=[r.id for r in runs if HeuristicMatrix.parse(r.heuristic).is_matrix],
    )


def progress_svg(request: Request) -> Response:
    """A run's levels final over time, as an SVG image."""
    with db(request) as session:
        run = resolve_run(session, request.path_params["run"])
        points = final_over_time(session, run.id)
        total = run.total
    chart = Chart.over(
        [p[0] for p in points] or [1.0],
        [0, total or 1],
        ("seconds since the first result", "levels final", "progress"),
    )
    if points:
        chart.line(points, 0, f"run {run.id}")
    return Response(chart.svg(), media_type="image/svg+xml")
