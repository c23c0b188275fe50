"""Which attempts of a run are split into parts: those whose level is expected to take longer than
--split-after (issue 38). Read from the levels' history; asked by a local run before it starts and by a
worker process when it takes a task of a run sent with --split-after."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.orm import Session

from packsolve.combining import PlannedSplit, split_of
from packsolve.db.history import past_attempts
from packsolve.execution.relative import expected_seconds
from packsolve.execution.spec import PendingAttempt
from packsolve.puzzles import get_kind

# How many parts a split level is cut into per process that runs them: enough that the processes
# stay busy while parts of uneven size end, few enough that handing them out (a few milliseconds a
# part and round) stays small (benchmarks/split_local).
PARTS_PER_PROCESS = 8


def choose_splits(
    session: Session, pending: Sequence[PendingAttempt], split_after: float, processes: int
) -> list[PlannedSplit]:
    """Return the pending attempts to split: those whose level's expected wall time (db.history:
    its earlier attempts with the same kind and heuristic, decided or timed out) passes split_after,
    of a built-in heuristic whose kind splits that level; the longest expected first.

    A level without history, of a kind without split, or run by an external program is run whole.
    """
    builtin = [p for p in pending if p.spec.program is None and get_kind(p.spec.kind).split is not None]
    if not builtin:
        return []
    past = past_attempts(session, [(p.level_hash, p.spec.kind, p.spec.heuristic) for p in builtin])
    of = max(2, processes * PARTS_PER_PROCESS)
    chosen: list[PlannedSplit] = []
    for p in builtin:
        times = past.get(p.key)
        expected = None if times is None else expected_seconds(times.decided_wall, times.timed_out_wall)
        if expected is None or expected <= split_after:
            continue
        split = split_of(p.spec, of)
        if split is not None:
            chosen.append(PlannedSplit(p, split, of, expected))
    return sorted(chosen, key=lambda s: -s.expected_s)
