"""`packsolve workers` and the dashboard's workers page: every worker process on record, its history,
and the queues with how long they take to drain.

A worker (a Celery node, `name@machine`) runs pool processes; each process has a lease
(db.workers) and a history (worker_events). A process is live while its lease lies ahead,
stopped once it ended it cleanly, lost when its lease lapsed with no clean exit (killed, its
machine gone, cut off): a lost process stays listed, with the attempts taken back from it, for
db.workers.KEEP_FOR.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, exists, func, select
from sqlalchemy.orm import Session

from packsolve.db.models import RUN_FIGURES, Attempt, Run, Worker, WorkerEvent, WorkerEventKind, as_utc
from packsolve.db.workers import WorkerState, db_now, state_of
from packsolve.outcome import Status
from packsolve.report.export import iso
from packsolve.report.progress import duration
from packsolve.runstate import RunMode

# A process's state, from its lease and how it ended.
LIVE, LOST, STOPPED = WorkerState.LIVE, WorkerState.LOST, WorkerState.STOPPED
_ORDER = {LIVE: 0, LOST: 1, STOPPED: 2}
# Attempts shown running per process, and events per process (the newest).
RUNNING_SHOWN = 50
EVENTS_SHOWN = 50
# The recent throughput a queue's drain time is reckoned from: attempts finished in this window.
THROUGHPUT_WINDOW = timedelta(minutes=5)


def _seconds(later: datetime | None, earlier: datetime | None) -> float | None:
    a, b = as_utc(later), as_utc(earlier)
    return None if a is None or b is None else round((a - b).total_seconds(), 1)


def process_rows(session: Session, now: datetime | None = None) -> list[dict[str, Any]]:
    """Return every worker process on record as a JSON-ready dict: live first, then lost, then stopped.

    Each has its worker (Celery node) and machine, state, lease (renewed, until, age: seconds since
    its last renewal), concurrency, declared programs with their hashes, whether it runs only signed
    tasks, what it runs now, its history (oldest first) and the attempts taken back from it.
    """
    now = now or db_now(session)
    workers = list(session.scalars(select(Worker)))
    names = [w.name for w in workers]
    running: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
    history: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
    for i in range(0, len(names), 500):
        part = names[i : i + 500]
        held = session.execute(
            select(Attempt.holder, Attempt.run_id, Attempt.name, Attempt.started_at)
            .where(Attempt.holder.in_(part), Attempt.status == Status.RUNNING)
            .order_by(Attempt.holder, Attempt.started_at)
        )
        for holder, run_id, name, started in held:
            mine = running[str(holder)]
            if len(mine) < RUNNING_SHOWN:
                mine.append({"run": run_id, "level": name, "started_at": iso(started)})
        recorded = session.execute(
            select(WorkerEvent.worker, WorkerEvent.kind, WorkerEvent.at, WorkerEvent.detail)
            .where(WorkerEvent.worker.in_(part))
            .order_by(WorkerEvent.worker, WorkerEvent.at, WorkerEvent.id)
        )
        for worker, kind, at, detail in recorded:
            history[worker].append({"at": iso(at), "event": str(kind), "detail": detail})
    rows = []
    for w in workers:
        state = state_of(w.lease_until, w.stopped_at, now)
        live = state == LIVE
        taken = [
            a
            for e in history[w.name]
            if e["event"] == WorkerEventKind.TAKEN_BACK
            for a in (e["detail"] or {}).get("attempts", [])
        ]
        taken_count = sum(
            int((e["detail"] or {}).get("count", 0))
            for e in history[w.name]
            if e["event"] == WorkerEventKind.TAKEN_BACK
        )
        ended = (
            w.stopped_at if state == STOPPED else (w.lapsed_at or w.lease_until) if state == LOST else None
        )
        buffered = json.loads(w.buffered) if w.buffered and live else {}
        rows.append(
            {
                "process": w.name,
                "worker": w.host,
                "machine": w.host.rpartition("@")[2],
                "state": state,
                "started_at": iso(w.started_at),
                "renewed_at": iso(w.renewed_at),
                "lease_until": iso(w.lease_until),
                "lease_age_s": _seconds(now, w.renewed_at) if live else None,
                "ended_at": iso(ended),
                "concurrency": w.concurrency,
                "cpus": w.cpus,
                "signs": bool(w.signs),
                "programs": json.loads(w.programs) if w.programs else {},
                "kinds": sorted(json.loads(w.offers or "{}")),
                "running": running[w.name],
                "buffered": sum(len(v) for v in buffered.values()),
                "history": history[w.name][-EVENTS_SHOWN:],
                "taken_back": taken,
                "taken_back_count": taken_count,
            }
        )
    rows.sort(key=lambda r: (_ORDER[r["state"]], r["worker"], r["process"]))
    return rows


def worker_rows(processes: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Return the processes grouped by worker (Celery node): its machine, state (live if any process
    is, else lost if any was lost, else stopped), concurrency, signing, programs, and processes."""
    by_worker: dict[str, list[dict[str, Any]]] = {}
    for p in processes:
        by_worker.setdefault(p["worker"], []).append(p)
    rows = []
    for worker, mine in by_worker.items():
        states = {p["state"] for p in mine}
        state = min(states, key=_ORDER.__getitem__)
        newest = max(mine, key=lambda p: p["started_at"] or "")
        rows.append(
            {
                "worker": worker,
                "machine": newest["machine"],
                "state": state,
                "concurrency": newest["concurrency"],
                "signs": newest["signs"],
                "programs": newest["programs"],
                "processes": mine,
            }
        )
    rows.sort(key=lambda r: (_ORDER[r["state"]], r["worker"]))
    return rows


