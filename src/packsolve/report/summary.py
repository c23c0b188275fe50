"""`report summary`: solved X of Y, counts per status and per kind, times, PAR-2, makespan, provenance."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime
from itertools import groupby
from operator import itemgetter
from typing import Any

from sqlalchemy import case, func, select
from sqlalchemy.orm import Session

from packsolve.db.models import Attempt, Run
from packsolve.outcome import PENDING, Status
from packsolve.report.export import iso
from packsolve.report.metrics import NOT_RUN_VALUES, SUCCESS_VALUES, host_of, median, rounded
from packsolve.report.provenance import provenance_rows, run_provenance
from packsolve.report.text import short_message

PENDING_VALUES = frozenset(s.value for s in PENDING)
# Worker names listed in a summary; a run on hundreds of processes lists the count only.
MAX_WORKER_NAMES = 50


def _figures(groups: list[tuple], medians: dict[str, float | None], time_limit: float | None) -> dict:
    """Return counts and time figures from (status, count, wall sum, cpu sum, nodes sum, wall max) groups."""
    counts: Counter[str] = Counter()
    wall = cpu = par2_sum = 0.0
    nodes = scored = 0
    wall_max = None
    for status, n, wall_sum, cpu_sum, nodes_sum, max_wall in groups:
        counts[status] += n
        wall += wall_sum or 0.0
        cpu += cpu_sum or 0.0
        nodes += nodes_sum or 0
        if max_wall is not None:
            wall_max = max_wall if wall_max is None else max(wall_max, max_wall)
        if status in NOT_RUN_VALUES:
            continue
        scored += n
        if status in SUCCESS_VALUES:
            par2_sum += wall_sum or 0.0
        else:
            # Same rule as metrics.par2: twice the limit, or twice its own time without a limit.
            par2_sum += 2.0 * (time_limit * n if time_limit else (wall_sum or 0.0))
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
        "par2_s": round(par2_sum, 3),
        "par2_mean_s": rounded(par2_sum / scored if scored else None),
        "scored": scored,
    }


def _medians(session: Session, run_id: int) -> dict[str | None, dict[str, float | None]]:
    """Return {kind: {"wall": median, "cpu": median}} of the run's attempts, overall under None.

    Only the two time columns come back, through Core rows (no ORM objects),
    sorted by kind in the database: a 10,000-attempt run costs milliseconds.
    """
    q = (
        select(Attempt.kind, Attempt.wall_s, Attempt.cpu_s)
        .where(Attempt.run_id == run_id)
        .order_by(Attempt.kind)
    )
    rows: Sequence[Any] = session.connection().execute(q).all()

    def both(rs: Sequence[Any]) -> dict[str, float | None]:
        return {"wall": median([r[1] for r in rs]), "cpu": median([r[2] for r in rs])}

    out: dict[str | None, dict[str, float | None]] = {None: both(rows)}
    out.update({kind: both(list(rs)) for kind, rs in groupby(rows, key=itemgetter(0))})
    return out


def _aware(dt: datetime) -> datetime:
    # SQLite hands back naive UTC datetimes, PostgreSQL aware ones.
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def _seconds(start: datetime | None, end: datetime | None) -> float | None:
    if start is None or end is None:
        return None
    return round((end - start).total_seconds(), 3)


def run_summary(session: Session, run: Run) -> dict[str, Any]:
    """Return the summary of run as a JSON-ready dict (fields documented in docs/reports.md)."""
    conn = session.connection()  # Core, not ORM: these are plain aggregates
    # One pass for counts, sums, heuristics and the time span; one for medians; one for workers.
    ran_until = case((Attempt.started_at.is_not(None), Attempt.finished_at))
    groups = conn.execute(
        select(
            Attempt.kind, Attempt.heuristic, Attempt.status, func.count(), func.sum(Attempt.wall_s),
            func.sum(Attempt.cpu_s), func.sum(Attempt.nodes), func.max(Attempt.wall_s),
            func.min(Attempt.started_at), func.max(ran_until),
        )
        .where(Attempt.run_id == run.id)
        .group_by(Attempt.kind, Attempt.heuristic, Attempt.status)
    ).all()  # fmt: skip
    by_kind: dict[str, list] = defaultdict(list)
    for kind, _heuristic, *figures, _start, _end in groups:
        by_kind[kind].append(tuple(figures))
    heuristics = sorted({g[1] for g in groups})
    starts = [_aware(g[-2]) for g in groups if g[-2] is not None]
    ends = [_aware(g[-1]) for g in groups if g[-1] is not None]
    first_start, last_finish = min(starts, default=None), max(ends, default=None)
    medians = _medians(session, run.id)
    everything = _figures([g for k in by_kind.values() for g in k], medians.get(None, {}), run.time_limit)
    worker_rows = conn.execute(
        select(Attempt.worker).where(Attempt.run_id == run.id, Attempt.worker.is_not(None)).distinct()
    )
    workers = sorted(w for (w,) in worker_rows if w is not None)
    makespan = _seconds(first_start, last_finish)
    # One message per failing status, as an example (any one: an ordered pick would sort every
    # failure of a big run); `report failures` groups them all.
    messages = {}
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
        "state": run.state if run.finished_at is None or run.state == "cancelled" else "finished",
        "parent": run.parent_id,
        **everything,
        "makespan_s": makespan,
        # How many solver-seconds ran per second of makespan: the parallelism actually achieved.
        "parallelism": round(everything["wall_s_total"] / makespan, 2) if makespan else None,
        "created_at": iso(run.created_at),
        "finished_at": iso(run.finished_at),
        "heuristic": run.heuristic,
        "heuristics": heuristics,
        "kind": run.kind,
        "time_limit": run.time_limit,
        "node_limit": run.node_limit,
        "memory_limit_mb": run.memory_limit_mb,
        "concurrency": run.concurrency,
        "host": run.host,
        "version": run.version,
        "hosts": sorted({h for h in map(host_of, workers) if h}),
        "workers": len(workers),
        "worker_names": workers[:MAX_WORKER_NAMES],
        "kinds": {
            kind: _figures(g, medians.get(kind, {}), run.time_limit) for kind, g in sorted(by_kind.items())
        },
        "messages": messages,
        "memory": _peak_memory(session, run.id),
        "provenance": run_provenance(session, run),
    }


def _peak_memory(session: Session, run_id: int) -> dict[str, dict[str, float]]:
    """Return the largest peak RSS (MB) of the run's attempts, by kind and by heuristic (those measured)."""
    rows = (
        session.connection()
        .execute(
            select(Attempt.kind, Attempt.heuristic, func.max(Attempt.peak_rss_mb))
            .where(Attempt.run_id == run_id, Attempt.peak_rss_mb.is_not(None))
            .group_by(Attempt.kind, Attempt.heuristic)
        )
        .all()
    )
    by_kind: dict[str, float] = {}
    by_heuristic: dict[str, float] = {}
    for kind, heuristic, peak in rows:
        mb = round(float(peak or 0.0), 1)
        by_kind[kind] = max(by_kind.get(kind, 0.0), mb)
        by_heuristic[heuristic] = max(by_heuristic.get(heuristic, 0.0), mb)
    return {"by_kind": dict(sorted(by_kind.items())), "by_heuristic": dict(sorted(by_heuristic.items()))}


