"""A run's figures without reading its attempts: the counts and sums kept by triggers, medians kept at finish.

run_figures (migration 0014) counts a run's attempts per (kind, heuristic, status) with the sums of
their times and nodes; the database's triggers keep it in the transaction that changes the attempts.
Medians and peak memory cannot be kept that way (a median moves, a maximum cannot be taken back): a
finished run's are read once, when it is stamped finished, and kept in run_final; a run still going
has its own read over its attempts.
"""

from __future__ import annotations

import statistics
from typing import NamedTuple

from sqlalchemy import Connection, and_, delete, func, insert, literal, select, text
from sqlalchemy.orm import Session

from packsolve.db.models import RUN_FIGURES, Attempt, Run, RunFinal
from packsolve.db.workers import on_postgresql

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


def status_counts(db: Session | Connection, run_id: int) -> dict[str, int]:
    """Return {status: number of the run's attempts in it}: one indexed read of a few rows."""
    rows = db.execute(
        select(F.status, func.sum(F.attempts))
        .where(F.run_id == run_id)
        .group_by(F.status)
        .having(func.sum(F.attempts) > 0)
    )
    return {status: int(n) for status, n in rows}


# A transaction-scoped advisory lock per run: one fold of a run at a time, the others skip theirs.
_FOLD_LOCK = 0x70616B66  # "pakf"


def fold(db: Session | Connection, run_id: int) -> None:
    """Replace the run's rows in run_figures by one per group, on PostgreSQL (SQLite has one already).

    Each statement on attempts adds its own signed rows there (see migration 0014); folding keeps the
    rows a reader adds up few. It takes only the rows it deletes, which no writer ever updates: it
    cannot deadlock with the workers, and a fold already under way elsewhere makes this one skip.
    """
    if not on_postgresql(db):
        return
    locked = db.execute(text("SELECT pg_try_advisory_xact_lock(:k, :r)"), {"k": _FOLD_LOCK, "r": run_id})
    if not locked.scalar():
        return
    db.execute(
        text(
            "WITH gone AS (DELETE FROM run_figures WHERE run_id = :r RETURNING *) "
            "INSERT INTO run_figures "
            "(run_id, kind, heuristic, status, attempts, wall_n, wall_sum, cpu_n, cpu_sum, nodes_sum) "
            "SELECT run_id, kind, heuristic, status, sum(attempts), sum(wall_n), sum(wall_sum), "
            "sum(cpu_n), sum(cpu_sum), sum(nodes_sum) FROM gone "
            "GROUP BY run_id, kind, heuristic, status HAVING sum(attempts) <> 0"
        ),
        {"r": run_id},
    )


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


def store_final(db: Session | Connection, run_id: int) -> None:
    """Read the finished run's medians and peaks and keep them, with its finished_at (replacing any)."""
    final = final_of(db, run_id)
    db.execute(delete(RunFinal).where(RunFinal.run_id == run_id))
    finished = select(Run.finished_at).where(Run.id == run_id).scalar_subquery()
    rows: list[tuple[str, str, float | None, float | None, float | None]]
    rows = [(kind, WHOLE, m["wall"], m["cpu"], None) for kind, m in final.medians.items()]
    rows += [(kind, heuristic, None, None, peak) for (kind, heuristic), peak in final.peaks.items()]
    for kind, heuristic, wall, cpu, peak in rows:
        values = (
            literal(run_id),
            literal(kind),
            literal(heuristic),
            literal(wall),
            literal(cpu),
            literal(peak),
        )
        db.execute(
            insert(RunFinal).from_select(
                ["run_id", "kind", "heuristic", "wall_median", "cpu_median", "peak_rss_mb", "finished_at"],
                select(*values, finished),
            )
        )


def kept_final(db: Session | Connection, run_id: int) -> Final | None:
    """Return what was kept for the run as finished now, None if nothing is (a run going, or resumed)."""
    rows = db.execute(
        select(
            RunFinal.kind, RunFinal.heuristic, RunFinal.wall_median, RunFinal.cpu_median, RunFinal.peak_rss_mb
        )
        .join(Run, and_(Run.id == RunFinal.run_id, Run.finished_at == RunFinal.finished_at))
        .where(RunFinal.run_id == run_id)
    ).all()
    if not rows:
        return None
    final = Final({}, {})
    for kind, heuristic, wall, cpu, peak in rows:
        if heuristic == WHOLE:
            final.medians[kind] = {"wall": wall, "cpu": cpu}
        elif peak is not None:
            final.peaks[(kind, heuristic)] = peak
    return final
