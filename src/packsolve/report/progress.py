"""`status`: a run's progress, rate and an ETA from the median time of its attempts so far."""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import Any, TypedDict

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from packsolve.db.local_runs import shown_state
from packsolve.db.models import Attempt, Run, as_utc
from packsolve.db.refusals import Waiting, waiting_refused
from packsolve.db.runs import status_counts
from packsolve.db.workers import Buffered, buffered_in, db_now, held_by_lapsed, live_workers
from packsolve.outcome import PENDING, Status
from packsolve.report.metrics import median, rounded
from packsolve.report.provenance import kinds_no_worker_offers
from packsolve.runstate import RunMode, ShownState

# The median is taken over at most this many recent attempts: enough to be stable, cheap on huge runs.
MEDIAN_SAMPLE = 2000
# The ETA's rate: attempts finished over this many recent seconds, once at least MIN_RECENT did.
RATE_WINDOW_S = 120.0
MIN_RECENT = 10


class Serving(TypedDict):
    """Who serves a distributed run still going (every key null for a local or finished run).

    The keys are always there: a script reading `status --format json` must not find a key
    gone once the run finishes.
    """

    unsent: bool | None
    send_error: str | None
    live_workers: int | None
    running_lapsed: int | None
    kinds_unserved: str | None
    # Levels whose tasks workers refused lately (db.refusals): one line each reason, as status shows it,
    # and how many levels in all.
    refused: list[str] | None
    refused_levels: int | None


NOT_SERVED = Serving(
    unsent=None,
    send_error=None,
    live_workers=None,
    running_lapsed=None,
    kinds_unserved=None,
    refused=None,
    refused_levels=None,
)


class Working(TypedDict):
    """What a distributed run's attempts shown running do (every key null for a local run).

    The database shows an attempt `running` from its claim until its result is
    written: part of that it waits its turn in its worker's group (claimed), part
    it runs on a solver, and part its result waits in the worker's write buffer.
    """

    buffered: int | None
    buffered_by_worker: dict[str, int] | None
    claimed: int | None


NOT_WORKING = Working(buffered=None, buffered_by_worker=None, claimed=None)


class Progress(Serving, Working):
    """`status`: how far a run is, its rate and ETA, and (distributed, going) who serves it."""

    run: int
    label: str | None
    state: ShownState
    solver_gone: bool
    total: int
    done: int
    queued: int
    running: int
    counts: dict[str, int]
    finished: bool
    elapsed_s: float
    rate_per_s: float
    median_wall_s: float | None
    parallel: int
    eta_s: float | None
    eta_method: str


def run_progress(session: Session, run: Run, now: datetime | None = None) -> Progress:
    """Return done/total, counts, rate and ETA of run as a JSON-ready dict.

    ETA = attempts left to run (pending, less the results waiting in a worker's
    write buffer: they need no more solver time) ÷ the recent rate (_recent_rate);
    before enough finished, × median wall time so far ÷ parallel slots, where
    the slots are the run's concurrency (local) or the attempts running now
    (distributed); before any attempt has a time it falls back to the rate, and
    it is None when nothing has finished yet.
    """
    now = now or db_now(session)  # the database server's clock: the attempts were stamped in it
    counts = status_counts(session, run.id)
    total = sum(counts.values())
    queued, running = counts.get(Status.QUEUED.value, 0), counts.get(Status.RUNNING.value, 0)
    done = total - queued - running
    remaining = queued + running
    queued, running, working = _working(session, run, now, queued, running)
    to_run = remaining - (working["buffered"] or 0)
    first_start = as_utc(
        session.scalar(select(func.min(Attempt.started_at)).where(Attempt.run_id == run.id))
    ) or as_utc(run.created_at)
    end = as_utc(run.finished_at) or now
    elapsed = max(0.0, (end - first_start).total_seconds()) if first_start else 0.0
    walls = session.scalars(
        select(Attempt.wall_s)
        .where(Attempt.run_id == run.id, Attempt.wall_s.is_not(None))
        .order_by(Attempt.finished_at.desc())
        .limit(MEDIAN_SAMPLE)
    ).all()
    med = median(walls)
    busy_workers = session.scalar(
        select(func.count(func.distinct(Attempt.worker))).where(
            Attempt.run_id == run.id, Attempt.status == Status.RUNNING.value
        )
    )
    parallel = max(1, run.concurrency or running or busy_workers or 1)
    rate = done / elapsed if elapsed > 0 and done else 0.0
    serving = _serving(session, run, remaining)
    recent = _recent_rate(session, run.id, now, elapsed)
    if not remaining:
        eta, method = 0.0, "done"
    elif serving["live_workers"] == 0:
        eta, method = None, "no worker"  # nobody runs them: no time can be promised
    elif recent is not None:
        eta, method = to_run / recent, "recent rate"
    elif med is not None:
        eta, method = math.ceil(to_run / parallel) * med, "median"
    elif rate:
        eta, method = to_run / rate, "rate"
    else:
        eta, method = None, "unknown"
    # A local run whose solve process is gone (killed, crashed) stays unfinished until resumed: say so,
    # and promise no end time.
    state = shown_state(run)
    gone = state is ShownState.INTERRUPTED
    if gone:
        eta, method = None, ShownState.INTERRUPTED.value
    return {
        "run": run.id,
        "label": run.label,
        "state": state,
        "solver_gone": gone,
        "total": total,
        "done": done,
        "queued": queued,
        "running": running,
        **working,
        "counts": counts,
        "finished": run.finished_at is not None,
        "elapsed_s": round(elapsed, 1),
        "rate_per_s": round(rate, 3),
        "median_wall_s": rounded(med),
        "parallel": parallel,
        "eta_s": None if eta is None else round(eta, 1),
        "eta_method": method,
        **serving,
    }


