"""The pages that read: runs, a run, failures, hardest, compare, a level (each calls the report functions)."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from functools import partial
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session
from starlette.requests import Request
from starlette.responses import Response

from packsolve.db.models import Run
from packsolve.db.runs import resolve_run, status_counts
from packsolve.db.session import session_scope
from packsolve.errors import LevelNotFound, ReportError, RunNotFound
from packsolve.figures.compare_pairs import Figures, compare_figures
from packsolve.outcome import Status
from packsolve.report.attempts_page import COLUMNS, AttemptQuery, attempts_page, count_matching
from packsolve.report.compare import Slice, page_of
from packsolve.report.failures import failure_groups, limit_shown, suggested_cpu_limit, suggested_time_limit
from packsolve.report.hardest import BY, HardestRows, hardest_in_run, hardest_overall
from packsolve.report.live import run_workers
from packsolve.report.progress import Progress, run_progress
from packsolve.report.runs_list import RunRow, run_rows
from packsolve.report.show import LevelReport, level_report, picture
from packsolve.report.summary import Summary, run_summary
from packsolve.request import HeuristicMatrix
from packsolve.web.cache import Caches
from packsolve.web.choices import heuristic_choices
from packsolve.web.render import page

# Runs listed on the first page; ?all=1 lists every one.
RUNS_SHOWN = 50
_HASH = re.compile(r"[0-9a-f]{64}")


@contextmanager
def db(request: Request) -> Iterator[Session]:
    """Yield a session on the dashboard's database for one request."""
    with session_scope(request.app.state.engine) as session:
        yield session


def caches(request: Request) -> Caches:
    """Return the figures this dashboard keeps between requests (its own: never another app's)."""
    kept: Caches = request.app.state.caches
    return kept


COMPARE_ROWS_MAX = 1000


def whole(request: Request, name: str, default: int, low: int = 1, high: int = 10**9) -> int:
    """Return the query parameter name as a whole number in [low, high]; ReportError saying what works."""
    raw = request.query_params.get(name)
    if raw in (None, ""):
        return default
    if not raw.isdigit() or not low <= int(raw) <= high:
        raise ReportError(f"{name}={raw!r}: give a whole number from {low} to {high}")
    return int(raw)


def _runs_context(kept: Caches, session: Session, everything: bool) -> dict[str, Any]:
    """Return the runs list: finished runs' rows kept, going runs' read again (rate and ETA: every few s)."""
    query = select(Run.id, Run.label, Run.state, Run.finished_at).order_by(Run.id.desc())
    marks = session.execute(query if everything else query.limit(RUNS_SHOWN)).all()
    going = [m.id for m in marks if m.finished_at is None]
    fresh = {r["run"]: r for r in run_rows(session, ids=going)} if going else {}
    rows: list[dict[str, Any]] = []
    for m in marks:
        if m.finished_at is None:
            r = _with_cancelled(session, fresh[m.id])
            p = kept.recent.get(("progress", m.id), partial(_progress_of, session, m.id))
            r["rate_per_s"], r["eta_s"] = p["rate_per_s"], p["eta_s"]
        else:
            r = kept.finished.keep(("row", *m), partial(_row_of, session, m.id))
        rows.append(r)
    children: dict[int, list[int]] = {}
    for r in rows:
        if r["parent"] is not None:
            children.setdefault(r["parent"], []).append(r["run"])
    return {"rows": rows, "live": bool(going), "children": children}


def _progress_of(session: Session, run_id: int) -> Progress:
    run = session.get(Run, run_id)
    if run is None:
        raise RunNotFound(f"run {run_id} was deleted")
    return run_progress(session, run)


def _row_of(session: Session, run_id: int) -> dict[str, Any]:
    return _with_cancelled(session, run_rows(session, ids=[run_id])[0])


def _with_cancelled(session: Session, row: RunRow) -> dict[str, Any]:
    """Return the runs list's row with its cancelled attempts: final, never ran, not in the bar's share."""
    return {**row, "cancelled": status_counts(session, row["run"]).get(Status.CANCELLED, 0)}


def runs_page(request: Request) -> Response:
    """Every run, newest first, with progress; live while one is going."""
    everything = request.query_params.get("all") == "1"
    with db(request) as session:
        context = _runs_context(caches(request), session, everything)
    return page(request, "runs.html", everything=everything, **context)


def runs_live(request: Request) -> Response:
    """The runs table alone, for the page's live updates."""
    with db(request) as session:
        context = _runs_context(caches(request), session, request.query_params.get("all") == "1")
    return page(request, "_runs_table.html", **context)


def attempt_query(request: Request) -> AttemptQuery:
    """Return the attempts table's query from the request's parameters (ReportError for a bad one)."""
    p = request.query_params
    return AttemptQuery(
        kind=p.get("kind") or None,
        status=p.get("status") or None,
        heuristic=p.get("heuristic") or None,
        worker=p.get("worker") or None,
        text=p.get("q") or None,
        sort=p.get("sort", "seq"),
        descending=p.get("desc") == "1",
        page=whole(request, "page", 1),
        per_page=whole(request, "per_page", 50, high=500),
    ).check()


