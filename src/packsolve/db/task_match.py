"""Whether a task's run, levels, heuristics and limits are what the database holds, before anything runs.

A task is data from the broker: a worker runs it only for a distributed run of its own database,
for levels that are attempts of that run, with the heuristic each attempt was made with and the
run's limits. A deleted run's leftover task, or one altered on the broker, then runs nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from sqlalchemy import Connection, Table, and_, select

from packsolve.db.models import Run
from packsolve.db.tables import ATTEMPTS, BATCH

RUNS = cast(Table, Run.__table__)
TaskLimits = tuple[float | None, int | None, int | None]  # time, nodes, memory MB


def mismatches(
    connection: Connection, run_id: int, heuristics: Mapping[str, str], limits: TaskLimits
) -> tuple[str | None, dict[str, str]]:
    """Return (what is wrong with the whole task, {level hash: what is wrong with that attempt}).

    heuristics maps each level hash of the task to its heuristic; (None, {}) means all match.
    One statement per BATCH levels: the run's row, outer-joined to the attempts named.
    """
    hashes = list(heuristics)
    found: dict[str, str] = {}
    for i in range(0, max(1, len(hashes)), BATCH):
        chunk = hashes[i : i + BATCH]
        joined = RUNS.outerjoin(
            ATTEMPTS, and_(ATTEMPTS.c.run_id == RUNS.c.id, ATTEMPTS.c.level_hash.in_(chunk))
        )
        rows: Sequence[Any] = connection.execute(
            select(
                RUNS.c.mode, RUNS.c.time_limit, RUNS.c.node_limit, RUNS.c.memory_limit_mb,
                ATTEMPTS.c.level_hash, ATTEMPTS.c.heuristic,
            ).select_from(joined).where(RUNS.c.id == run_id)
        ).all()  # fmt: skip
        if not rows:
            return f"run {run_id} is not in this database (deleted, or never made here): nothing run", {}
        mode, *stored = rows[0][:4]
        if mode != "distributed":
            return f"run {run_id} is a {mode} run, not one sent to workers: nothing run", {}
        if tuple(stored) != tuple(limits):
            return (
                f"run {run_id}'s task carries limits {_shown(limits)}, the database's run has "
                f"{_shown(tuple(stored))}: nothing run"
            ), {}
        found.update({r.level_hash: r.heuristic for r in rows if r.level_hash is not None})
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


def _shown(limits: tuple[Any, ...]) -> str:
    return "time {}, nodes {}, memory {} MB".format(*limits)