def _working(
    session: Session, run: Run, now: datetime, queued: int, running: int
) -> tuple[int, int, Working]:
    """Return a run's queued and really running attempts, and what the rest shown running does.

    For a distributed run, of the attempts the database shows pending: those
    claimed and not started (in their worker's group), and those whose result a
    live worker process computed and has not written yet (its write buffer, as its
    last lease renewal published it: db.workers.buffered_in) are told apart; a
    buffered result of an attempt run before its claim (a tiny one) shows queued.
    Running is what is left: attempts on a solver now. A local run's are left as
    the database shows them.
    """
    if run.mode != RunMode.DISTRIBUTED:
        return queued, running, NOT_WORKING
    claimed: int | None = 0
    buffered = Buffered({}, 0, 0)
    if queued or running:
        claimed = session.scalar(
            select(func.count()).where(
                Attempt.run_id == run.id,
                Attempt.status == Status.RUNNING.value,
                Attempt.started_at.is_(None),
            )
        )
        buffered = buffered_in(session, run.id, now)
    really = max(0, running - (claimed or 0) - buffered.claimed)
    working = Working(buffered=buffered.total, buffered_by_worker=buffered.by_host, claimed=claimed or 0)
    return max(0, queued - buffered.unclaimed), really, working


def _recent_rate(session: Session, run_id: int, now: datetime, elapsed: float) -> float | None:
    """Return attempts finished per second over the last RATE_WINDOW_S (or the run so far, if shorter).

    None with fewer than MIN_RECENT finished in the window. A throughput, not a median time per
    slot: it does not swing with how many attempts look running at the moment of a refresh
    (a worker's buffered results, a chunk just claimed).
    """
    since = now - timedelta(seconds=RATE_WINDOW_S)
    recent = session.scalar(
        select(func.count()).where(
            Attempt.run_id == run_id, Attempt.finished_at >= since.replace(tzinfo=None)
        )
    )
    span = min(RATE_WINDOW_S, elapsed)
    if not recent or recent < MIN_RECENT or span <= 0:
        return None
    return float(recent) / span


def _serving(session: Session, run: Run, remaining: int) -> Serving:
    """Return who serves a distributed run still going: live workers, lapsed claims, kinds nobody offers.

    Nulls for a local or finished run. From the workers' leases (db.workers): a
    worker process is live while its lease lies ahead.
    """
    if run.mode != RunMode.DISTRIBUTED or run.finished_at is not None:
        return NOT_SERVED
    now = db_now(session)
    live = live_workers(session, now)
    unserved = kinds_no_worker_offers(session, run.id, [w.offers for w in live]) if live and remaining else []
    waiting = waiting_refused(session, run.id, now) if remaining else []
    return {
        "unsent": run.sent_at is None,
        "send_error": run.send_error,
        "live_workers": len({w.host for w in live}),
        "running_lapsed": held_by_lapsed(session, run.id, now),
        "kinds_unserved": ",".join(unserved),
        "refused": _refused_lines(waiting, {w.host for w in live}),
        "refused_levels": sum(w.levels for w in waiting),
    }


def _refused_lines(waiting: list[Waiting], live: set[str]) -> list[str]:
    """Return a line per reason the run's queued levels were refused lately: how many wait, and by whom."""
    out = []
    for w in waiting:
        who = "every live worker" if live and live <= set(w.hosts) else ", ".join(w.hosts)
        out.append(f"{w.levels} level(s) wait, refused by {who}: {w.reason}")
    return out


def duration(seconds: float | None) -> str:
    """Return seconds as 0m42s or 3h07m ('—' for None)."""
    if seconds is None:
        return "—"
    s = int(round(seconds))
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


def rate_text(per_s: float) -> str:
    """Return a rate of levels per second readable from 0.001/s to thousands per second."""
    if per_s and per_s < 0.1:
        return f"{per_s * 60:.2g} levels/min"
    return f"{per_s:.3g} levels/s"


def progress_line(
    run_id: int, done: int, total: int, counts: dict[str, int], rate_per_s: float, eta_s: float | None
) -> str:
    """Return one line of progress for a log: done/total, counts per final status, rate and ETA."""
    finals = " ".join(f"{k} {v}" for k, v in sorted(counts.items()) if v and k not in PENDING)
    share = f" ({100 * done // total}%)" if total else ""
    return (
        f"run {run_id}: {done}/{total} final{share} · {finals or 'none yet'} · {rate_text(rate_per_s)} · "
        f"eta {duration(eta_s)}"
    )


