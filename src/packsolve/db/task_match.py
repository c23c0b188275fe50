"""Whether a task is what the database holds, field by field, before anything of it runs.

A task is data from the broker: a worker runs it only for a distributed run of its own database,
for levels that are attempts of that run, each of the kind and with a heuristic the run attempts
it with (a run may try a level with several: each (level, heuristic) is an attempt of its own),
under the run's limits (an attempt's own wall and CPU limits where it has them: a relative
run's), and only attempts not final yet. The run's own cap on tries is
what a claim uses, never the task's. A deleted run's leftover task or one altered on the broker
then runs nothing, and a finished run's task sent again (a replay) starts no solver.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from sqlalchemy import Connection, Table, and_, func, select

from packsolve.attempt import AttemptKey
from packsolve.db.models import Run
from packsolve.db.tables import ATTEMPTS, BATCH, PENDING_VALUES
from packsolve.runstate import RunMode

RUNS = cast(Table, Run.__table__)
TaskLimits = tuple[float | None, int | None, int | None, float | None]  # time, nodes, memory MB, CPU
# What a task says of each of its attempts: {(level hash, heuristic): (kind, wall limit, CPU limit)}.
TaskAttempts = Mapping[AttemptKey, tuple[str, float | None, float | None]]
# What a check reads of the run (mode, time, nodes, memory, CPU, max tries), or None if the database
# has no such run; and of each level named: {level hash: {heuristic: (kind, status, its own wall
# limit, its own CPU limit)}}, one entry per heuristic the run tries the level with, its own limits
# None where the run's apply.
_Facts = tuple[Any, ...] | None
_Attempt = tuple[str, str, float | None, float | None]
_Found = dict[str, dict[str, _Attempt]]


@dataclass(frozen=True)
class Verdict:
    """What a check found: what is wrong with the whole task (None: nothing), with each attempt (level
    hash, heuristic: those are not run), which are final already (a task come again: skipped), and the
    run's cap on an attempt's tries (None: the run stored none, the default applies)."""

    whole: str | None = None
    wrong: dict[AttemptKey, str] = field(default_factory=dict)
    final: dict[AttemptKey, str] = field(default_factory=dict)  # {(level hash, heuristic): its final status}
    max_tries: int | None = None
    # How /metrics counts a task refused as a whole (db.counters.REFUSAL_REASONS).
    refused_as: str = "mismatch"


# Tasks of one level each come in pack order: a check that reads the attempts following its
# level in the pack (WINDOW of them) answers the next tasks' checks without a round trip each,
# which cost a tiny attempt more than its solving. What was read is trusted for KEPT_S seconds:
# a run's mode, limits, cap and attempts' kinds and heuristics never change, a final attempt stays
# final, and a run deleted or an attempt finished meanwhile only lets a task already queued reach
# its claim, which finds nothing to run.
WINDOW = 256
KEPT_S = 2.0
_RUNS_KEPT = 8


def mismatches(connection: Connection, run_id: int, attempts: TaskAttempts, limits: TaskLimits) -> Verdict:
    """Return the Verdict of a task of this run naming these attempts under these limits.

    attempts maps each (level hash, heuristic) of the task to its (kind, wall limit, CPU limit);
    limits are the task's node and memory limits (its wall and CPU ones are each attempt's). One
    statement per BATCH levels: the run's row, outer-joined to the attempts named.
    """
    facts, found = _read(connection, run_id, list(dict.fromkeys(h for h, _ in attempts)))
    return _verdict(run_id, facts, found, attempts, limits)


def _read(connection: Connection, run_id: int, hashes: list[str]) -> tuple[_Facts, _Found]:
    """Return the run's facts (None: no such run) and what the database has of the attempts named."""
    found: _Found = {}
    facts: _Facts = None
    for i in range(0, max(1, len(hashes)), BATCH):
        chunk = hashes[i : i + BATCH]
        on = and_(ATTEMPTS.c.run_id == RUNS.c.id, ATTEMPTS.c.level_hash.in_(chunk))
        facts = _joined(connection, run_id, on, found)
        if facts is None:
            return None, {}
    return facts, found


def _joined(connection: Connection, run_id: int, on: Any, found: _Found, window: bool = False) -> _Facts:
    """Read the run's row outer-joined to its attempts that `on` selects into found; return its facts.

    window: `on` is _window's, which may end amid a level's heuristics (a run may try a level with
    several, one row each): a full window's last level is left out of found, so that every level in
    found is whole (a task naming another heuristic of it is refused, not read again).
    """
    rows: Sequence[Any] = connection.execute(
        select(
            RUNS.c.mode,
            RUNS.c.time_limit,
            RUNS.c.node_limit,
            RUNS.c.memory_limit_mb,
            RUNS.c.cpu_limit,
            RUNS.c.max_tries,
            ATTEMPTS.c.level_hash,
            ATTEMPTS.c.kind,
            ATTEMPTS.c.heuristic,
            ATTEMPTS.c.status,
            ATTEMPTS.c.time_limit.label("own_time"),
            ATTEMPTS.c.cpu_limit.label("own_cpu"),
            ATTEMPTS.c.seq,
        )
        .select_from(RUNS.outerjoin(ATTEMPTS, on))
        .where(RUNS.c.id == run_id)
    ).all()
    if not rows:
        return None
    read = [r for r in rows if r.level_hash is not None]
    cut = max(read, key=lambda r: r.seq).level_hash if window and len(read) >= WINDOW else None
    for r in read:
        if r.level_hash != cut:
            found.setdefault(r.level_hash, {})[r.heuristic] = (r.kind, r.status, r.own_time, r.own_cpu)
    return tuple(rows[0][:6])


