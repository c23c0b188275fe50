"""The reconcile loop: requeue attempts whose task or worker was lost, mark the hopeless lost, finish runs.

Runs are created and sent by runs.py; this module only repairs what the
queue and the workers lost, and stamps runs finished.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from packsolve.db.models import Run, utcnow
from packsolve.db.programs import recorded
from packsolve.db.reconcile import attempts_with_levels, stale_attempts, take_stale
from packsolve.db.runs import finish_run_if_done, unfinished_runs
from packsolve.db.session import session_scope
from packsolve.execution import AttemptSpec, Limits
from packsolve.outcome import Status
from packsolve.planning import Spec, choose_chunk_size
from packsolve.queue.brokerscan import BrokerUnreadable, broker_messages, live_attempts
from packsolve.queue.producer import enqueue
from packsolve.queue.protocol import DEFAULT_MAX_TRIES
from packsolve.solvers import declared_in, program_for

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
            messages = broker_messages(broker, app.conf.task_default_queue, grace_s)
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
    limits = Limits(run.time_limit, run.node_limit, run.memory_limit_mb)
    programs = declared_in(recorded(run, "solvers"))  # an external solver's declaration travels again

    def program(a: Any) -> Any:
        return program_for(programs, a.kind, a.heuristic)

    return [
        (a.level_hash, a.name, AttemptSpec(a.kind, a.heuristic, json.loads(lv.data), limits, program(a)))
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