def _limits_text(s: dict[str, Any]) -> str:
    limits = []
    if s["time_limit"] is not None:
        limits.append(f"{s['time_limit']:g} s")
    if s["node_limit"] is not None:
        limits.append(f"{s['node_limit']} nodes")
    if s["memory_limit_mb"] is not None:
        limits.append(f"{s['memory_limit_mb']} MB")
    return ", ".join(limits) or "none"


def _secs(x: float | None, digits: int = 3) -> str:
    return "—" if x is None else f"{x:.{digits}f} s"


def render_summary(s: dict[str, Any]) -> Any:
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
    t.add_row("PAR-2", f"{s['par2_s']:,.2f} s (mean {_secs(s['par2_mean_s'])} over {s['scored']:,}; "
              "an undecided level counts 2 × the limit)")  # fmt: skip
    t.add_row(
        "makespan",
        _secs(s["makespan_s"], 2) + (f" (parallelism {s['parallelism']})" if s["parallelism"] else ""),
    )
    memory = s["memory"]
    if memory["by_kind"]:
        peaks = [f"{k} {mb:,.0f}" for k, mb in memory["by_kind"].items()]
        if len(memory["by_heuristic"]) > 1:
            peaks += [f"{h} {mb:,.0f}" for h, mb in memory["by_heuristic"].items()]
        t.add_row("peak memory (MB)", ", ".join(peaks))
    t.add_row("host, version", f"{s['host']}, packsolve {s['version']}")
    conc = f"concurrency {s['concurrency']}" if s["concurrency"] else s["mode"]
    t.add_row("workers", f"{s['workers']} seen on {', '.join(s['hosts']) or '—'} ({conc})")
    for label, value in provenance_rows(s["provenance"]):
        t.add_row(label, value)
    for warning in s["provenance"]["warnings"]:
        t.add_row("[yellow]warning[/]", f"[yellow]{warning}[/]")
    if len(s["kinds"]) < 1:
        return t
    k = Table("kind", "solved", "decided", "total", "median wall", "CPU total", "PAR-2", title_justify="left")
    for kind, f in s["kinds"].items():
        k.add_row(
            kind, f"{f['solved']:,}", f"{f['decided']:,}", f"{f['total']:,}", _secs(f["wall_s_median"]),
            f"{f['cpu_s_total']:,.2f} s", f"{f['par2_s']:,.2f} s",
        )  # fmt: skip
    return Group(t, k)
