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

from packsolve.attempt import DEFAULT_MAX_TRIES, tries_cap
from packsolve.db import counters
from packsolve.db.models import Run, WorkerEventKind
from packsolve.db.reconcile import overtaken_before, settled_messages, stale_attempts, take_stale
from packsolve.db.refusals import give_up
from packsolve.db.retry import in_session, retrying
from packsolve.db.runs import finish_run_if_done, unfinished_runs
from packsolve.db.session import get_engine, session_scope
from packsolve.db.workers import (
    RELEASED,
    db_now,
    deployment_id,
    forget_old,
    live_workers,
    note_lapsed,
    record_event,
)
from packsolve.errors import UsageError
from packsolve.figures.finished import catch_up
from packsolve.outcome import Status
from packsolve.planning import Ordered, choose_chunk_size, hardest_first, stored_pending
from packsolve.queue.app import Cluster
from packsolve.queue.brokerscan import BrokerUnreadable

# --- reconcile: requeue attempts whose task is gone, mark the hopeless lost, finish runs ----

# Its waits are the cluster's settings:
# - send_settle: seconds after an attempt was sent before an empty queue means its task is gone (a
#   worker takes a task from the queue and claims or holds its attempts well within this).
# - result_settle: a worker acknowledges a tiny attempt's task before its buffer writes the result
#   (within its result_flush): for that moment the attempt is queued with no task in the broker.
#   Before taking such attempts, reconcile waits this long and asks the broker again, so those that
#   were only in a buffer are final by then and left alone (take_stale takes a row only if still as read).
# - scheduler_patience: a pass's reads and its last step retry a lost connection this long (db.retry)
#   before the pass fails (it is then reported and the next pass tries again).


@dataclass
class Reconciled:
    """What one reconcile pass did."""

    requeued: int = 0
    lost: int = 0
    cancelled: int = 0
    finished: int = 0
    forgotten: int = 0  # unacknowledged Redis tasks deleted (their work is done or sent again)
    given_up: int = 0  # queued attempts every live worker refused (db.refusals), now `error`
    lapsed: int = 0  # worker processes first seen with their lease lapsed (marked lost)
    tasks_sent: int = 0  # tasks this pass sent again (in the queue beside any others)
    snapshots: int = 0  # finished runs whose read-model snapshots were made (figures.finished)
    broker_error: str | None = None


