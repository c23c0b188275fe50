"""Counts of events no other row keeps, for /metrics: one (name, label) row each, added to as they happen.

What the attempts, workers and refusals tables say is read from them; these are the events that
leave nothing behind there: a stale result refused (fencing), a claim the scheduler took back, a
task a worker refused (by reason: some, such as another database's, cannot be recorded against
any attempt), and the scheduler's passes. Each add is one upsert, in the transaction of the event
where there is one.
"""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy import Connection, Table, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from packsolve.db.models import Counter
from packsolve.db.workers import now_sql

COUNTERS = cast(Table, Counter.__table__)

# The names counted (labels in parentheses).
STALE_RESULTS = "stale_results_refused"  # results whose claim was taken back ("")
TAKEN_BACK = "claims_taken_back"  # by the scheduler ("requeued", "lost", "cancelled")
TASKS_REFUSED = "tasks_refused"  # by a worker (a REFUSAL_REASONS member)
SCHEDULER_PASSES = "scheduler_passes"  # passes made ("")
SCHEDULER_PASS_SECONDS = "scheduler_pass_seconds"  # their seconds in all ("") and the last one's ("last")

# Why a worker refused a task, as counted (queue.admission names each refusal's).
REFUSAL_REASONS = (
    "unsigned",  # no signature, on a cluster with a task key
    "bad_signature",  # signed with another key, or altered
    "wrong_deployment",  # sent from another database
    "unknown_run",  # a run the database does not have (or not distributed)
    "undeclared_program",  # a program this worker does not declare alike, or cannot find
    "missing_kind",  # a kind or heuristic this worker does not have
    "mismatch",  # levels, kinds, heuristics or limits other than the database's
    "malformed",  # no packsolve task at all, or naming no deployment
)


def add(db: Session | Connection, name: str, label: str = "", by: float = 1.0) -> None:
    """Add by to the (name, label) count, creating it at by."""
    _upsert(db, name, label, by, add=True)


def add_many(db: Session | Connection, name: str, by_label: dict[str, float]) -> None:
    """Add each label's count to (name, label), in one statement (all or none of them land)."""
    if not by_label:
        return
    dialect = _dialect(db)
    now = now_sql(db)
    rows = [{"name": name, "label": lb, "value": v, "updated_at": now} for lb, v in sorted(by_label.items())]
    statement = dialect.insert(COUNTERS).values(rows)
    db.execute(
        statement.on_conflict_do_update(
            index_elements=["name", "label"],
            set_={
                "value": COUNTERS.c.value + statement.excluded.value,
                "updated_at": statement.excluded.updated_at,
            },
        )
    )


def put(db: Session | Connection, name: str, label: str, value: float) -> None:
    """Set the (name, label) value (a gauge kept here, such as the last pass's seconds)."""
    _upsert(db, name, label, value, add=False)


def _dialect(db: Session | Connection) -> Any:
    """Return the dialect module whose insert has on_conflict_do_update for db."""
    on_pg = (db.get_bind().dialect if isinstance(db, Session) else db.dialect).name == "postgresql"
    return postgresql if on_pg else sqlite


def _upsert(db: Session | Connection, name: str, label: str, value: float, add: bool) -> None:
    dialect = _dialect(db)
    now = now_sql(db)
    statement = dialect.insert(COUNTERS).values(name=name, label=label, value=value, updated_at=now)
    new = COUNTERS.c.value + statement.excluded.value if add else statement.excluded.value
    db.execute(
        statement.on_conflict_do_update(
            index_elements=["name", "label"], set_={"value": new, "updated_at": statement.excluded.updated_at}
        )
    )


def read_all(db: Session | Connection) -> dict[tuple[str, str], float]:
    """Return every count, by (name, label)."""
    rows = db.execute(select(COUNTERS.c.name, COUNTERS.c.label, COUNTERS.c.value))
    return {(str(n), str(lb)): float(v) for n, lb, v in rows}
