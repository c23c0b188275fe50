"""Which external solver programs each worker ran for a run (command, SHA-256), and the run's kinds.

Provenance a report needs to trust a comparison: a run records the kinds it used with their
distribution versions (db.runs.Provenance, at creation) and every worker records the binary it
ran for each solver program (here, once per worker and binary).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, TypedDict

from sqlalchemy import Connection, insert, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from packsolve.db.models import RunProgram, utcnow


@dataclass(frozen=True)
class ProgramRun:
    """A program as one worker ran it for a run."""

    solver: str
    kind: str
    command: str
    executable: str
    sha256: str


def note_programs(connection: Connection, run_id: int, worker: str, programs: Iterable[ProgramRun]) -> None:
    """Record that worker ran these programs for the run (a row it already has is left alone)."""
    rows = [
        {
            "run_id": run_id,
            "worker": worker,
            "solver": p.solver,
            "kind": p.kind,
            "command": p.command,
            "executable": p.executable,
            "sha256": p.sha256,
            "first_at": utcnow(),
        }
        for p in programs
    ]
    if not rows:
        return
    table: Any = RunProgram.__table__
    dialect = connection.dialect.name
    stmt: Any
    if dialect == "postgresql":
        stmt = postgresql.insert(table).on_conflict_do_nothing()
    elif dialect == "sqlite":
        stmt = sqlite.insert(table).on_conflict_do_nothing()
    else:
        stmt = insert(table).prefix_with("IGNORE")
    connection.execute(stmt, rows)


class ProgramBuild(TypedDict):
    """One binary of a solver program a run's workers ran, and which workers ran it."""

    solver: str
    kind: str
    sha256: str
    command: str
    workers: list[str]


def programs_of(session: Session, run_id: int) -> list[ProgramBuild]:
    """Return the programs the run's workers ran: one record per solver and binary, with its workers."""
    rows = session.execute(
        select(RunProgram).where(RunProgram.run_id == run_id).order_by(RunProgram.solver, RunProgram.first_at)
    ).scalars()
    out: dict[tuple[str, str], ProgramBuild] = {}
    for r in rows:
        entry = out.setdefault(
            (r.solver, r.sha256),
            ProgramBuild(solver=r.solver, kind=r.kind, sha256=r.sha256, command=r.command, workers=[]),
        )
        if r.worker not in entry["workers"]:
            entry["workers"].append(r.worker)
    return list(out.values())
