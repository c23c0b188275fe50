"""The matrix page: `report matrix` of a run of several heuristics side by side, or of several runs.

Levels × columns, each level's best cell marked, the columns' totals, the virtual best solver, a page
of rows at a time, and a scatter of any two columns (the same functions as the command).
"""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session
from starlette.requests import Request
from starlette.responses import Response

from packsolve.db.models import Attempt, Run
from packsolve.db.runs import resolve_run
from packsolve.errors import OptionError, ReportError
from packsolve.report.difficulty import MAX_POINTS
from packsolve.report.matrix import SORTS, Matrix, matrix_data, pair_scatter, vbs_line
from packsolve.request import HeuristicMatrix
from packsolve.web.cache import Caches
from packsolve.web.pages import caches, db, whole
from packsolve.web.plots import scatter_svg
from packsolve.web.render import page
from packsolve.web.svg import colour

# Rows a page shows (?rows=N at most ROWS_MAX): a matrix of 100,000 levels is read whole, shown in pages.
ROWS = 200
ROWS_MAX = 1000
MAX_RUNS = 8


class NoMatrix(ReportError):
    """A run's own matrix page asked of a run that tried each level with one heuristic (a 404)."""


def is_matrix(run: Run) -> bool:
    """Return whether run tried some kind's levels with several heuristics side by side."""
    return HeuristicMatrix.parse(run.heuristic).is_matrix


def run_matrix_page(request: Request) -> Response:
    """The matrix of one run of several heuristics side by side (404 for a run of one heuristic)."""
    with db(request) as session:
        run = resolve_run(session, request.path_params["run"])
        if not is_matrix(run):
            raise NoMatrix(
                f"run {run.id} tried each level with one heuristic ({run.heuristic}): it has no matrix of "
                f"its own; set it beside other runs: /matrix?runs={run.id},ID"
            )
        return _matrix_page(request, session, [run], f"run {run.id}")


def matrix_page(request: Request) -> Response:
    """The matrix of ?runs=A,B,… (ids or labels; default: the latest run), as `report matrix` makes it."""
    refs = [r for r in re.split(r"[,\s]+", request.query_params.get("runs", "")) if r] or ["latest"]
    if len(refs) > MAX_RUNS:
        raise ReportError(f"runs: set at most {MAX_RUNS} runs side by side")
    with db(request) as session:
        runs = [resolve_run(session, r) for r in refs]
        if len({r.id for r in runs}) != len(runs):
            raise ReportError("runs: a run is named twice")
        title = "runs " + ", ".join(str(r.id) for r in runs) if len(runs) > 1 else f"run {runs[0].id}"
        return _matrix_page(request, session, runs, title)


def _matrix_page(request: Request, session: Session, runs: list[Run], title: str) -> Response:
    p = request.query_params
    sort, kind = p.get("sort") or "level", p.get("kind") or None
    shown = whole(request, "rows", ROWS, high=ROWS_MAX)
    asked = whole(request, "page", 1)
    kinds = _kinds(session, runs)
    if kind is not None and kind not in kinds:
        raise ReportError(f"kind={kind!r}: {title} has no level of that kind; choose from {', '.join(kinds)}")
    data = _matrix(caches(request), session, runs, sort, kind)
    labels = [c["label"] for c in data["columns"]]
    if len(labels) < 2 and kind is None:
        raise ReportError(
            f"{title} gives one column ({', '.join(labels) or 'no attempt'}): a matrix needs two or more; "
            "name more runs (?runs=A,B) or a run of several heuristics side by side"
        )
    scatter = _scatter(data, p.get("scatter") or None) if len(labels) >= 2 else None
    pages = max(1, -(-len(data["rows"]) // shown))
    number = min(asked, pages)  # a page past the last (a link kept from a longer matrix): the last
    return page(
        request,
        "matrix.html",
        title=title,
        runs=runs,
        data=data,
        rows=data["rows"][(number - 1) * shown : number * shown],
        first=(number - 1) * shown,
        page_number=number,
        pages=pages,
        asked=asked if asked > pages else None,
        sorts=[*SORTS, *labels],
        sort=sort,
        kind=kind or "",
        kinds=kinds,
        pairs=[(a, b) for i, a in enumerate(labels) for b in labels[i + 1 :]],
        scatter=scatter,
        vbs=vbs_line(data["virtual_best"]),
    )


def _scatter(data: Matrix, pair: str | None) -> dict[str, Any]:
    """Return the scatter of two columns (pair "X,Y"; None: the first two) as the page shows it: the
    columns, the points' count, the SVG (at most MAX_POINTS points, the first rows'), its kinds' colours."""
    labels = [c["label"] for c in data["columns"]]
    try:
        points = pair_scatter(data, pair)
    except OptionError as exc:
        raise ReportError(f"scatter={pair!r}: name two columns as X,Y, from {', '.join(labels)}") from exc
    kinds = {row["level_hash"]: row["kind"] for row in data["rows"]}
    order = sorted(set(kinds.values()))
    total = len(points["points"])
    points["points"] = points["points"][:MAX_POINTS]
    return {
        "x": points["x_label"],
        "y": points["y_label"],
        "points": total,
        "drawn": len(points["points"]),
        "svg": scatter_svg(points, kinds, order),
        "kinds": [(colour(i), k) for i, k in enumerate(order)],
    }


def _kinds(session: Session, runs: list[Run]) -> list[str]:
    """Return the kinds of the runs' levels, sorted (one index step per kind)."""
    q = select(Attempt.kind).where(Attempt.run_id.in_([r.id for r in runs])).distinct()
    return sorted(session.scalars(q))


def _matrix(kept: Caches, session: Session, runs: list[Run], sort: str, kind: str | None) -> Matrix:
    """Return `report matrix` of runs, read at most every few seconds per (runs, sort, kind): a matrix
    paged through does not read every attempt of its runs again for each page."""
    key = ("matrix", tuple((r.id, r.finished_at, r.label) for r in runs), sort, kind)
    try:
        return kept.recent.get(key, lambda: matrix_data(session, runs, sort, kind))
    except OptionError as exc:
        raise ReportError(f"sort: {exc.reason}") from exc