def render_progress(p: Progress) -> Any:
    """Return a rich renderable: counts per status, a bar, then rate and ETA in lines that fit 80 columns."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    title = Text(f"run {p['run']}" + (f" ({p['label']})" if p["label"] else ""), style="italic")
    t = Table(title_justify="left")  # the title above it, not wrapped to the narrow table's width
    t.add_column("status")
    t.add_column("levels", justify="right")
    for status_name, n in sorted(p["counts"].items()):
        t.add_row(status_name, str(n))
    state: str = p["state"]
    if p.get("eta_method") == "no worker":
        state = "waiting"  # not "running": no live worker runs its levels
    refused = p.get("refused_levels") or 0
    if refused and refused >= p["total"] - p["done"]:
        state = "waiting"  # every level left was refused lately (the lines below say why)
    med = "—" if p["median_wall_s"] is None else f"{p['median_wall_s']:.3f} s"
    share = f" ({100 * p['done'] // p['total']}%)" if p["total"] else ""
    # Two short lines, not one long one: rate and ETA must stay in view on an 80-column terminal.
    rate, eta = rate_text(p["rate_per_s"]), duration(p["eta_s"])
    first = f"{p['done']}/{p['total']} final{share} · {state} · {rate} · eta {eta}"
    second = f"elapsed {duration(p['elapsed_s'])} · median {med} × {p['parallel']} slot(s)"
    filled = round(40 * p["done"] / p["total"]) if p["total"] else 0
    bar = Text("━" * filled, style="green") + Text("━" * (40 - filled), style="grey37")
    lines: list[Any] = [title, t, bar, Text(first), Text(second, style="dim")]
    lines.extend(_working_lines(p))
    lines.extend(_serving_lines(p))
    if p.get("solver_gone"):
        lines.append(
            Text(f"its solve process is gone: `packsolve resume {p['run']}` runs the rest", style="yellow")
        )
    return Group(*lines)


def _working_lines(p: Progress) -> list[Any]:
    """Return what a distributed run's attempts shown running do: on a solver, claimed, buffered."""
    from rich.text import Text

    if not (p["claimed"] or p["buffered"]):
        return []
    line = f"{p['running']} running on a solver"
    if p["claimed"]:
        line += f" · {p['claimed']} claimed, not started"
    if p["buffered"]:
        line += f" · {p['buffered']} done, not yet written"
    lines = [Text(line, style="dim")]
    if p["buffered"] and p["buffered_by_worker"]:
        held = ", ".join(f"{host} {n}" for host, n in p["buffered_by_worker"].items())
        lines.append(Text(f"waiting in write buffers: {held}", style="dim"))
    return lines


def _serving_lines(p: Progress) -> list[Any]:
    """Return the warnings about who serves a distributed run (see _serving), as yellow lines."""
    from rich.text import Text

    return [Text(line, style="yellow") for line in serving_warnings(p)]


def serving_warnings(p: Progress) -> list[str]:
    """Return what keeps a distributed run from being served, a line each (see _serving); [] if nothing."""
    run = p["run"]
    out: list[str] = []
    if p.get("unsent"):
        why = (
            f" ({p['send_error']})"
            if p.get("send_error")
            else " (its submit is still sending, or was killed)"
        )
        out.append(f"not every task was sent{why}: `packsolve resume {run}` sends them")
    remaining = p["total"] - p["done"]
    if p["live_workers"] == 0 and remaining:
        out.append("no live worker serves this run: start `packsolve worker` on this database and broker")
    if p.get("running_lapsed"):
        out.append(
            f"{p['running_lapsed']} running under a worker whose lease lapsed: "
            "`packsolve scheduler` requeues them"
        )
    if p.get("kinds_unserved"):
        out.append(f"no live worker offers {p['kinds_unserved']}: those levels wait for one that does")
    out.extend(p.get("refused") or [])
    return out


PROGRESS_COLUMNS = [
    "run",
    "label",
    "state",
    "total",
    "done",
    "queued",
    "running",
    "claimed",
    "buffered",
    "elapsed_s",
    "rate_per_s",
    "median_wall_s",
    "parallel",
    "eta_s",
    "eta_method",
    "finished",
    "solver_gone",
    "unsent",
    "live_workers",
    "running_lapsed",
    "kinds_unserved",
    "refused",
    "refused_levels",
    *(f"count_{s.value}" for s in Status),
]


def progress_row(p: Progress) -> dict[str, Any]:
    """Return a progress dict as one flat CSV row with the same columns whatever the counts."""
    row = {k: p.get(k) for k in PROGRESS_COLUMNS if not k.startswith("count_")}
    row["refused"] = "; ".join(p.get("refused") or []) or None
    row.update({f"count_{s.value}": p["counts"].get(s.value, 0) for s in Status})
    return row
