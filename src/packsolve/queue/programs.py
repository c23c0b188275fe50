"""Recording, before they run, which binaries this worker runs for a run's external solver programs.

Each worker runs its own declaration of a run's program (one with the same digest) and resolves
the command on its own machine, so two workers may run two builds of one program. Each records
its own (command, SHA-256) once per run and
binary; reports warn when a run's workers disagree.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

from packsolve.db.programs import ProgramRun, note_programs
from packsolve.execution import AttemptSpec
from packsolve.execution.programs import ProgramMissing, resolve
from packsolve.solvers import ExternalSolver

# (run, worker, solver, sha256) this process has recorded: one write per run and binary, not per task.
_noted: set[tuple[int, str, str, str]] = set()


def _in_transaction(engine: Any, work: Callable[[Any], Any]) -> Any:
    with engine.begin() as connection:
        return work(connection)


def note_programs_run(
    engine: Any,
    run_id: int,
    worker: str,
    specs: Iterable[AttemptSpec],
    write: Callable[[Any, Callable[[Any], Any]], Any] = _in_transaction,
) -> None:
    """Record the programs these specs will run here, as resolved on this machine, unless already recorded.

    write(engine, work) runs work(connection) in a transaction (a worker passes its retrying one).
    A program missing here (or not bound to a declaration) is skipped: its attempts are refused
    or end as errors.
    """
    fresh: dict[tuple[int, str, str, str], ProgramRun] = {}
    for spec in specs:
        if not isinstance(spec.program, ExternalSolver):
            continue
        try:
            program = resolve(spec.program)
        except ProgramMissing:
            continue
        key = (run_id, worker, spec.program.name, program.sha256)
        if key not in _noted and key not in fresh:
            command = " ".join(program.argv)
            fresh[key] = ProgramRun(spec.program.name, spec.kind, command, program.executable, program.sha256)
    if not fresh:
        return
    write(
        engine, functools.partial(note_programs, run_id=run_id, worker=worker, programs=list(fresh.values()))
    )
    _noted.update(fresh)