def _verdict(
    run_id: int,
    facts: _Facts,
    found: Mapping[str, Mapping[str, _Attempt]],
    attempts: TaskAttempts,
    limits: TaskLimits,
) -> Verdict:
    if facts is None:
        return Verdict(
            f"run {run_id} is not in this database (deleted, or never made here): nothing run",
            refused_as="unknown_run",
        )
    mode, time_limit, node_limit, memory_mb, cpu_limit, max_tries = facts
    if mode != RunMode.DISTRIBUTED:
        return Verdict(
            f"run {run_id} is a {mode} run, not one sent to workers: nothing run", refused_as="unknown_run"
        )
    if (node_limit, memory_mb) != tuple(limits[1:3]):
        stored = (time_limit, node_limit, memory_mb, cpu_limit)
        return Verdict(
            f"run {run_id}'s task carries limits {_shown(limits)}, the database's run has "
            f"{_shown(stored)}: nothing run"
        )
    verdict = Verdict(max_tries=max_tries)
    for key, (kind, wall, cpu) in attempts.items():
        wrong = _wrong(run_id, key, kind, found.get(key[0]))
        said = found.get(key[0], {}).get(key[1])
        # The attempt's own limits where it has them (a relative run's), else the run's.
        own = None if said is None else (_or(said[2], time_limit), _or(said[3], cpu_limit))
        if wrong is not None:
            verdict.wrong[key] = wrong
        elif own is not None and own != (wall, cpu):
            verdict.wrong[key] = (
                f"level {key[0][:12]} of run {run_id}: the task carries time {wall}, CPU {cpu}, "
                f"the database's attempt has time {own[0]}, CPU {own[1]}: not run"
            )
        elif said is not None and said[1] not in PENDING_VALUES:
            verdict.final[key] = said[1]
    return verdict


def _wrong(run_id: int, key: AttemptKey, kind: str, level: Mapping[str, _Attempt] | None) -> str | None:
    """Return what is wrong with a task's attempt of a level, given the run's attempts of that level
    ({heuristic: its facts}; None: it has none); None if the run makes that very attempt."""
    level_hash, heuristic = key
    if not level:
        return f"level {level_hash[:12]} is not an attempt of run {run_id}"
    said = level.get(heuristic)
    stored_kind = said[0] if said is not None else next(iter(level.values()))[0]
    if stored_kind != kind:
        return f"level {level_hash[:12]} of run {run_id} is a {stored_kind} level, the task says {kind!r}"
    if said is None:
        tried = ", ".join(repr(h) for h in sorted(level))
        return (
            f"level {level_hash[:12]} of run {run_id} is attempted with {tried}, the task says {heuristic!r}"
        )
    return None


def _or(own: float | None, run: float | None) -> float | None:
    return run if own is None else own


class KnownAttempts:
    """A process's recent reads of runs and their attempts, to check tasks without a round trip each."""

    def __init__(self) -> None:
        # (database, run id) -> (monotonic time read, the run's facts, what was read of its attempts)
        self._runs: dict[tuple[Any, int], tuple[float, _Facts, _Found]] = {}

    def mismatches(
        self, connection: Connection, run_id: int, attempts: TaskAttempts, limits: TaskLimits
    ) -> Verdict:
        """Return what mismatches() returns, from what was read lately when it holds every level named.

        Otherwise one statement reads the run and the WINDOW attempts from the first level not
        known on, in pack order; levels still unknown then are read by name (mismatches' statement).
        A status read lately may since have become final (that attempt's claim then skips it); a
        final one stays final: a distributed run's attempts are never queued again.
        """
        if not attempts:
            return mismatches(connection, run_id, attempts, limits)
        now = time.monotonic()
        key = (connection.engine.url, run_id)
        kept = self._runs.get(key)
        if kept is None or now - kept[0] > KEPT_S:
            kept = None
        # Every level kept was read whole (_joined's window): one it holds answers for every heuristic.
        unknown = [h for h, _ in attempts if kept is None or h not in kept[2]]
        if unknown:
            found: _Found = {}
            facts = _joined(connection, run_id, _window(run_id, unknown[0]), found, window=True)
            if facts is not None:
                rest = list(dict.fromkeys(h for h, _ in attempts if h not in found))
                if rest:
                    facts, named = _read(connection, run_id, rest)
                    found.update(named)
            if facts is None:
                self._runs.pop(key, None)
                return _verdict(run_id, None, {}, attempts, limits)
            # Only what was just read is kept (and dated now): nothing stays past KEPT_S.
            known = found if kept is None else {**kept[2], **found}
            self._runs.pop(key, None)
            self._runs[key] = (now, facts, found)
            while len(self._runs) > _RUNS_KEPT:
                del self._runs[next(iter(self._runs))]
            return _verdict(run_id, facts, known, attempts, limits)
        assert kept is not None  # every level named is known, so what was read lately is fresh
        return _verdict(run_id, kept[1], kept[2], attempts, limits)


def _window(run_id: int, level_hash: str) -> Any:
    """The join condition selecting the run's WINDOW attempts from level_hash's on, in pack order."""
    # The level's first attempt (a run may try a level with several heuristics: one row each).
    anchor = (
        select(func.min(ATTEMPTS.c.seq))
        .where(ATTEMPTS.c.run_id == run_id, ATTEMPTS.c.level_hash == level_hash)
        .scalar_subquery()
    )
    return and_(ATTEMPTS.c.run_id == RUNS.c.id, ATTEMPTS.c.seq >= anchor, ATTEMPTS.c.seq < anchor + WINDOW)


def _shown(limits: tuple[Any, ...]) -> str:
    return "time {}, nodes {}, memory {} MB, CPU {}".format(*limits)
