"""`report summary`: solved X of Y, counts per status and per kind, times, PAR-2, makespan, provenance."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, TypedDict

from sqlalchemy import Connection, func, select, text
from sqlalchemy.orm import Session

from packsolve.db.local_runs import shown_state
from packsolve.db.models import Attempt, Run, as_utc
from packsolve.execution.relative import RelativeLimits, parse_relative, spread
from packsolve.figures.par2 import own_penalties, par2_limit, par2_sum
from packsolve.figures.run_figures import (
    WHOLE,
    Final,
    Group,
    finished_final,
    groups,
    measured_of,
    medians,
    peak_memory,
)
from packsolve.outcome import NOT_RUN_VALUES, PENDING, SUCCESS_VALUES, Status
from packsolve.report.columns import keep_figures_whole
from packsolve.report.export import iso
from packsolve.report.metrics import host_of, rounded
from packsolve.report.provenance import RunProvenance, cpus_per_attempt, provenance_rows, run_provenance
from packsolve.report.text import short_message
from packsolve.request import HeuristicMatrix

PENDING_VALUES = frozenset(s.value for s in PENDING)
# Worker names listed in a summary; a run on hundreds of processes lists the count only.
MAX_WORKER_NAMES = 50


class Figures(TypedDict):
    """Counts and times of a run's attempts, or of one kind's (docs/reports.md names each)."""

    total: int
    done: int
    solved: int
    decided: int
    counts: dict[str, int]
    cpu_s_total: float
    cpu_s_median: float | None
    wall_s_total: float
    wall_s_median: float | None
    wall_s_max: float | None
    nodes_total: int
    par2_s: float
    par2_mean_s: float | None
    scored: int


class Example(TypedDict):
    """A failing status's example: a level and its message."""

    level: str
    message: str | None


class PeakMemory(TypedDict):
    """The largest peak RSS (MB) of a run's attempts, by kind and by heuristic."""

    by_kind: dict[str, float]
    by_heuristic: dict[str, float]


class Summary(Figures):
    """`report summary`: the run, its figures overall and per kind, its limits, workers and provenance."""

    run: int
    label: str | None
    mode: str
    state: str
    parent: int | None
    makespan_s: float | None
    parallelism: float | None
    created_at: str | None
    finished_at: str | None
    heuristic: str
    heuristics: list[str]
    kind: str | None
    time_limit: float | None
    cpu_limit: float | None
    relative: dict[str, Any] | None  # relative limits (Nx): spec and the attempts' own limits
    node_limit: int | None
    memory_limit_mb: int | None
    concurrency: int | None
    cpus_per_attempt: int | None
    host: str | None
    version: str | None
    hosts: list[str]
    workers: int
    worker_names: list[str]
    kinds: dict[str, Figures]
    by_heuristic: dict[str, Figures]  # medians null: they are kept per kind
    messages: dict[str, Example]
    memory: PeakMemory
    provenance: RunProvenance


def _figures(
    groups: list[Group],
    medians: dict[str, float | None],
    wall_max: float | None,
    time_limit: float | None,
    penalties: Mapping[tuple[str, str, str], float] | None = None,
) -> Figures:
    """Return counts and time figures from groups of attempts (packsolve.figures.run_figures.Group).

    penalties: the sums of the attempts' own limits (par2.own_penalties) where they have them (a
    relative run's): those undecided attempts score twice their own limit, not twice time_limit.
    """
    counts: Counter[str] = Counter()
    wall = cpu = par2_total = 0.0
    nodes = scored = 0
    for g in groups:
        n = g.attempts
        counts[g.status] += n
        wall += g.wall_sum
        cpu += g.cpu_sum
        nodes += g.nodes_sum
        if g.status in NOT_RUN_VALUES:
            continue
        scored += n
        own = (penalties or {}).get((g.kind, g.heuristic, str(g.status)))
        par2_total += 2.0 * own if own is not None else par2_sum(g.status, n, g.wall_sum, time_limit) or 0.0
    total = sum(counts.values())
    return {
        "total": total,
        "done": total - sum(counts[s] for s in PENDING_VALUES),
        "solved": counts[Status.SOLVED.value],
        "decided": sum(counts[s] for s in SUCCESS_VALUES),
        "counts": {s.value: counts[s.value] for s in Status if counts[s.value]},
        "cpu_s_total": round(cpu, 3),
        "cpu_s_median": rounded(medians.get("cpu")),
        "wall_s_total": round(wall, 3),
        "wall_s_median": rounded(medians.get("wall")),
        "wall_s_max": rounded(wall_max),
        "nodes_total": nodes,
        "par2_s": round(par2_total, 3),
        "par2_mean_s": rounded(par2_total / scored if scored else None),
        "scored": scored,
    }


