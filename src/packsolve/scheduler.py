"""Planning a run from level files, enqueueing its attempts, and cancelling it."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sqlalchemy.orm import Session

from packsolve.db.queries import PlannedAttempt, cancel_pending, pending_of
from packsolve.levels import DEFAULT_MAX_BYTES, Level, read_levels
from packsolve.puzzles import KINDS, get_kind
from packsolve.runner import AttemptSpec, Limits

# How many times a task may be delivered (worker deaths, redeliveries) before its attempt is lost.
DEFAULT_MAX_TRIES = 3


class PlanError(ValueError):
    """The request cannot make a run (no levels, unknown heuristic); the message says why."""


@dataclass(frozen=True)
class Plan:
    attempts: list[PlannedAttempt]
    duplicates: int  # levels met again under another name, attempted once

    @property
    def levels(self) -> list[Level]:
        return [p.level for p in self.attempts]


def plan_run(
    paths: Iterable[str | os.PathLike[str]],
    kind: str | None = None,
    heuristic: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Plan:
    """Read every level under paths once (first name wins) and resolve the heuristic per kind.

    Raise PlanError when nothing can be run: no level found, an unknown kind, or
    a heuristic that none of the pack's kinds has.
    """
    if kind is not None and kind not in KINDS:
        raise PlanError(f"unknown kind {kind!r} (known: {', '.join(KINDS)})")
    seen: set[str] = set()
    levels: list[Level] = []
    duplicates = 0
    for level in read_levels(paths, kind=kind, max_bytes=max_bytes):
        if level.hash in seen:
            duplicates += 1
            continue
        seen.add(level.hash)
        levels.append(level)
    if not levels:
        raise PlanError("no level files found (expected .json, .jsonl or a native format such as .stroke)")
    return Plan(resolve_heuristics(levels, heuristic), duplicates)


def resolve_heuristics(levels: Sequence[Level], heuristic: str | None) -> list[PlannedAttempt]:
    """Pair each level with its kind's solver name for heuristic; raise PlanError if none has it."""
    planned = []
    usable = False
    for seq, level in enumerate(levels):
        name = heuristic or "default"
        if level.valid:
            try:
                name, _ = get_kind(level.kind).solver(heuristic)
                usable = True
            except KeyError:
                pass  # this level's attempt will end as an error naming the choices
        planned.append(PlannedAttempt(level, name, seq))
    if heuristic not in (None, "", "default") and not usable and any(lv.valid for lv in levels):
        kinds = sorted({lv.kind for lv in levels if lv.valid})
        choices = "; ".join(f"{k}: {', '.join(get_kind(k).solvers)}" for k in kinds)
        raise PlanError(f"no level in the pack has a heuristic {heuristic!r} ({choices})")
    return planned


def pending_specs(session: Session, run_id: int, limits: Limits) -> list[tuple[str, str, AttemptSpec]]:
    """Return (level hash, name, spec) for every pending attempt of the run, in pack order."""
    import json

    out = []
    for attempt, level in pending_of(session, run_id):
        spec = AttemptSpec(attempt.kind, attempt.heuristic, json.loads(level.data), limits)
        out.append((attempt.level_hash, attempt.name, spec))
    return out


def cancel_run(session: Session, run_id: int) -> int:
    """Cancel every queued attempt of the run; workers skip them. Return how many."""
    return cancel_pending(session, run_id, "cancelled by the user before it ran")


def enqueue(
    app: object, run_id: int, specs: list[tuple[str, str, AttemptSpec]], max_tries: int, chunk_size: int = 1
) -> int:
    """Send the attempts as tasks of chunk_size attempts each over one connection; return tasks sent."""
    from packsolve.worker import TASK_NAME, celery_limits, payload_for

    if chunk_size < 1:
        raise ValueError("chunk size must be at least 1")
    sent = 0
    with app.producer_or_acquire() as producer:  # type: ignore[attr-defined]
        for i in range(0, len(specs), chunk_size):
            chunk = specs[i : i + chunk_size]
            soft, hard = celery_limits(chunk[0][2].limits, len(chunk))
            app.send_task(  # type: ignore[attr-defined]
                TASK_NAME,
                args=[payload_for(run_id, [(h, spec) for h, _name, spec in chunk], max_tries)],
                soft_time_limit=soft,
                time_limit=hard,
                producer=producer,
            )
            sent += 1
    return sent
