"""Folding run_figures, the counts triggers keep per run, so that its readers add up few rows.

run_figures (migration 0014) counts a run's attempts per (kind, heuristic, status) with the sums of
their times and nodes; the database's triggers keep it in the transaction that changes the attempts.
On PostgreSQL each statement adds its own signed rows: the writers fold them (here) while they are
few. Reading the counts is the read model's (packsolve.figures.run_figures).
"""

from __future__ import annotations

from sqlalchemy import Connection, text
from sqlalchemy.orm import Session

from packsolve.db.workers import on_postgresql

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
