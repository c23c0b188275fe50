"""run_snapshots: what the read model keeps of a finished run, and the one rule saying whether it holds.

A snapshot is a row (run, name) with a JSON payload (and, for a level vector, the arrays' bytes),
stamped with the run's finished_at when it was made. It holds while the run's finished_at equals
its stamp: a run resumed has none that hold, and has them made again once it finishes again. A
compare of two runs is a snapshot of the later one, named after the other run and its finished_at
then, so that it too holds by the one rule.

Snapshots are made off the write path: the scheduler makes the missing ones each pass (catch_up),
a local solve makes its run's when it ends (make), and any reader that finds one missing makes
it (a read-only reader computes without keeping). Stamping a run finished makes none.
"""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import JSON, Connection, LargeBinary, and_, delete, insert, literal, select
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.orm import Session

from packsolve.db.models import Run, RunSnapshot
from packsolve.db.session import read_only

log = logging.getLogger("packsolve.figures")

# The names of a run's own snapshots; a compare's is pair_name(...).
FINAL = "final"
FAILURES = "failures"
VECTOR = "vector"


def holds() -> Any:
    """Return the join condition of the one staleness rule: the run's finished_at equals the stamp."""
    return and_(Run.id == RunSnapshot.run_id, Run.finished_at == RunSnapshot.stamp)


def kept(db: Session | Connection, run_id: int, name: str) -> Any | None:
    """Return the payload of the run's snapshot of that name if it holds, else None."""
    return db.execute(
        select(RunSnapshot.payload)
        .join(Run, holds())
        .where(RunSnapshot.run_id == run_id, RunSnapshot.name == name)
    ).scalar()


def kept_stamp(db: Session | Connection, run_id: int, name: str) -> tuple[Any, Any] | None:
    """Return (payload, stamp) of the run's snapshot of that name if it holds, else None."""
    row = db.execute(
        select(RunSnapshot.payload, RunSnapshot.stamp)
        .join(Run, holds())
        .where(RunSnapshot.run_id == run_id, RunSnapshot.name == name)
    ).first()
    return None if row is None else (row[0], row[1])


def keep(
    db: Session | Connection,
    run_id: int,
    name: str,
    payload: Any,
    data: bytes | None = None,
    replaces: Any = None,
) -> None:
    """Keep a snapshot of the run stamped with its finished_at now, replacing the one of that name.

    replaces, a condition on RunSnapshot, names the run's other rows it replaces as well. Nothing is
    kept for a run going (no finished_at), nor by a read-only reader; a snapshot kept by another
    transaction meanwhile stays (it is the same).
    """
    if read_only(db):
        return
    values = (literal(run_id), literal(name), literal(payload, JSON), literal(data, LargeBinary))
    made = select(*values, Run.finished_at).where(Run.id == run_id, Run.finished_at.is_not(None))
    gone = RunSnapshot.name == name if replaces is None else (RunSnapshot.name == name) | replaces
    try:
        with db.begin_nested():
            db.execute(delete(RunSnapshot).where(RunSnapshot.run_id == run_id, gone))
            db.execute(insert(RunSnapshot).from_select(["run_id", "name", "payload", "data", "stamp"], made))
    except IntegrityError:
        pass  # another reader kept the same snapshot meanwhile: theirs is this one
    except OperationalError:  # a reader that may not write now (SQLite busy): the scheduler keeps it later
        log.debug("run %s: snapshot %s not kept now", run_id, name, exc_info=True)


def missing(db: Session | Connection, limit: int) -> list[int]:
    """Return up to limit finished runs without snapshots that hold (FINAL marks them made), newest first."""
    made = select(RunSnapshot.run_id).join(Run, holds()).where(RunSnapshot.name == FINAL)
    rows = db.execute(
        select(Run.id)
        .where(Run.finished_at.is_not(None), Run.id.not_in(made))
        .order_by(Run.finished_at.desc(), Run.id.desc())
        .limit(limit)
    )
    return [int(r) for r in rows.scalars()]
