"""Whether a task's run, levels, heuristics and limits are what the database holds, before anything runs.

A task is data from the broker: a worker runs it only for a distributed run of its own database,
for levels that are attempts of that run, with the heuristic each attempt was made with and the
run's limits. A deleted run's leftover task, or one altered on the broker, then runs nothing.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any, cast

from sqlalchemy import Connection, Table, and_, select

from packsolve.db.models import Run
from packsolve.db.tables import ATTEMPTS, BATCH
from packsolve.runstate import RunMode

RUNS = cast(Table, Run.__table__)
TaskLimits = tuple[float | None, int | None, int | None]  # time, nodes, memory MB
# What a check reads of the run (mode, limits), or None if the database has no such run.
_Facts = tuple[Any, ...] | None

# Tasks of one level each come in pack order: a check that reads the attempts following its
# level in the pack (WINDOW of them) answers the next tasks' checks without a round trip each,
# which cost a tiny attempt more than its solving. What was read is trusted for KEPT_S seconds:
# a run's mode, limits and attempts' heuristics never change, and a run deleted meanwhile only
# lets a task already queued run for nothing (its result finds no attempt to write to).
WINDOW = 256
KEPT_S = 2.0
_RUNS_KEPT = 8


def mismatches(
    connection: Connection, run_id: int, heuristics: Mapping[str, str], limits: TaskLimits
) -> tuple[str | None, dict[str, str]]:
    """Return (what is wrong with the whole task, {level hash: what is wrong with that attempt}).

    heuristics maps each level hash of the task to its heuristic; (None, {}) means all match.
    One statement per BATCH levels: the run's row, outer-joined to the attempts named.
    """
    facts, found = _read(connection, run_id, list(heuristics))
    return _verdict(run_id, facts, found, heuristics, limits)


def _read(connection: Connection, run_id: int, hashes: list[str]) -> tuple[_Facts, dict[str, str]]:
    """Return the run's mode and limits (None: no such run) and {hash: heuristic} of the attempts named."""
    found: dict[str, str] = {}
    facts: _Facts = None
    for i in range(0, max(1, len(hashes)), BATCH):
        chunk = hashes[i : i + BATCH]
        on = and_(ATTEMPTS.c.run_id == RUNS.c.id, ATTEMPTS.c.level_hash.in_(chunk))
        facts = _joined(connection, run_id, on, found)
        if facts is None:
            return None, {}
    return facts, found


def _joined(connection: Connection, run_id: int, on: Any, found: dict[str, str]) -> _Facts:
    """Read the run's row outer-joined to its attempts that `on` selects into found; return its facts."""
    rows: Sequence[Any] = connection.execute(
        select(
            RUNS.c.mode,
            RUNS.c.time_limit,
            RUNS.c.node_limit,
            RUNS.c.memory_limit_mb,
            ATTEMPTS.c.level_hash,
            ATTEMPTS.c.heuristic,
        )
        .select_from(RUNS.outerjoin(ATTEMPTS, on))
        .where(RUNS.c.id == run_id)
    ).all()
    if not rows:
        return None
    found.update({r.level_hash: r.heuristic for r in rows if r.level_hash is not None})
    return tuple(rows[0][:4])


def _verdict(
    run_id: int, facts: _Facts, found: Mapping[str, str], heuristics: Mapping[str, str], limits: TaskLimits
) -> tuple[str | None, dict[str, str]]:
    if facts is None:
        return f"run {run_id} is not in this database (deleted, or never made here): nothing run", {}
    mode, *stored = facts
    if mode != RunMode.DISTRIBUTED:
        return f"run {run_id} is a {mode} run, not one sent to workers: nothing run", {}
    if tuple(stored) != tuple(limits):
        return (
            f"run {run_id}'s task carries limits {_shown(limits)}, the database's run has "
            f"{_shown(tuple(stored))}: nothing run"
        ), {}
    wrong: dict[str, str] = {}
    for level_hash, heuristic in heuristics.items():
        if level_hash not in found:
            wrong[level_hash] = f"level {level_hash[:12]} is not an attempt of run {run_id}"
        elif found[level_hash] != heuristic:
            wrong[level_hash] = (
                f"level {level_hash[:12]} of run {run_id} is attempted with {found[level_hash]!r}, "
                f"the task says {heuristic!r}"
            )
    return None, wrong


class KnownAttempts:
    """A process's recent reads of runs and their attempts, to check tasks without a round trip each."""

    def __init__(self) -> None:
        # (database, run id) -> (monotonic time read, the run's facts, {hash: heuristic} of the attempts read)
        self._runs: dict[tuple[Any, int], tuple[float, _Facts, dict[str, str]]] = {}

    def mismatches(
        self, connection: Connection, run_id: int, heuristics: Mapping[str, str], limits: TaskLimits
    ) -> tuple[str | None, dict[str, str]]:
        """Return what mismatches() returns, from what was read lately when it holds every level named.

        Otherwise one statement reads the run and the WINDOW attempts from the first level not
        known on, in pack order; levels still unknown then are read by name (mismatches' statement).
        """
        if not heuristics:
            return mismatches(connection, run_id, heuristics, limits)
        now = time.monotonic()
        key = (connection.engine.url, run_id)
        kept = self._runs.get(key)
        if kept is None or now - kept[0] > KEPT_S:
            kept = None
        unknown = [h for h in heuristics if kept is None or h not in kept[2]]
        if unknown:
            found: dict[str, str] = {}
            facts = _joined(connection, run_id, _window(run_id, unknown[0]), found)
            if facts is not None:
                rest = [h for h in unknown if h not in found]
                if rest:
                    facts, named = _read(connection, run_id, rest)
                    found.update(named)
            if facts is None:
                self._runs.pop(key, None)
                return _verdict(run_id, None, {}, heuristics, limits)
            # Only what was just read is kept (and dated now): nothing stays past KEPT_S.
            known = found if kept is None else {**kept[2], **found}
            self._runs.pop(key, None)
            self._runs[key] = (now, facts, found)
            while len(self._runs) > _RUNS_KEPT:
                del self._runs[next(iter(self._runs))]
            return _verdict(run_id, facts, known, heuristics, limits)
        assert kept is not None  # every level named is known, so what was read lately is fresh
        return _verdict(run_id, kept[1], kept[2], heuristics, limits)


def _window(run_id: int, level_hash: str) -> Any:
    """The join condition selecting the run's WINDOW attempts from level_hash's on, in pack order."""
    anchor = (
        select(ATTEMPTS.c.seq)
        .where(ATTEMPTS.c.run_id == run_id, ATTEMPTS.c.level_hash == level_hash)
        .scalar_subquery()
    )
    return and_(ATTEMPTS.c.run_id == RUNS.c.id, ATTEMPTS.c.seq >= anchor, ATTEMPTS.c.seq < anchor + WINDOW)


def _shown(limits: tuple[Any, ...]) -> str:
    return "time {}, nodes {}, memory {} MB".format(*limits)
