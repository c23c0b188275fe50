"""A local run's rows as its process stops and resumes: results after a cancel, honest messages, reopening."""

from __future__ import annotations

import os
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import and_, func, select, true, tuple_, update
from sqlalchemy.orm import Session

from packsolve.attempt import AttemptKey, Result
from packsolve.db.attempts import result_columns
from packsolve.db.models import Attempt, LevelRow, Run, utcnow
from packsolve.db.parts import forget_parts
from packsolve.db.runs import finish_run_if_done
from packsolve.db.tables import BATCH, PENDING_VALUES, rowcount
from packsolve.outcome import Status
from packsolve.pids import pid_alive
from packsolve.runstate import RunMode, RunState, ShownState, shown


@dataclass(frozen=True)
class Resume:
    """A resume of a local run: its process, its command line (passwords masked), programs declared again."""

    pid: int
    argv: Sequence[str]
    solvers: dict[str, Any] | None = None  # declarations by name (None: the run's recorded ones stay)


def was_cancelled(session: Session, run_id: int) -> bool:
    """Return True if the run was cancelled (`packsolve cancel`); False otherwise or if it is gone."""
    return session.scalar(select(Run.state).where(Run.id == run_id)) == RunState.CANCELLED


def mark_running(
    session: Session, run_id: int, starts: Sequence[tuple[AttemptKey, str, datetime]]
) -> set[AttemptKey]:
    """Mark the run's queued attempts that a pool process started ((level hash, heuristic), worker, when)
    running.

    Each counts its try as a worker's claim does. An attempt no longer queued (its result was
    written first, or a cancel marked it) is left alone. Return the attempts marked.
    """
    marked: set[AttemptKey] = set()
    for (level_hash, heuristic), worker, started in starts:
        res = session.execute(
            update(Attempt)
            .where(Attempt.run_id == run_id, Attempt.level_hash == level_hash, Attempt.heuristic == heuristic)
            .where(Attempt.status == Status.QUEUED)
            .values(status=Status.RUNNING, worker=worker, started_at=started, tries=Attempt.tries + 1)
        )
        if rowcount(res):
            marked.add((level_hash, heuristic))
    return marked


def record_over_cancel(session: Session, results: Sequence[Result]) -> int:
    """Write local results over attempts that a cancel marked cancelled before their result arrived.

    Only an attempt that is cancelled and holds no result is written: a result
    already written is never overwritten. Return rows written (0 if none).
    """
    written = 0
    now = utcnow()
    for r in results:
        res = session.execute(
            update(Attempt)
            .where(Attempt.run_id == r.run_id, Attempt.level_hash == r.level_hash)
            .where(Attempt.heuristic == r.heuristic if r.heuristic is not None else true())
            .where(Attempt.status == Status.CANCELLED, Attempt.wall_s.is_(None))
            .values(**result_columns(r, now), worker=r.worker, started_at=r.started_at)
        )
        written += rowcount(res)
    return written


def stop_pending(session: Session, run_id: int, in_flight: Sequence[AttemptKey], why: str) -> int:
    """End a stopped local run: its pending attempts become cancelled, saying whether they had started.

    in_flight are the attempts (level hash, heuristic) that were running when the run stopped; why
    says who stopped it. Attempts a cancel already marked get the same honest
    message. The run is finished (state cancelled). Return how many attempts have no result.
    """
    running = list(dict.fromkeys(in_flight))
    now = utcnow()
    unfinished = Attempt.status.in_(PENDING_VALUES)
    without_result = and_(Attempt.status == Status.CANCELLED, Attempt.wall_s.is_(None))
    for i in range(0, len(running), BATCH):
        session.execute(
            update(Attempt)
            .where(Attempt.run_id == run_id, _among(running[i : i + BATCH]))
            .where(unfinished | without_result)
            .values(status=Status.CANCELLED, finished_at=now, message=f"{why} while it ran")
        )
    session.execute(
        update(Attempt)
        .where(Attempt.run_id == run_id, unfinished)
        .values(status=Status.CANCELLED, finished_at=now, message=f"{why} before it ran")
    )
    session.execute(update(Run).where(Run.id == run_id).values(state=RunState.CANCELLED))
    finish_run_if_done(session, run_id)
    return session.scalar(select(func.count()).where(Attempt.run_id == run_id, without_result)) or 0


def attempts_without_result(session: Session, run_id: int) -> list[tuple[Attempt, LevelRow]]:
    """Return the run's attempts with no final result (pending, or cancelled before one), in pack order."""
    no_result = Attempt.status.in_(PENDING_VALUES) | and_(
        Attempt.status == Status.CANCELLED, Attempt.wall_s.is_(None)
    )
    rows = session.execute(
        select(Attempt, LevelRow)
        .join(LevelRow, LevelRow.hash == Attempt.level_hash)
        .where(Attempt.run_id == run_id, no_result)
        .order_by(Attempt.seq)
    )
    return [(a, lv) for a, lv in rows]


def reopen(session: Session, run_id: int, keys: Sequence[AttemptKey], resume: Resume) -> None:
    """Queue the run's given attempts ((level hash, heuristic)) again and mark the run running, solved by
    the resume's process.

    The resume joins the run's history (options' resumed); programs declared again replace those
    the run recorded. The part runs of a split attempt reopened are forgotten: it is split and its
    parts run again from the start.
    """
    hashes = list(keys)
    for i in range(0, len(hashes), BATCH):
        session.execute(
            update(Attempt)
            .where(Attempt.run_id == run_id, _among(hashes[i : i + BATCH]))
            .values(status=Status.QUEUED, finished_at=None, message=None, started_at=None)
        )
        forget_parts(session, run_id, hashes[i : i + BATCH])
    run = session.get(Run, run_id)
    assert run is not None
    resumed = [*(run.options or {}).get("resumed", []), {"argv": list(resume.argv), "levels": len(hashes)}]
    run.options = {**(run.options or {}), "resumed": resumed}
    run.pid = resume.pid
    if resume.solvers is not None:
        run.solvers = resume.solvers
    run.state, run.finished_at = RunState.RUNNING, None


def _among(keys: Sequence[AttemptKey]) -> Any:
    """The condition selecting a run's attempts of these (level hash, heuristic) pairs."""
    return tuple_(Attempt.level_hash, Attempt.heuristic).in_(list(keys))


def shown_state(run: Run) -> ShownState:
    """Return the state a run is shown in (`status`, `runs`, `report summary`, the dashboard).

    The one place every reader gets it from: runstate.shown, told whether the run's local
    solve process lives.
    """
    return shown(run, solver_alive(run))


def solver_alive(run: Run) -> bool | None:
    """Return whether the process solving a local run lives: None if it cannot be told (another machine).

    A live pid that is not a packsolve process (reused by the system) counts as gone.
    """
    pid = run.pid
    if run.mode != RunMode.LOCAL or pid is None:
        return None
    if run.host != socket.gethostname():
        return None
    if pid == os.getpid():
        return True
    if not pid_alive(pid):
        return False
    try:
        return b"packsolve" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True  # no /proc: a live pid is taken at its word
