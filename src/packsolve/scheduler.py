"""Planning a run from level files, enqueueing its attempts, and cancelling it."""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from packsolve.db.models import utcnow
from packsolve.db.queries import PlannedAttempt, cancel_pending, pending_of
from packsolve.levels import DEFAULT_MAX_BYTES, Level, read_levels
from packsolve.outcome import Status
from packsolve.puzzles import KINDS, get_kind
from packsolve.runner import AttemptSpec, Limits

# How many times a task may be delivered (worker deaths, redeliveries) before its attempt is lost.
# Five, not three: a worker killed while holding a claimed group charges a try to every attempt
# in it, run or not, so an innocent level can meet two or three kills in a bad night.
DEFAULT_MAX_TRIES = 5
# (level hash, name, spec): one attempt as the scheduler hands it to the queue or the pool.
Spec = tuple[str, str, AttemptSpec]


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


def planned_specs(plan: Plan, limits: Limits) -> list[Spec]:
    """Return (level hash, name, spec) for the plan's valid levels, in pack order: a new run's pending.

    The same list pending_specs reads back from the database, without the round
    trip (for 50,000 levels reading them back costs more than writing them).
    """
    return [
        (p.level.hash, p.level.name, AttemptSpec(p.level.kind, p.heuristic, p.level.data, limits))
        for p in plan.attempts
        if p.level.valid
    ]


def cancel_run(session: Session, run_id: int) -> int:
    """Cancel every queued attempt of the run; workers skip them. Return how many."""
    return cancel_pending(session, run_id, "cancelled by the user before it ran")


def enqueue(app: object, run_id: int, specs: list[Spec], max_tries: int, chunk_size: int = 1) -> int:
    """Send the attempts as tasks of chunk_size attempts each over one connection; return tasks sent.

    Messages are pipelined to Redis in batches (one round trip per thousand
    tasks) where kombu supports it, so enqueueing 50,000 levels takes seconds.
    """
    import contextlib

    from packsolve.worker import QUEUE, TASK_NAME, celery_limits, payload_for

    if chunk_size < 1:
        raise ValueError("chunk size must be at least 1")
    sent = 0
    with app.producer_or_acquire() as producer:  # type: ignore[attr-defined]
        # Declared once here instead of once per message (declare=[] below).
        producer.maybe_declare(app.amqp.queues[QUEUE])  # type: ignore[attr-defined]
        batch = getattr(producer, "batch", None)  # kombu >= 5.7
        with batch(max_size=1000) if batch is not None else contextlib.nullcontext():
            for i in range(0, len(specs), chunk_size):
                chunk = specs[i : i + chunk_size]
                soft, hard = celery_limits(chunk[0][2].limits, len(chunk))
                app.send_task(  # type: ignore[attr-defined]
                    TASK_NAME,
                    args=[payload_for(run_id, [(h, spec) for h, _name, spec in chunk], max_tries)],
                    soft_time_limit=soft,
                    time_limit=hard,
                    producer=producer,
                    declare=[],
                    # Celery would repr the whole payload for logs and Flower; this says as much.
                    argsrepr=f"run {run_id}: {len(chunk)} level(s) from {chunk[0][1]}",
                    kwargsrepr="{}",
                )
                sent += 1
    return sent


# --- chunking: how many attempts one task carries ------------------------------------------

# A task should carry about this much work: enough to share the per-task cost (a Celery
# message, a claim, a fork), little enough that workers stay evenly loaded and a lost
# task costs little.
TARGET_TASK_S = 0.5
MAX_CHUNK = 500
# A small run is still cut into at least this many tasks, so many workers share it.
MIN_TASKS = 16
# What one attempt costs a worker beyond its solver's own time (verify, pipe, claim, record).
ATTEMPT_OVERHEAD_S = 0.001
# With no history for a kind, a level is guessed to take this long per unit of its size
# (cells, blanks, squares...); the first run's times replace the guess.
SECONDS_PER_SIZE_UNIT = 2.5e-4
# Past attempts of a kind and heuristic read to estimate its median time.
HISTORY = 1000
SAMPLE = 200