def _seconds(start: datetime | None, end: datetime | None) -> float | None:
    if start is None or end is None:
        return None
    return round((end - start).total_seconds(), 3)


def _span(conn: Connection, run_id: int) -> tuple[datetime | None, datetime | None]:
    """Return the run's first start and its last finish of an attempt that started, from their indexes."""
    first = conn.execute(select(func.min(Attempt.started_at)).where(Attempt.run_id == run_id)).scalar()
    last = conn.execute(
        select(Attempt.finished_at)
        .where(Attempt.run_id == run_id, Attempt.finished_at.is_not(None), Attempt.started_at.is_not(None))
        .order_by(Attempt.finished_at.desc())
        .limit(1)
    ).scalar()
    return (None if first is None else as_utc(first)), (None if last is None else as_utc(last))


def run_workers(conn: Connection, run_id: int) -> list[str]:
    """Return the run's distinct workers, each found by one step along the (run, worker) index."""
    found = conn.execute(
        text(
            "WITH RECURSIVE w(name) AS ("
            " SELECT min(worker) FROM attempts WHERE run_id = :r"
            " UNION ALL"
            " SELECT (SELECT min(worker) FROM attempts WHERE run_id = :r AND worker > w.name)"
            " FROM w WHERE w.name IS NOT NULL"
            ") SELECT name FROM w WHERE name IS NOT NULL"
        ),
        {"r": run_id},
    )
    return sorted(name for (name,) in found)


def _wall_max(conn: Connection, run_id: int, kind: str) -> float | None:
    """Return the kind's longest wall time in the run, read at the end of its (run, kind, wall) index."""
    return conn.execute(  # type: ignore[no-any-return]
        select(func.max(Attempt.wall_s)).where(Attempt.run_id == run_id, Attempt.kind == kind)
    ).scalar()


def _wall_max_of(conn: Connection, run_id: int, heuristic: str) -> float | None:
    """Return the heuristic's longest wall time in the run."""
    return conn.execute(  # type: ignore[no-any-return]
        select(func.max(Attempt.wall_s)).where(Attempt.run_id == run_id, Attempt.heuristic == heuristic)
    ).scalar()


def run_summary(
    session: Session, run: Run, reuse: Callable[[Callable[[], Final]], Final] | None = None
) -> Summary:
    """Return the summary of run as a JSON-ready dict (fields documented in docs/reports.md).

    Counts and sums come from run_figures (kept as attempts change), a finished run's medians and
    peaks from its snapshot (figures.run_figures: kept once it finished, by its first reader if
    nobody made it before); the rest from the run's indexes, a few rows each.
    A run going has its medians and peaks read over its attempts: reuse, if given, is handed that
    read and returns its value or one it kept (the dashboard keeps it a few seconds per run).
    """
    conn = session.connection()  # Core, not ORM: these are plain aggregates
    found = groups(conn, run.id)
    by_kind: dict[str, list[Group]] = defaultdict(list)
    by_heuristic: dict[str, list[Group]] = defaultdict(list)
    for g in found:
        by_kind[g.kind].append(g)
        by_heuristic[g.heuristic].append(g)
    final = finished_final(conn, run.id) if run.finished_at is not None else None
    if final is None:

        def read() -> Final:
            return Final(medians(conn, run.id, measured_of(found)), peak_memory(conn, run.id))

        final = read() if reuse is None else reuse(read)
    wall_max = {kind: _wall_max(conn, run.id, kind) for kind in by_kind}
    longest = max((m for m in wall_max.values() if m is not None), default=None)
    relative = RelativeLimits.from_options((run.options or {}).get("relative"))
    penalties = own_penalties(conn, run) if relative else None
    everything = _figures(found, final.medians.get(WHOLE, {}), longest, par2_limit(run), penalties)
    workers = run_workers(conn, run.id)
    makespan = _seconds(*_span(conn, run.id))
    # One message per failing status, as an example (any one: an ordered pick would sort every
    # failure of a big run); `report failures` groups them all.
    messages: dict[str, Example] = {}
    for status in everything["counts"]:
        if status in SUCCESS_VALUES or status in PENDING_VALUES:
            continue
        first = conn.execute(
            select(Attempt.name, Attempt.message)
            .where(Attempt.run_id == run.id, Attempt.status == status, Attempt.message.is_not(None))
            .limit(1)
        ).first()
        if first is not None:
            messages[status] = {"level": first[0], "message": first[1]}
    return {
        "run": run.id,
        "label": run.label,
        "mode": run.mode,
        "state": shown_state(run),
        "parent": run.parent_id,
        **everything,
        "makespan_s": makespan,
        # How many solver-seconds ran per second of makespan: the parallelism actually achieved.
        "parallelism": round(everything["wall_s_total"] / makespan, 2) if makespan else None,
        "created_at": iso(run.created_at),
        "finished_at": iso(run.finished_at),
        "heuristic": run.heuristic,
        "heuristics": sorted({g.heuristic for g in found}),
        "kind": run.kind,
        "time_limit": run.time_limit,
        "cpu_limit": run.cpu_limit,
        # --time-limit 3x: each attempt's own limit; the run's time_limit/cpu_limit are the largest.
        "relative": relative_spread(conn, run.id, relative) if relative else None,
        "node_limit": run.node_limit,
        "memory_limit_mb": run.memory_limit_mb,
        "concurrency": run.concurrency,
        "cpus_per_attempt": cpus_per_attempt(run),
        "host": run.host,
        "version": run.version,
        "hosts": sorted({h for h in map(host_of, workers) if h}),
        "workers": len(workers),
        "worker_names": workers[:MAX_WORKER_NAMES],
        "kinds": {
            kind: _figures(g, final.medians.get(kind, {}), wall_max[kind], par2_limit(run), penalties)
            for kind, g in sorted(by_kind.items())
        },
        # Each heuristic's figures: a run of several side by side (--heuristic a,b) compares them here.
        "by_heuristic": {
            name: _figures(g, {}, _wall_max_of(conn, run.id, name), par2_limit(run), penalties)
            for name, g in sorted(by_heuristic.items())
        },
        "messages": messages,
        "memory": _peak_memory(final.peaks),
        "provenance": run_provenance(session, run),
    }


