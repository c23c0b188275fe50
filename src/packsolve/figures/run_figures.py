"""A run's figures without reading its attempts: the counts and sums kept by triggers, medians kept once.

run_figures (migration 0014) counts a run's attempts per (kind, heuristic, status) with the sums of
their times and nodes; the database's triggers keep it in the transaction that changes the attempts
(db.run_counts folds it on PostgreSQL). Medians and peak memory cannot be kept that way (a median
moves, a maximum cannot be taken back): a finished run's are read once, after it finished, and kept
as its FINAL snapshot (figures.snapshots); a run still going has its own read over its attempts.
"""

from __future__ import annotations

import statistics
from typing import Any, NamedTuple

from sqlalchemy import Connection, func, select
from sqlalchemy.orm import Session

from packsolve.db.models import RUN_FIGURES, Attempt
from packsolve.figures import snapshots

F = RUN_FIGURES.c
# The whole run's medians are kept under this kind; a kind's medians under this heuristic.
WHOLE = ""


class Group(NamedTuple):
    """A run's attempts of one kind, heuristic and status: how many, and their figures' sums."""

    kind: str
    heuristic: str
    status: str
    attempts: int
    wall_n: int  # how many have a wall time
    wall_sum: float
    cpu_n: int
    cpu_sum: float
    nodes_sum: int


def groups(db: Session | Connection, run_id: int) -> list[Group]:
    """Return the run's groups of attempts, in (kind, heuristic, status) order (none for no such run)."""
    key = (F.kind, F.heuristic, F.status)
    sums = [func.sum(c) for c in (F.attempts, F.wall_n, F.wall_sum, F.cpu_n, F.cpu_sum, F.nodes_sum)]
    rows = db.execute(
        select(*key, *sums)
        .where(F.run_id == run_id)
        .group_by(*key)
        .having(func.sum(F.attempts) > 0)
        .order_by(*key)
    )
    return [
        Group(kind, heuristic, status, int(n), int(wn), float(ws), int(cn), float(cs), int(nodes))
        for kind, heuristic, status, n, wn, ws, cn, cs, nodes in rows
    ]


def medians(
    db: Session | Connection, run_id: int, measured: dict[str, tuple[int, int]]
) -> dict[str, dict[str, float | None]]:
    """Return {kind: {"wall": median, "cpu": median}} of the run's attempts, the whole run under WHOLE.

    measured holds, per kind (the whole run under WHOLE), how many attempts have a wall and a CPU
    time. Each median is the one or two middle values in the order of an index ((run, kind, time),
    or the dashboard's (run, time, id)): no more than two values per figure leave the database.
    """
    out: dict[str, dict[str, float | None]] = {}
    for kind, counts in measured.items():
        figures: dict[str, float | None] = {}
        for name, column, n in (("wall", Attempt.wall_s, counts[0]), ("cpu", Attempt.cpu_s, counts[1])):
            if not n:
                figures[name] = None
                continue
            where = [Attempt.run_id == run_id, column.is_not(None)]
            if kind != WHOLE:
                where.append(Attempt.kind == kind)
            middles = db.execute(
                select(column).where(*where).order_by(column).limit(2 - n % 2).offset((n - 1) // 2)
            ).scalars()
            values = [float(v) for v in middles if v is not None]
            # None if the run changed between its counts and this read (a run going).
            figures[name] = statistics.median(values) if values else None
        out[kind] = figures
    return out


def measured_of(found: list[Group]) -> dict[str, tuple[int, int]]:
    """Return {kind: (attempts with a wall time, with a CPU time)}, the whole run's under WHOLE."""
    out: dict[str, tuple[int, int]] = {WHOLE: (0, 0)}
    for g in found:
        for key in (WHOLE, g.kind):
            had = out.get(key, (0, 0))
            out[key] = (had[0] + g.wall_n, had[1] + g.cpu_n)
    return out


def peak_memory(db: Session | Connection, run_id: int) -> dict[tuple[str, str], float]:
    """Return {(kind, heuristic): largest peak RSS (MB)} of the run's attempts that have one."""
    rows = db.execute(
        select(Attempt.kind, Attempt.heuristic, func.max(Attempt.peak_rss_mb))
        .where(Attempt.run_id == run_id, Attempt.peak_rss_mb.is_not(None))
        .group_by(Attempt.kind, Attempt.heuristic)
    )
    return {(kind, heuristic): float(peak) for kind, heuristic, peak in rows if peak is not None}


class Final(NamedTuple):
    """What a finished run keeps of the figures that are read over all its attempts."""

    medians: dict[str, dict[str, float | None]]  # {kind or WHOLE: {"wall": .., "cpu": ..}}
    peaks: dict[tuple[str, str], float]  # {(kind, heuristic): peak RSS MB}


def final_of(db: Session | Connection, run_id: int) -> Final:
    """Return the run's medians and peaks, read over its attempts."""
    return Final(medians(db, run_id, measured_of(groups(db, run_id))), peak_memory(db, run_id))


def _payload(final: Final) -> dict[str, Any]:
    peaks = [[kind, heuristic, peak] for (kind, heuristic), peak in final.peaks.items()]
    return {"medians": final.medians, "peaks": peaks}


def store_final(db: Session | Connection, run_id: int) -> Final:
    """Read the finished run's medians and peaks, keep them as its FINAL snapshot and return them."""
    final = final_of(db, run_id)
    snapshots.keep(db, run_id, snapshots.FINAL, _payload(final))
    return final


def kept_final(db: Session | Connection, run_id: int) -> Final | None:
    """Return what was kept for the run as finished now, None if nothing is (a run going, or resumed)."""
    payload = snapshots.kept(db, run_id, snapshots.FINAL)
    if payload is None:
        return None
    peaks = {(kind, heuristic): float(peak) for kind, heuristic, peak in payload["peaks"]}
    return Final(payload["medians"], peaks)


def finished_final(db: Session | Connection, run_id: int) -> Final:
    """Return a finished run's medians and peaks: kept, else read now and kept (its first reader's)."""
    found = kept_final(db, run_id)
    return found if found is not None else store_final(db, run_id)