def choose_chunk_size(session: Session, specs: Sequence[Spec]) -> int:
    """Return attempts per task so that a task takes about TARGET_TASK_S; 1 for an empty run.

    Each (kind, heuristic) is estimated from the median wall time of its last
    HISTORY final attempts, or from its levels' sizes when it has none; the
    pack's mean estimate sets the chunk size, capped so the run still makes at
    least MIN_TASKS tasks.
    """
    from packsolve.db.queries import level_facts, recent_wall_times

    groups: dict[tuple[str, str], list[str]] = {}
    for level_hash, _name, spec in specs:
        groups.setdefault((spec.kind, spec.heuristic), []).append(level_hash)
    if not groups:
        return 1
    total = 0.0
    for (kind, heuristic), hashes in groups.items():
        times = sorted(recent_wall_times(session, kind, heuristic, HISTORY))
        if len(times) >= 5:
            per_level = times[len(times) // 2]
        else:
            step = max(1, len(hashes) // SAMPLE)
            sizes = sorted(size for size, _ in level_facts(session, hashes[::step][:SAMPLE]).values())
            per_level = SECONDS_PER_SIZE_UNIT * (sizes[len(sizes) // 2] if sizes else 0)
        total += len(hashes) * (per_level + ATTEMPT_OVERHEAD_S)
    mean = total / len(specs)
    chunk = max(1, min(MAX_CHUNK, round(TARGET_TASK_S / mean), max_chunk_for(specs[0][2].limits)))
    return max(1, min(chunk, len(specs) // MIN_TASKS))


def max_chunk_for(limits: Limits) -> int:
    """Return the most attempts one task may carry: all at their hard limit within half the visibility.

    Past the Redis visibility timeout the still-running task would be handed to another worker.
    """
    from packsolve.worker import DEFAULT_VISIBILITY_TIMEOUT

    hard = limits.hard_time()
    return MAX_CHUNK if hard is None else max(1, int(DEFAULT_VISIBILITY_TIMEOUT / 2 // hard))


# --- ordering: longest processing time first -------------------------------------------------


def hardest_first(session: Session, run_id: int, specs: list[Spec]) -> list[Spec]:
    """Return specs ordered longest-expected-first (LPT shortens the makespan of a run).

    A level's expected time is its best past time (fastest solved or proved
    attempt in any other run; a level that only ever ran out of time or memory
    counts as its longest such attempt). A level never seen gets the expected
    time of the known level of its kind nearest in size, so it goes in between;
    with no history for its kind, the median of all known times. Ties: bigger
    first, then pack order.
    """
    from packsolve.db.queries import level_facts

    facts = level_facts(session, [h for h, _, _ in specs], exclude_run=run_id)
    known = {h: t for h, (_, t) in facts.items() if t is not None}

    def size(s: Spec) -> int:
        return facts.get(s[0], (0, None))[0]

    if not known:
        return sorted(specs, key=lambda s: -size(s))
    by_kind: dict[str, list[tuple[int, float]]] = {}
    for s in specs:
        if s[0] in known:
            by_kind.setdefault(s[2].kind, []).append((size(s), known[s[0]]))
    median = sorted(known.values())[len(known) // 2]

    def expected(s: Spec) -> float:
        if s[0] in known:
            return known[s[0]]
        points = by_kind.get(s[2].kind)
        if not points:
            return median
        return min(points, key=lambda p: (abs(p[0] - size(s)), -p[1]))[1]

    return sorted(specs, key=lambda s: (-expected(s), -size(s)))


# --- reconcile: requeue attempts whose task is gone, mark the hopeless lost, finish runs ----


# Seconds after an attempt is marked sent before the broker must show its task.
SEND_SETTLE_S = 5.0
# A worker acknowledges a tiny attempt's task before its buffer writes the result (within
# FLUSH_EVERY_S): for that moment the attempt is queued with no task in the broker. Before
# taking such attempts, reconcile waits this long, so those that were only in a buffer are
# final by then and left alone (take_stale takes a row only if it is still as read).
RESULT_SETTLE_S = 1.0


@dataclass
class Reconciled:
    """What one reconcile pass did."""

    requeued: int = 0
    lost: int = 0
    finished: int = 0
    broker_error: str | None = None


def reconcile(
    engine: Engine, app: Any, broker: str, grace_s: float, default_max_tries: int = DEFAULT_MAX_TRIES
) -> Reconciled:
    """Requeue stale attempts of unfinished distributed runs, mark those past the cap lost, finish runs.

    Stale: running past its deadline (start + hard limit) plus grace, or queued
    with no task for it in the broker (sent over SEND_SETTLE_S ago, or never
    sent by a submit older than grace; taken after RESULT_SETTLE_S more, so a
    result still in a worker's buffer lands first). Every change is a
    guarded update (the row must still be as it was read), so two schedulers at
    once requeue an attempt at most once between them. If the broker cannot be
    read, only running attempts past their deadline are considered.
    """
    from packsolve.brokerscan import BrokerUnreadable, broker_messages, live_attempts
    from packsolve.db.models import Run
    from packsolve.db.queries import finish_run_if_done, stale_attempts, take_stale, unfinished_runs
    from packsolve.db.session import session_scope
    from packsolve.worker import QUEUE, TASK_NAME

    done = Reconciled()
    now = utcnow()
    cutoff = now - timedelta(seconds=grace_s)
    # A sent task is in the broker within moments; only the scheduler's own resends (stamped
    # before they go out) need a few seconds. So a Redis restart is repaired at once.
    sent_cutoff = now - timedelta(seconds=min(grace_s, SEND_SETTLE_S))
    with session_scope(engine) as session:
        candidates = stale_attempts(session, cutoff, sent_cutoff)
    live: set[tuple[int, str]] | None = None
    if candidates:
        try:
            messages = broker_messages(broker, QUEUE, TASK_NAME, grace_s)
            overdue = {(c.run_id, c.level_hash) for c in candidates if c.status == Status.RUNNING.value}
            live = live_attempts(messages, overdue)
        except BrokerUnreadable as exc:
            done.broker_error = str(exc)
    if live is None:
        candidates = [c for c in candidates if c.status == Status.RUNNING.value]
    else:
        candidates = [c for c in candidates if (c.run_id, c.level_hash) not in live]
        if any(c.status == Status.QUEUED.value for c in candidates):
            time.sleep(RESULT_SETTLE_S)
    batches: list[tuple[int, list[Spec], int, int]] = []
    with session_scope(engine) as session:
        taken = take_stale(session, candidates, default_max_tries)
        done.lost = sum(1 for t in taken if t.lost)
        by_run: dict[int, list[str]] = {}
        for t in taken:
            if not t.lost:
                by_run.setdefault(t.run_id, []).append(t.level_hash)
        for run_id, hashes in by_run.items():
            run = session.get(Run, run_id)
            assert run is not None
            specs = _specs_for(session, run, hashes)
            chunk = choose_chunk_size(session, specs)
            batches.append((run_id, specs, run.max_tries or default_max_tries, chunk))
    # Sent after the commit: a crash in between leaves the attempts queued with no task,
    # which the next pass (after grace) finds and sends again.
    for run_id, specs, max_tries, chunk in batches:
        enqueue(app, run_id, specs, max_tries, chunk)
        done.requeued += len(specs)
    with session_scope(engine) as session:
        for run_id in unfinished_runs(session):
            done.finished += finish_run_if_done(session, run_id)
    return done


def _specs_for(session: Session, run: Any, hashes: list[str]) -> list[Spec]:
    """Return specs for some attempts of a run, with the run's limits, in pack order."""
    import json

    from packsolve.db.queries import attempts_with_levels

    limits = Limits(run.time_limit, run.node_limit, run.memory_limit_mb)
    return [
        (a.level_hash, a.name, AttemptSpec(a.kind, a.heuristic, json.loads(lv.data), limits))
        for a, lv in attempts_with_levels(session, run.id, hashes)
    ]


def run_scheduler(
    engine: Engine,
    app: Any,
    broker: str,
    grace_s: float,
    interval_s: float,
    once: bool,
    report: Any,
    on_error: Any = None,
) -> Reconciled:
    """Reconcile every interval_s seconds (once: a single pass); report(Reconciled) after each pass.

    In the loop a pass that fails on the database or the broker (restarted,
    connections killed) is reported to on_error and retried next interval: the
    scheduler must outlive the incidents it repairs. With once, the error is raised.
    """
    from kombu.exceptions import OperationalError as BrokerError
    from redis.exceptions import RedisError
    from sqlalchemy.exc import SQLAlchemyError

    while True:
        try:
            result = reconcile(engine, app, broker, grace_s)
        except (SQLAlchemyError, BrokerError, RedisError, OSError) as exc:
            if once:
                raise
            if on_error is not None:
                on_error(exc)
        else:
            report(result)
            if once:
                return result
        time.sleep(interval_s)


# --- rerun: a child run of a parent's failures -----------------------------------------------


def create_rerun(
    session: Session,
    parent_ref: str,
    statuses: Sequence[str],
    kind: str | None,
    heuristic: str | None,
    time_limit: float | None,
    node_limit: int | None,
    memory_limit_mb: int | None,
    label: str | None,
    max_tries: int | None,
    argv: list[str],
) -> tuple[int, str, Limits]:
    """Create a child run of the parent's attempts in statuses; return (child id, parent mode, limits).

    Unset heuristic and limits are the parent's. Raise LookupError for an
    unknown parent, PlanError when no attempt matches.
    """
    import json

    from packsolve.db.queries import RunOptions, attempts_to_rerun, create_run, resolve_run

    parent = resolve_run(session, parent_ref)
    rows = attempts_to_rerun(session, parent.id, statuses, kind)
    if not rows:
        raise PlanError(f"run {parent.id} has no attempt with status {', '.join(statuses)}" + (
            f" of kind {kind}" if kind else ""))  # fmt: skip
    levels = []
    for attempt, row in rows:
        data = json.loads(row.data)
        if attempt.status == Status.INVALID.value:
            levels.append(
                Level(attempt.name, row.kind, data, row.hash, row.size, attempt.message or "invalid level")
            )
        else:
            levels.append(Level(attempt.name, row.kind, data, row.hash, row.size))
    if heuristic is None:
        # The parent's heuristic, unless it named a kind's default: then each kind's default again.
        heuristic = parent.heuristic
    limits = Limits(
        parent.time_limit if time_limit is None else (time_limit if time_limit > 0 else None),
        parent.node_limit if node_limit is None else node_limit,
        parent.memory_limit_mb if memory_limit_mb is None else memory_limit_mb,
    )
    planned = resolve_heuristics(levels, heuristic)
    options = RunOptions(
        mode=parent.mode,
        heuristic=heuristic or "default",
        kind=kind or parent.kind,
        time_limit=limits.time_limit,
        node_limit=limits.node_limit,
        memory_limit_mb=limits.memory_limit_mb,
        label=label,
        parent_id=parent.id,
        max_tries=max_tries or parent.max_tries,
        extra={"argv": argv, "rerun_of": parent.id, "statuses": list(statuses)},
    )
    return create_run(session, planned, options), parent.mode, limits
