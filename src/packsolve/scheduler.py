"""The reconcile loop: requeue attempts whose task or worker was lost, mark the hopeless lost, finish runs.

Runs are created and sent by runs.py; this module only repairs what the
queue and the workers lost, and stamps runs finished.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.orm import Session
from tenacity import RetryCallState

from packsolve.db.models import Run
from packsolve.db.reconcile import overtaken_before, settled_messages, stale_attempts, take_stale
from packsolve.db.refusals import give_up
from packsolve.db.retry import in_session, retrying
from packsolve.db.runs import finish_run_if_done, unfinished_runs
from packsolve.db.session import get_engine, session_scope
from packsolve.db.workers import db_now, deployment_id, forget_old, live_workers
from packsolve.errors import UsageError
from packsolve.outcome import Status
from packsolve.planning import choose_chunk_size, stored_pending
from packsolve.queue.brokerscan import BrokerUnreadable, forget_unacked, queue_depth, unacked_messages
from packsolve.queue.producer import enqueue, unsigned_sender
from packsolve.queue.protocol import DEFAULT_MAX_TRIES, PendingAttempt

# --- reconcile: requeue attempts whose task is gone, mark the hopeless lost, finish runs ----


# Seconds after an attempt was sent before an empty queue means its task is gone (a worker takes a
# task from the queue and claims or holds its attempts well within this).
SEND_SETTLE_S = 5.0
# A worker acknowledges a tiny attempt's task before its buffer writes the result (within
# FLUSH_EVERY_S): for that moment the attempt is queued with no task in the broker. Before
# taking such attempts, reconcile waits this long and asks the broker again, so those that were
# only in a buffer are final by then and left alone (take_stale takes a row only if still as read).
RESULT_SETTLE_S = 1.0
# A pass's reads and its last step retry a lost connection this long (db.retry) before the pass fails
# (it is then reported and the next pass tries again).
PATIENCE_S = 10.0


@dataclass
class Reconciled:
    """What one reconcile pass did."""

    requeued: int = 0
    lost: int = 0
    cancelled: int = 0
    finished: int = 0
    forgotten: int = 0  # unacknowledged Redis tasks deleted (their work is done or sent again)
    given_up: int = 0  # queued attempts every live worker refused (db.refusals), now `error`
    broker_error: str | None = None


def reconcile(
    engine: Engine, app: Any, broker: str, grace_s: float, default_max_tries: int = DEFAULT_MAX_TRIES
) -> Reconciled:
    """Take back attempts whose worker or task was lost, mark those past the cap lost, finish runs.

    Decided from the database (db.reconcile.stale_attempts). First, at once:
    claims and chunks whose holder's lease lapsed (or that a live worker gave
    back: it does not run them), whatever their time limit, and any claim past
    its deadline plus grace_s, whoever holds it. Then queued attempts no live
    worker holds: while the broker's queue is empty (asked twice, RESULT_SETTLE_S
    apart), those sent over SEND_SETTLE_S ago; while tasks wait, those sent before
    a later run whose attempts workers have started (_take_orphans). Runs whose submit has not
    finished sending are left alone. Every change is a guarded update (the row
    must still be as it was read), made in short transactions of TAKE_BATCH
    attempts, so two schedulers at once take an attempt at most once between
    them, and one frozen mid-pass holds few rows, for at most the server's idle
    transaction timeout. If the broker cannot be asked, only lost workers' and
    overdue claims are taken back. Queued attempts whose task a worker refused lately
    are not taken (the task comes back, db.refusals); those every live worker refused
    are given up (`error`, saying why). Also deletes Redis's unacknowledged tasks of
    this deployment whose work is done or sent again.
    """
    done = Reconciled()

    def read(session: Session) -> tuple[Any, str, list[Any]]:
        now = db_now(session)
        return now, deployment_id(session), stale_attempts(session, now, now - timedelta(seconds=grace_s))

    # Reads and guarded updates: safe to try again on a lost connection, for a little while.
    now, deployment, candidates = in_session(engine, read, PATIENCE_S)
    # Lost workers first: the bound from a worker's death to the requeue is its lease plus one
    # interval, not plus the broker's settle wait below.
    _take_back(engine, app, candidates, default_max_tries, deployment, done)
    orphans_before = now - timedelta(seconds=min(grace_s, SEND_SETTLE_S))
    try:
        _take_orphans(engine, app, (now, orphans_before), (default_max_tries, deployment), done)
    except BrokerUnreadable as exc:
        done.broker_error = str(exc)
    try:
        done.forgotten = _forget_settled(engine, broker, app.conf.task_default_queue, deployment)
    except BrokerUnreadable as exc:
        done.broker_error = done.broker_error or str(exc)
    done.given_up = in_session(engine, _give_up_refused, PATIENCE_S)
    done.finished = in_session(engine, lambda session: _finish_runs(session, now), PATIENCE_S)
    return done


def _take_orphans(
    engine: Engine, app: Any, when: tuple[Any, Any], send: tuple[int, str], done: Reconciled
) -> None:
    """Take back queued attempts whose task the broker no longer has (adds to done).

    when: (now, sent before): only attempts sent before that are taken. With the queue empty
    (asked twice, RESULT_SETTLE_S apart), every such attempt no live worker holds. With tasks
    waiting, those sent more than SEND_SETTLE_S before a run whose attempts workers have
    started (db.reconcile.overtaken_before): the broker hands tasks out in the order sent, so
    theirs was handed out, and lost. Raise BrokerUnreadable if the broker cannot be asked.
    """
    now, before = when
    empty = queue_depth(app) == 0
    if not empty:
        overtaken = in_session(engine, overtaken_before, PATIENCE_S)
        if overtaken is None:
            return
        before = min(before, overtaken - timedelta(seconds=SEND_SETTLE_S))
    with session_scope(engine) as session:
        orphans = stale_attempts(session, now, now, before)
    if any(c.status == Status.QUEUED.value for c in orphans):
        time.sleep(RESULT_SETTLE_S)
        if not empty or queue_depth(app) == 0:
            # Those taken above changed since: their guarded updates take nothing twice.
            _take_back(engine, app, orphans, send[0], send[1], done)


def _give_up_refused(session: Session) -> int:
    """Mark `error` the queued attempts every live worker refused (db.refusals.give_up); return how many."""
    now = db_now(session)
    return give_up(session, now, {w.host for w in live_workers(session, now)})


def _finish_runs(session: Session, now: Any) -> int:
    """Stamp finished the runs with no pending attempt left, forget old leases; return how many runs."""
    finished = sum(finish_run_if_done(session, run_id) for run_id in unfinished_runs(session))
    forget_old(session, now)
    return finished


# Attempts taken back per transaction: a scheduler frozen or cut off mid-pass holds at most these
# rows locked, and only until the server ends its idle transaction (db.session.SERVICE_*).
TAKE_BATCH = 200


def _take_back(
    engine: Engine,
    app: Any,
    candidates: list[Any],
    default_max_tries: int,
    deployment: str,
    done: Reconciled,
) -> None:
    """Take the candidates in short transactions, then send again those requeued (adds to done)."""
    for i in range(0, len(candidates), TAKE_BATCH):
        batches: list[tuple[int, list[PendingAttempt], int, int]] = []
        with session_scope(engine) as session:
            taken = take_stale(session, candidates[i : i + TAKE_BATCH], default_max_tries)
            done.lost += sum(1 for t in taken if t.lost)
            done.cancelled += sum(1 for t in taken if t.cancelled)
            by_run: dict[int, list[str]] = {}
            for t in taken:
                if not (t.lost or t.cancelled):
                    by_run.setdefault(t.run_id, []).append(t.level_hash)
            for run_id, hashes in by_run.items():
                run = session.get(Run, run_id)
                assert run is not None
                pending = stored_pending(session, run, hashes)
                visibility = app.conf.packsolve_settings.visibility_timeout
                chunk = choose_chunk_size(session, pending, visibility_timeout=visibility)
                batches.append((run_id, pending, run.max_tries or default_max_tries, chunk))
        # Sent after the commit: a crash in between leaves the attempts queued with no task, which
        # the next pass finds (the queue empty, they are orphans) and sends again.
        for run_id, pending, max_tries, chunk in batches:
            enqueue(app, run_id, pending, max_tries, chunk, deployment)
            done.requeued += len(pending)


def _forget_settled(engine: Engine, broker: str, queue: str, deployment: str) -> int:
    """Delete Redis's unacknowledged tasks of this deployment whose attempts are final or were sent again.

    Return how many. Tasks of another database (or of a sender too old to say) are never touched.
    """
    messages = [m for m in unacked_messages(broker, queue) if m.deployment == deployment]
    if not messages:
        return 0
    with session_scope(engine) as session:
        tags = settled_messages(session, messages)
    return forget_unacked(broker, tags)


@dataclass(frozen=True)
class Passes:
    """How the scheduler's passes go: every interval_s seconds (once: a single pass), and who hears of
    each: report(Reconciled) after a pass, on_error(exception) when one fails."""

    interval_s: float
    once: bool
    report: Callable[[Reconciled], None]
    on_error: Callable[[BaseException], None] | None = None


def engine_when_reachable(url: str | None, passes: Passes) -> Engine:
    """Return the scheduler's engine (migrated); in the loop a database down at start is waited for,
    each failed try reported to on_error like a failed pass (with once, its error is raised)."""

    def reported(state: RetryCallState) -> None:
        failed = state.outcome.exception() if state.outcome is not None else None
        if passes.on_error is not None and failed is not None:
            passes.on_error(failed)

    # The scheduler must outlive the incidents it repairs: in the loop, it waits as long as it takes,
    # trying again every half to whole interval (as often as its passes, spread).
    interval = passes.interval_s
    policy = retrying(0.0 if passes.once else None, interval, reported, shortest_wait_s=interval / 2)
    for attempt in policy:
        with attempt:
            return get_engine(url, service=True)
    raise AssertionError("unreachable: tenacity re-raises the last error")  # pragma: no cover


def run_scheduler(engine: Engine, app: Any, broker: str, grace_s: float, passes: Passes) -> Reconciled:
    """Start a reconcile pass every passes.interval_s seconds (once: a single pass); report each.

    Passes start interval_s apart whatever each takes (a pass longer than that
    is followed at once by the next), so a lapsed lease is seen within one
    interval. In the loop a pass that fails on the database or the broker (restarted,
    connections killed) is reported to on_error and retried next interval: the
    scheduler must outlive the incidents it repairs. With once, the error is raised.
    """
    from kombu.exceptions import OperationalError as BrokerError
    from redis.exceptions import RedisError
    from sqlalchemy.exc import SQLAlchemyError

    first = True
    while True:
        began = time.monotonic()
        try:
            unsigned = unsigned_sender(engine, app)
            if unsigned is not None:
                # What it sends again would be refused by every worker: it refuses to start, and
                # a pass while such workers are live does nothing but say so.
                if passes.once or first:
                    raise UsageError(f"the scheduler would send unsigned tasks: {unsigned}")
                if passes.on_error is not None:
                    passes.on_error(UsageError(unsigned))
                time.sleep(max(0.0, began + passes.interval_s - time.monotonic()))
                continue
            first = False
            result = reconcile(engine, app, broker, grace_s)
        except (SQLAlchemyError, BrokerError, RedisError, OSError) as exc:
            if passes.once:
                raise
            if passes.on_error is not None:
                passes.on_error(exc)
        else:
            passes.report(result)
            if passes.once:
                return result
        time.sleep(max(0.0, began + passes.interval_s - time.monotonic()))