def _live_context(kept: Caches, session: Session, run: Run, summary: Summary | None = None) -> dict[str, Any]:
    """Return the live part of a run's page: progress and workers (a finished run's: from its counts).

    Counts are read each time (one indexed query); rate, ETA and workers at most every few seconds.
    """
    if run.finished_at is not None:  # nothing is pending in a finished run
        counts = summary["counts"] if summary is not None else status_counts(session, run.id)
        total = sum(counts.values())
        finished = {"total": total, "done": total, "cancelled": counts.get(Status.CANCELLED, 0)}
        return {"progress": finished, "workers": [], "done": True}
    counts = status_counts(session, run.id)
    slow = kept.recent.get(
        ("live", run.id), lambda: (run_progress(session, run), run_workers(session, run.id))
    )
    pending = counts.get(Status.QUEUED, 0) + counts.get(Status.RUNNING, 0)
    progress: dict[str, Any] = {**slow[0], "total": sum(counts.values()), "chart_at": slow[0]["done"]}
    progress["done"] = progress["total"] - pending
    progress["cancelled"] = counts.get(Status.CANCELLED, 0)
    if slow[0]["buffered"] is None:  # a local run: what runs is what the database says
        progress["queued"], progress["running"] = counts.get(Status.QUEUED, 0), counts.get(Status.RUNNING, 0)
    # A distributed run keeps run_progress's split of the pending attempts (as `status` shows it):
    # running on a solver, claimed and not started, done but waiting in a worker's write buffer.
    return {"progress": progress, "workers": slow[1], "done": run.finished_at is not None}


def run_page(request: Request) -> Response:
    """A run: its summary and kinds, workers, progress, and its attempts a page at a time."""
    query = attempt_query(request)
    kept = caches(request)
    with db(request) as session:
        run = resolve_run(session, request.path_params["run"])
        # A run going reads its medians over all its attempts: at most once per the recent cache's ttl.
        final = partial(kept.recent.get, ("final", run.id))
        summary = kept.finished.get(run, "summary", lambda: run_summary(session, run, reuse=final))
        filters = replace(query, sort="seq", descending=False, page=1)
        matching = kept.finished.get(
            run, ("count", filters), lambda: count_matching(session, run.id, filters)
        )
        table = attempts_page(session, run.id, query, matching)
        children = list(session.scalars(select(Run.id).where(Run.parent_id == run.id).order_by(Run.id)))
        live = _live_context(kept, session, run, summary)
    choices = {
        "kind": list(summary["kinds"]),
        "status": list(summary["counts"]),
        "heuristic": summary["heuristics"],
        "worker": summary["worker_names"],
    }
    return page(
        request,
        "run.html",
        run=summary,
        table=table,
        q=query,
        columns=list(COLUMNS),
        choices=choices,
        children=children,
        matrix=HeuristicMatrix.parse(summary["heuristic"]).is_matrix,
        medians_every=kept.recent.ttl,
        **live,
    )


def run_live(request: Request) -> Response:
    """The run's progress and workers alone, for the page's live updates."""
    with db(request) as session:
        run = resolve_run(session, request.path_params["run"])
        live = _live_context(caches(request), session, run)
    return page(request, "_run_live.html", run={"run": run.id}, **live)


def failures_page(request: Request) -> Response:
    """`report failures` of a run, each group with its levels and a form to rerun it."""
    with db(request) as session:
        run = resolve_run(session, request.path_params["run"])
        examples = whole(request, "examples", 20, high=1000)
        data = caches(request).finished.get(
            run, ("failures", examples), lambda: _failures(session, run, examples)
        )
        choices = heuristic_choices(run, {k for g in data["groups"] for k in g["kinds"]})
        mode = run.mode
    return page(request, "failures.html", data=data, choices=choices, mode=mode)


def _failures(session: Session, run: Run, examples: int) -> dict[str, Any]:
    """Return `report failures`' groups, each with the --time-limit and --cpu-limit its command suggests
    ('' if none)."""
    data = failure_groups(session, run, examples)

    return {
        **data,
        "groups": [
            {
                **g,
                "suggested_time_limit": limit_shown(suggested_time_limit(run, g)),
                "suggested_cpu_limit": limit_shown(suggested_cpu_limit(run, g)),
            }
            for g in data["groups"]
        ],
        "cpu_limited": run.cpu_limit is not None,
    }