def queue_rows(
    session: Session, default_queue: str, depth: Callable[[str], int], now: datetime | None = None
) -> list[dict[str, Any]]:
    """Return each queue's figures: tasks waiting (depth(queue), from the broker), attempts queued, the
    oldest queued attempt no worker holds yet (when its task was sent, and its age), the attempts
    finished in the last THROUGHPUT_WINDOW, and the expected drain time at that pace.

    The queues are default_queue and those the going distributed runs were sent to (a run made before
    runs named their queue counts on default_queue). depth may raise (queue.brokerscan.BrokerUnreadable):
    the queue's depth is then None and depth_error says why.
    """
    now = now or db_now(session)
    going = session.execute(
        select(Run.id, Run.options, Run.sent_at).where(
            Run.mode == RunMode.DISTRIBUTED, Run.finished_at.is_(None), Run.sent_at.is_not(None)
        )
    ).all()
    queues: dict[str, list[tuple[int, datetime]]] = {default_queue: []}
    for run_id, options, sent_at in going:
        name = str((options or {}).get("queue") or default_queue)
        queues.setdefault(name, []).append((run_id, as_utc(sent_at) or now))
    rows = []
    for name, runs in sorted(queues.items()):
        ids = [r for r, _ in runs]
        queued = _queued(session, ids)
        oldest = min((o for o in (_oldest_unheld(session, r, sent) for r, sent in runs) if o), default=None)
        since = min((sent for _, sent in runs), default=now)
        window = min(THROUGHPUT_WINDOW, max(now - since, timedelta(seconds=1)))
        finished = _finished_since(session, ids, now - window)
        rate = finished / window.total_seconds() if finished else 0.0
        row: dict[str, Any] = {
            "queue": name,
            "depth": None,
            "depth_error": None,
            "runs": sorted(ids),
            "queued": queued,
            "oldest_sent_at": iso(oldest),
            "oldest_age_s": _seconds(now, oldest),
            "finished_recently": finished,
            "window_s": round(window.total_seconds(), 1),
            "rate_per_s": round(rate, 3),
            "drain_s": round(queued / rate, 1) if rate > 0 and queued else (0.0 if not queued else None),
        }
        try:
            row["depth"] = depth(name)
        except Exception as exc:  # the broker away: the database's figures still stand
            row["depth_error"] = str(exc)
        rows.append(row)
    return rows


def _queued(session: Session, run_ids: list[int]) -> int:
    """Return how many attempts of these runs are queued (from run_figures: a few rows per run)."""
    if not run_ids:
        return 0
    f = RUN_FIGURES.c
    total = session.scalar(
        select(func.sum(f.attempts)).where(f.run_id.in_(run_ids), f.status == Status.QUEUED.value)
    )
    return int(total or 0)


def _oldest_unheld(session: Session, run_id: int, sent_at: datetime) -> datetime | None:
    """Return when the oldest queued attempt of the run that no worker holds was sent (None: none).

    One sent with the run and never again has no queued_at: the run's sent_at is its time, and it is
    older than any sent again. Else the earliest queued_at of those sent again.
    """
    waiting = and_(Attempt.run_id == run_id, Attempt.status == Status.QUEUED, Attempt.holder.is_(None))
    if session.scalar(select(exists().where(waiting, Attempt.queued_at.is_(None)))):
        return sent_at
    return as_utc(session.scalar(select(func.min(Attempt.queued_at)).where(waiting)))


def _finished_since(session: Session, run_ids: list[int], since: datetime) -> int:
    """Return how many attempts of these runs finished since then (the finished_at sort index)."""
    if not run_ids:
        return 0
    return int(
        session.scalar(select(func.count()).where(Attempt.run_id.in_(run_ids), Attempt.finished_at >= since))
        or 0
    )