def reconcile(
    engine: Engine, cluster: Cluster, grace_s: float, default_max_tries: int = DEFAULT_MAX_TRIES
) -> Reconciled:
    """Take back attempts whose worker or task was lost, mark those past the cap lost, finish runs.

    Decided from the database (db.reconcile.stale_attempts). First, at once:
    claims and chunks whose holder's lease lapsed (or that a live worker gave
    back: it does not run them), whatever their time limit, and any claim past
    its deadline plus grace_s, whoever holds it. Then queued attempts no live
    worker holds: while the broker's queue is empty (asked twice, result_settle
    apart), those sent over send_settle ago; while tasks wait, those sent before
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
    patience = cluster.settings.scheduler_patience

    def read(session: Session) -> tuple[Any, str, list[Any]]:
        now = db_now(session)
        return now, deployment_id(session), stale_attempts(session, now, now - timedelta(seconds=grace_s))

    # Reads and guarded updates: safe to try again on a lost connection, for a little while.
    now, deployment, candidates = in_session(engine, read, patience)
    # Each lease seen lapsed is marked lost, once, in its history, before its claims are taken back.
    done.lapsed = len(in_session(engine, lambda session: note_lapsed(session, now), patience))
    # The queue as the pass found it: the tasks it sends again below must not hide an empty one.
    try:
        at_start: int | None = cluster.depth()
    except BrokerUnreadable as exc:
        at_start, done.broker_error = None, str(exc)
    # Lost workers first: the bound from a worker's death to the requeue is its lease plus one
    # interval, not plus the broker's settle wait below.
    _take_back(engine, cluster, candidates, default_max_tries, deployment, done)
    orphans_before = now - timedelta(seconds=min(grace_s, cluster.settings.send_settle))
    if at_start is not None:
        when = (now, orphans_before, at_start)
        try:
            _take_orphans(engine, cluster, when, (default_max_tries, deployment), done)
        except BrokerUnreadable as exc:
            done.broker_error = str(exc)
    try:
        done.forgotten = _forget_settled(engine, cluster, deployment)
    except BrokerUnreadable as exc:
        done.broker_error = done.broker_error or str(exc)
    done.given_up = in_session(engine, _give_up_refused, patience)
    done.finished = in_session(engine, lambda session: _finish_runs(session, now), patience)
    # What readers keep of finished runs is made here, off the finishing transactions (figures.finished).
    done.snapshots = len(in_session(engine, catch_up, patience))
    return done


def _take_orphans(
    engine: Engine, cluster: Cluster, when: tuple[Any, Any, int], send: tuple[int, str], done: Reconciled
) -> None:
    """Take back queued attempts whose task the broker no longer has (adds to done).

    when: (now, sent before, tasks queued when the pass began): only attempts sent before that are
    taken. With the queue empty (when the pass began, and asked twice since, result_settle apart,
    holding no more than the tasks this pass sent again: done.tasks_sent), every such attempt no
    live worker holds. With tasks
    waiting, those sent more than send_settle before a run whose attempts workers have
    started (db.reconcile.overtaken_before): the broker hands tasks out in the order sent, so
    theirs was handed out, and lost. Raise BrokerUnreadable if the broker cannot be asked.
    """
    now, before, at_start = when
    waits = cluster.settings
    empty = at_start == 0 and cluster.depth() <= done.tasks_sent
    if not empty:
        overtaken = in_session(engine, overtaken_before, waits.scheduler_patience)
        if overtaken is None:
            return
        before = min(before, overtaken - timedelta(seconds=waits.send_settle))
    with session_scope(engine) as session:
        orphans = stale_attempts(session, now, now, before)
    if any(c.status == Status.QUEUED.value for c in orphans):
        time.sleep(waits.result_settle)
        if not empty or cluster.depth() <= done.tasks_sent:
            # Those taken above changed since: their guarded updates take nothing twice.
            _take_back(engine, cluster, orphans, send[0], send[1], done)


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
    cluster: Cluster,
    candidates: list[Any],
    default_max_tries: int,
    deployment: str,
    done: Reconciled,
) -> None:
    """Take the candidates in short transactions, then send again those requeued (adds to done)."""
    for i in range(0, len(candidates), TAKE_BATCH):
        batches: list[tuple[int, Ordered, int, int]] = []
        with session_scope(engine) as session:
            taken = take_stale(session, candidates[i : i + TAKE_BATCH], default_max_tries)
            note_taken_back(session, taken)
            lost = sum(1 for t in taken if t.lost)
            cancelled = sum(1 for t in taken if t.cancelled)
            done.lost += lost
            done.cancelled += cancelled
            # Counted in the taking's transaction, for /metrics (db.counters).
            for outcome, n in (
                ("requeued", len(taken) - lost - cancelled),
                ("lost", lost),
                ("cancelled", cancelled),
            ):
                if n:
                    counters.add(session, counters.TAKEN_BACK, outcome, n)
            by_run: dict[int, set[tuple[str, str]]] = {}
            for t in taken:
                if not (t.lost or t.cancelled):
                    by_run.setdefault(t.run_id, set()).add(t.key)
            for run_id, keys in by_run.items():
                run = session.get(Run, run_id)
                assert run is not None
                # Only the attempts taken: a run may try a level with several heuristics, and each is its own.
                hashes = list(dict.fromkeys(h for h, _ in keys))
                pending = [p for p in stored_pending(session, run, hashes) if p.key in keys]
                # As submit sends them: longest expected first, a long one in a task of its own, so that
                # a lost long level does not run after the others of its chunk in one process.
                ordered = hardest_first(session, run_id, pending)
                chunk = choose_chunk_size(session, pending, visibility_timeout=cluster.visibility_timeout)
                batches.append((run_id, ordered, tries_cap(run.max_tries, default_max_tries), chunk))
        # Sent after the commit: a crash in between leaves the attempts queued with no task, which
        # the next pass finds (the queue empty, they are orphans) and sends again.
        for run_id, ordered, max_tries, chunk in batches:
            attempts = ordered.attempts
            done.tasks_sent += cluster.send(run_id, attempts, max_tries, chunk, deployment, ordered.alone)
            done.requeued += len(attempts)


# Attempts named in one `claims taken back` event: a process holding a chunk of thousands is
# told by count beyond these.
NAMED_TAKEN = 100


def note_taken_back(session: Session, taken: list[Any]) -> None:
    """Add `claims taken back` to the history of each worker process whose attempts these were.

    Attempts given back by a live process (holder RELEASED) or held by nobody (their task was lost)
    were taken from no process, and are not told.
    """
    by_holder: dict[str, list[Any]] = {}
    for t in taken:
        if t.holder is not None and t.holder != RELEASED:
            by_holder.setdefault(t.holder, []).append(t)
    for holder, mine in sorted(by_holder.items()):
        host = holder.rpartition("/")[0] or holder
        named = [{"run": t.run_id, "level": t.name, "as": t.outcome} for t in mine[:NAMED_TAKEN]]
        detail = {"count": len(mine), "attempts": named}
        record_event(session, holder, host, WorkerEventKind.TAKEN_BACK, detail)


def _forget_settled(engine: Engine, cluster: Cluster, deployment: str) -> int:
    """Delete Redis's unacknowledged tasks of this deployment whose attempts are final or were sent again.

    Return how many. Tasks of another database (or of a sender too old to say) are never touched.
    """
    messages = [m for m in cluster.unacked() if m.deployment == deployment]
    if not messages:
        return 0
    with session_scope(engine) as session:
        tags = settled_messages(session, messages)
    return cluster.forget_unacked(tags)


def _count_pass(engine: Engine, seconds: float, patience_s: float) -> None:
    """Count a pass made and its seconds, and keep them as the last pass's (db.counters, for /metrics)."""

    def count(session: Session) -> None:
        counters.add(session, counters.SCHEDULER_PASSES)
        counters.add(session, counters.SCHEDULER_PASS_SECONDS, "", seconds)
        counters.put(session, counters.SCHEDULER_PASS_SECONDS, "last", seconds)

    in_session(engine, count, patience_s)


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


def run_scheduler(engine: Engine, cluster: Cluster, grace_s: float, passes: Passes) -> Reconciled:
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
            unsigned = cluster.unsigned_problem(engine)
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
            result = reconcile(engine, cluster, grace_s)
            _count_pass(engine, time.monotonic() - began, cluster.settings.scheduler_patience)
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