def hardest_page(request: Request) -> Response:
    """`report hardest` of a run or across all runs, each level pictured."""
    p = request.query_params
    by = p.get("by", "par2")
    if by not in BY:
        raise ReportError(f"by={by!r}: rank by one of {', '.join(BY)}")
    kind = p.get("kind") or None
    top = whole(request, "top", 20, high=500)
    rows: HardestRows
    with db(request) as session:
        if p.get("run"):
            run = resolve_run(session, p["run"])
            rows = caches(request).finished.get(
                run, ("hardest", by, top, kind), partial(hardest_in_run, session, run, by, top, kind)
            )
            title = f"hardest levels of run {run.id}"
        else:
            rows, title = hardest_overall(session, by, top, kind), "hardest levels across all runs"
    # Nodes mean one thing within a kind only: ranked by nodes, levels are grouped by kind.
    if by == "nodes":
        rows = sorted(rows, key=lambda r: (r["kind"], r["rank"]))
    return page(
        request, "hardest.html", rows=rows, title=title, by=by, kind=kind, top=top, run=p.get("run", "")
    )


def compare_page(request: Request) -> Response:
    """`report compare` of two or more runs: warnings above, one row per level, the footer."""
    p = request.query_params
    refs = [r for r in re.split(r"[,\s]+", p.get("runs", "")) if r]
    if len(refs) < 2:
        raise ReportError("compare needs two or more runs: ?runs=ID,ID (ids or labels)")
    with db(request) as session:
        runs = [resolve_run(session, r) for r in refs]
        if len({r.id for r in runs}) != len(runs):
            raise ReportError("a run is named twice")
        kind = p.get("kind") or None
        # A page, not the whole table: 100,000 rows of two 200,000-attempt runs took 13-16 s and 34 MB
        # per request; the next links page on.
        shown = whole(request, "rows", 500, high=COMPARE_ROWS_MAX)
        offset = whole(request, "offset", 0, low=0)
        # Paged in SQL, the footer kept: two 1,000,000-attempt runs compare at once.
        figures, age = _compare_figures(caches(request), session, runs)
        data = page_of(session, runs, figures, Slice(p.get("differs") == "1", kind, offset, shown), age)
    return page(
        request,
        "compare.html",
        data=data,
        refs=",".join(refs),
        shown=shown,
        offset=offset,
        differs=p.get("differs") == "1",
        kind=p.get("kind", ""),
    )


def _compare_figures(
    kept: Caches, session: Session, runs: list[Run]
) -> tuple[dict[str, Figures], float | None]:
    """Return the runs' compare figures and their age in seconds (None: exact, every run finished).

    Finished runs never change: their figures are kept (a pair's in the database too). With a run
    still going they are read at most every few seconds (kept.recent): the aggregate over two
    1,000,000-attempt runs takes seconds, and a page polled or paged must not start one each time.
    """
    if all(r.finished_at is not None for r in runs):
        return kept.finished.get(runs, "compare", lambda: compare_figures(session, runs)), None
    read_at, figures = kept.recent.get(
        ("compare", tuple(r.id for r in runs)), lambda: (time.monotonic(), compare_figures(session, runs))
    )
    return figures, time.monotonic() - read_at


def _level(request: Request) -> LevelReport:
    ref = request.path_params["hash"]
    if not _HASH.fullmatch(ref):
        raise LevelNotFound(f"{ref[:80]!r} is not a level hash (64 hex digits, as the pages link them)")
    with db(request) as session:
        return level_report(session, ref)


def level_page(request: Request) -> Response:
    """A level: its picture with the best solution, and every attempt at it across runs."""
    return page(request, "level.html", level=_level(request))


def level_picture(request: Request) -> Response:
    """The kind's SVG of a level (?solved=1: with its best solution), sandboxed: nothing in it runs."""
    rep = _level(request)
    best = rep["best"]
    solution = best["solution"] if best and request.query_params.get("solved") == "1" else None
    svg = picture(rep["kind"], rep["data"], solution, svg=True)
    if svg is None:
        raise LevelNotFound(f"kind {rep['kind']} draws no picture of this level")
    # Shown through <img>, an SVG never runs scripts; opened on its own, the sandbox stops them too.
    headers = {"Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; sandbox"}
    return Response(svg, media_type="image/svg+xml", headers=headers)


def _cluster(request: Request) -> Any:
    """Return the dashboard's cluster (its settings' broker and queue), made on first use."""
    state = request.app.state
    if getattr(state, "cluster", None) is None:
        from packsolve.queue.app import Cluster

        state.cluster = Cluster.of(state.settings)
    return state.cluster


def workers_page(request: Request) -> Response:
    """Every worker and process on record, live, lost or stopped, with its history; and the queues."""
    from packsolve.report.workers import event_text, process_rows, queue_rows, worker_rows

    cluster = _cluster(request)
    with db(request) as session:
        processes = process_rows(session)
        # The broker is asked at most every few seconds, whoever reloads.
        queues = caches(request).recent.get(
            ("queues",), lambda: queue_rows(session, cluster.queue, cluster.depth_of)
        )
    return page(request, "workers.html", workers=worker_rows(processes), queues=queues, event_text=event_text)
