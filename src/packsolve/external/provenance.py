"""Recording, before they run, which binaries a worker runs for a run's external solver programs.

A worker is a Celery worker or the machine of a local run (local@host:pid); both record here.
Each worker runs its own declaration of a run's program (one with the same digest) and resolves
the command on its own machine, so two workers may run two builds of one program. Each records
its own (command, SHA-256) once per run and binary; reports warn when a run's workers disagree.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Protocol

from sqlalchemy import Engine

from packsolve.db.programs import ProgramRun, note_programs
from packsolve.db.retry import in_transaction
from packsolve.external.declaration import ExternalSolver
from packsolve.external.resolution import ProgramMissing, resolve

# (run, worker, solver, sha256) of a program recorded: a worker process keeps the set of those it
# recorded, for one write per run and binary, not per task.
Noted = set[tuple[int, str, str, str]]


class UsesProgram(Protocol):
    """What is read of an attempt's spec (execution.AttemptSpec): its kind and, if any, its program."""

    @property
    def kind(self) -> str: ...

    @property
    def program(self) -> object: ...


def note_programs_run(
    engine: Engine,
    run_id: int,
    worker: str,
    specs: Iterable[UsesProgram],
    noted: Noted | None = None,
    patience_s: float = 0.0,
) -> None:
    """Record the programs these specs will run here, as resolved on this machine, unless in noted.

    noted (a worker process's): what was recorded already; what this call records is added.
    The write is retried on a lost connection for up to patience_s (db.retry; 0: tried once).
    A program missing here (or not bound to a declaration) is skipped: its attempts are
    refused or end as errors.
    """
    noted = set() if noted is None else noted
    fresh: dict[tuple[int, str, str, str], ProgramRun] = {}
    for spec in specs:
        if not isinstance(spec.program, ExternalSolver):
            continue
        try:
            program = resolve(spec.program)
        except ProgramMissing:
            continue
        key = (run_id, worker, spec.program.name, program.sha256)
        if key not in noted and key not in fresh:
            command = " ".join(program.argv)
            fresh[key] = ProgramRun(spec.program.name, spec.kind, command, program.executable, program.sha256)
    if not fresh:
        return
    work = functools.partial(note_programs, run_id=run_id, worker=worker, programs=list(fresh.values()))
    in_transaction(engine, work, patience_s)
    noted.update(fresh)