def _peak_memory(peaks: dict[tuple[str, str], float]) -> PeakMemory:
    """Return the largest peak RSS (MB) by kind and by heuristic (those measured), from each pair's."""
    by_kind: dict[str, float] = {}
    by_heuristic: dict[str, float] = {}
    for (kind, heuristic), peak in peaks.items():
        mb = round(float(peak or 0.0), 1)
        by_kind[kind] = max(by_kind.get(kind, 0.0), mb)
        by_heuristic[heuristic] = max(by_heuristic.get(heuristic, 0.0), mb)
    return {"by_kind": dict(sorted(by_kind.items())), "by_heuristic": dict(sorted(by_heuristic.items()))}


def relative_spread(conn: Connection, run_id: int, relative: RelativeLimits) -> dict[str, Any]:
    """Return a relative run's limits as reports give them: {"time_limit"/"cpu_limit": {"spec": "3x,1s",
    "low": the smallest attempt's own limit, "high": the largest}} for each one given as Nx."""
    low_t, high_t, low_c, high_c = conn.execute(
        select(
            func.min(Attempt.time_limit),
            func.max(Attempt.time_limit),
            func.min(Attempt.cpu_limit),
            func.max(Attempt.cpu_limit),
        ).where(Attempt.run_id == run_id)
    ).one()
    out: dict[str, Any] = {}
    for name, given, low, high in (
        ("time_limit", relative.time, low_t, high_t),
        ("cpu_limit", relative.cpu, low_c, high_c),
    ):
        if given is not None:
            out[name] = {"spec": given.spelled(), "low": low, "high": high}
    return out


def relative_text(spread_of: Mapping[str, Any], name: str) -> str | None:
    """Return how a relative limit reads ("3x expected, 1–42 s"), or None if that limit is not relative."""
    found = (spread_of or {}).get(name)
    if not found:
        return None
    given = parse_relative(found["spec"])
    if given is None:
        return None
    return spread(given, [v for v in (found.get("low"), found.get("high")) if v is not None])


def _limits_text(s: Summary) -> str:
    limits = []
    wall, cpu = (
        relative_text(s.get("relative") or {}, "time_limit"),
        relative_text(s.get("relative") or {}, "cpu_limit"),
    )
    if wall is not None:
        limits.append(wall)
    elif s["time_limit"] is not None:
        limits.append(f"{s['time_limit']:g} s")
    if cpu is not None:
        limits.append(f"{cpu} CPU")
    elif s.get("cpu_limit") is not None:
        limits.append(f"{s['cpu_limit']:g} s CPU")
    if s["node_limit"] is not None:
        limits.append(f"{s['node_limit']} nodes")
    if s["memory_limit_mb"] is not None:
        limits.append(f"{s['memory_limit_mb']} MB")
    return ", ".join(limits) or "none"