def event_text(e: dict[str, Any]) -> str:
    """Return one history line's words: the event and what it says (the attempts taken back, why)."""
    detail = e["detail"] or {}
    words = e["event"]
    if e["event"] == WorkerEventKind.TAKEN_BACK:
        named = ", ".join(f"run {a['run']} {a['level']} ({a['as']})" for a in detail.get("attempts", []))
        more = int(detail.get("count", 0)) - len(detail.get("attempts", []))
        words += f" {detail.get('count', 0)}: {named}" + (f" and {more} more" if more > 0 else "")
    elif detail.get("why"):
        words += f": {detail['why']}"
    elif detail.get("lapsed_s") is not None:
        words += f" ({detail['lapsed_s']} s lapsed)"
    return words


def render_workers(workers: list[dict[str, Any]], queues: list[dict[str, Any]], where: str) -> Any:
    """Return rich renderables that fit 80 columns: the queues, then each worker with its processes
    and the history of those not live."""
    from rich.console import Group
    from rich.text import Text

    parts: list[Any] = [_queue_table(queues, where)]
    for r in queues:
        if r["depth_error"]:
            parts.append(
                Text(f"queue {r['queue']}: tasks waiting unknown ({r['depth_error']})", style="yellow")
            )
    if not workers:
        parts.append(Text(f"no worker has started on {where}: start one with `packsolve worker`"))
        return Group(*parts)
    parts.append(_worker_table(workers))
    for w in workers:
        for p in w["processes"]:
            if p["state"] != LIVE:
                lines = [Text(f"{p['process']} ({p['state']}):", style="bold")]
                for e in p["history"]:
                    lines += [Text(line) for line in _history_lines(e)]
                parts.append(Group(*lines))
    return Group(*parts)


def _history_lines(e: dict[str, Any]) -> list[str]:
    """Return one history entry as lines of at most 80 columns: the levels taken back one per line,
    each name shortened from the left (report.text.short_name) so it never wraps."""
    from packsolve.report.text import short_name

    head = f"  {_when(e['at'])}  "
    if e["event"] != WorkerEventKind.TAKEN_BACK:
        return [head + event_text(e)]
    detail = e["detail"] or {}
    attempts = detail.get("attempts", [])
    lines = [f"{head}{e['event']} {detail.get('count', 0)}:"]
    for a in attempts:
        run, how = f"    run {a['run']} ", f" ({a['as']})"
        lines.append(run + short_name(a["level"], 80 - len(run) - len(how)) + how)
    more = int(detail.get("count", 0)) - len(attempts)
    if more > 0:
        lines.append(f"    and {more} more")
    return lines


def _when(at: str | None) -> str:
    """Return an ISO time as date and time to the second (UTC), for a table."""
    return (at or "")[:19].replace("T", " ")


def _queue_table(queues: list[dict[str, Any]], where: str) -> Any:
    from rich import box
    from rich.table import Table
    from rich.text import Text

    from packsolve.report.columns import keep_figures_whole

    q = Table(title=f"queues of {where}", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for name in ("queue", "tasks", "queued", "oldest", "done/min", "drains in"):
        right = name != "queue"
        q.add_column(name, justify="right" if right else "left", overflow="fold", ratio=None if right else 1)
    for r in queues:
        q.add_row(
            Text(r["queue"]),
            "?" if r["depth"] is None else f"{r['depth']:,}",
            f"{r['queued']:,}",
            duration(r["oldest_age_s"]),
            f"{r['rate_per_s'] * 60:,.1f}",
            duration(r["drain_s"]),
        )
    return keep_figures_whole(q)


def _worker_table(workers: list[dict[str, Any]]) -> Any:
    from rich import box
    from rich.table import Table
    from rich.text import Text

    t = Table(title="workers", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for name in ("worker / process", "state", "lease", "runs now"):
        t.add_column(name, overflow="fold", ratio=1 if name in ("worker / process", "runs now") else None)
    for w in workers:
        signed = "signed tasks only" if w["signs"] else "unsigned tasks accepted"
        programs = ", ".join(
            f"{n} {p['sha256'][:12] if p.get('sha256') else '(missing)'}" for n, p in w["programs"].items()
        )
        about = f"{w['machine']}, concurrency {w['concurrency'] or '?'}, {signed}" + (
            f"; programs: {programs}" if programs else ""
        )
        t.add_row(
            Text(w["worker"], style="bold") + Text("\n" + about, style="dim"), _state(w["state"]), "", ""
        )
        for p in w["processes"]:
            live = p["state"] == LIVE and p["lease_age_s"] is not None
            lease = f"renewed {p['lease_age_s']:.0f} s ago" if live else f"ended {_when(p['ended_at'])}"
            now = ", ".join(f"run {a['run']} {a['level']}" for a in p["running"]) or "—"
            process = Text("  " + p["process"])
            if p["cpus"]:
                process.append(f" CPUs {p['cpus']}", style="dim")
            t.add_row(process, _state(p["state"]), lease, Text(now))
    return t


def _state(state: str) -> Any:
    from rich.text import Text

    return Text(state, style={LIVE: "green", LOST: "red", STOPPED: "dim"}[WorkerState(state)])