def _secs(x: float | None, digits: int = 3) -> str:
    return "—" if x is None else f"{x:.{digits}f} s"


def render_summary(s: Summary) -> Any:
    """Return a rich renderable of a summary dict: the run's figures, then one row per kind."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    title = f"run {s['run']}" + (f" ({s['label']})" if s["label"] else "")
    t = Table(title=title, show_header=False, title_justify="left")
    t.add_column(style="bold")
    t.add_column()
    t.add_row("solved", f"{s['solved']:,} of {s['total']:,}")
    t.add_row("state", f"{s['state']} ({s['done']:,}/{s['total']:,} final)")
    for status, n in s["counts"].items():
        example = s.get("messages", {}).get(status)
        text = Text(f"{n:,}")
        if example:
            text.append(f"  e.g. {short_message(example['message'], example['level'], 50)}", style="dim")
        t.add_row(f"  {status}", text)
    t.add_row("heuristic", s["heuristic"] + (f" ({', '.join(s['heuristics'])})" if s["heuristics"] else ""))
    t.add_row("limits", _limits_text(s))
    t.add_row("total CPU / wall", f"{s['cpu_s_total']:,.2f} s / {s['wall_s_total']:,.2f} s")
    if s["wall_s_median"] is not None:
        t.add_row("median CPU / wall", f"{_secs(s['cpu_s_median'])} / {_secs(s['wall_s_median'])}")
        t.add_row("max wall", _secs(s["wall_s_max"]))
    # PAR-2: a decided level counts its wall time, any other that ran twice the time limit.
    t.add_row(
        "PAR-2",
        f"{s['par2_s']:,.2f} s (mean {_secs(s['par2_mean_s'])} over {s['scored']:,}; "
        "an undecided level counts 2 × the limit)",
    )
    t.add_row(
        "makespan",
        _secs(s["makespan_s"], 2) + (f" (parallelism {s['parallelism']})" if s["parallelism"] else ""),
    )
    memory = s["memory"]
    if memory["by_kind"]:
        t.add_row("peak memory (MB)", ", ".join(f"{k} {mb:,.0f}" for k, mb in memory["by_kind"].items()))
        if len(memory["by_heuristic"]) > 1:
            # A row of its own: heuristics listed after the kinds read as more kinds.
            by_heuristic = (f"{h} {mb:,.0f}" for h, mb in memory["by_heuristic"].items())
            t.add_row("  by heuristic", ", ".join(by_heuristic))
    t.add_row("host, version", f"{s['host']}, packsolve {s['version']}")
    conc = f"concurrency {s['concurrency']}" if s["concurrency"] else s["mode"]
    t.add_row("workers", f"{s['workers']} seen on {', '.join(s['hosts']) or '—'} ({conc})")
    if s["cpus_per_attempt"]:
        t.add_row("pinned", f"each attempt to {s['cpus_per_attempt']} CPU(s) of its own")
    for label, value in provenance_rows(s["provenance"]):
        t.add_row(label, value)
    for warning in s["provenance"]["warnings"]:
        t.add_row("[yellow]warning[/]", f"[yellow]{warning}[/]")
    if len(s["kinds"]) < 1:
        return t
    kinds = _figures_table("kind", s["kinds"], "median wall", "wall_s_median")
    if not HeuristicMatrix.parse(s["heuristic"]).is_matrix:
        return Group(t, kinds)
    # A run of several heuristics side by side: one row each (`report matrix RUN` sets them per level).
    return Group(t, kinds, _figures_table("heuristic", s["by_heuristic"], "max wall", "wall_s_max"))


def _figures_table(name: str, rows: Mapping[str, Figures], wall: str, wall_key: str) -> Any:
    """Return the table of figures per kind or per heuristic (name), with one wall time column."""
    from rich import box
    from rich.table import Table

    k = Table(title_justify="left", box=box.SIMPLE_HEAD, collapse_padding=True, pad_edge=False)
    k.add_column(name, no_wrap=True)
    for column in ("solved", "decided", "total", wall, "CPU total", "PAR-2"):
        k.add_column(column, justify="right")
    for key, f in rows.items():
        k.add_row(
            key,
            f"{f['solved']:,}",
            f"{f['decided']:,}",
            f"{f['total']:,}",
            _secs(f[wall_key]),  # type: ignore[literal-required]
            f"{f['cpu_s_total']:,.2f} s",
            f"{f['par2_s']:,.2f} s",
        )
    return keep_figures_whole(k)  # a figure and its unit stay on one line
