"""A split level on workers: the process that claimed its attempt leads it, every helper runs parts.

The leader (lead) is the worker process that claimed the level's attempt, as any attempt is claimed: it
holds the attempt's fencing token and writes the level's one result under it. It runs the level's
combining.Combination: each round's parts become queued rows of the parts table stamped with its token
(db.part_queue), and it calls for helpers (Cluster.call_helpers: signed tasks any worker process may
take). Each helper (help), and the leader itself between rounds, takes a queued part, runs it in a
solver child (a part's answer is the whole level's, verified by the kind's verify there) and writes
its end on the row; the leader reads the ended rows into the Combination until the level is decided,
verifies the answer once more, and hands the Outcome back to be recorded as every result is.

What damage does: a helper killed or frozen past its lease leaves its part running under a lapsed
lease, and the leader hands it out again (its late result is then refused: the row is no longer its
own); the leader killed or frozen past its lease has its attempt taken back by the scheduler as any
claim, the next claim forgets the old claim's parts and starts over, and the old leader's result and
its helpers' parts are refused by the fencing token. The leader never needs a helper: with none (the
broker lost its calls, no process free) it runs every part itself.

While a part runs, a thread of the process running it looks every WATCH_S at the level: the shortest
answer any part found is offered to the part's shared bound (an optimal search prunes with it, a
first-found part stops on it), and a level decided or a claim lost stops the part at once.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import multiprocessing
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import Engine

from packsolve.attempt import AttemptKey
from packsolve.budget import SharedBound
from packsolve.db import part_queue
from packsolve.db.part_queue import Handed, Taken
from packsolve.db.retry import Transactional, in_transaction
from packsolve.execution import Limits, PartSpec, execute_attempts, solution_length
from packsolve.execution.attempts import verified
from packsolve.execution.processes import forget_kept_child
from packsolve.execution.spec import PendingAttempt
from packsolve.outcome import Outcome
from packsolve.split_plans import PlannedSplit
from packsolve.splitting import share_bounds, shared_key

log = logging.getLogger("packsolve.worker")

# How often a leader or helper with no part to take looks again (a round's last part ending elsewhere).
POLL_S = 0.02
# How often a running part's process looks at its level (a shorter answer found, the level decided).
WATCH_S = 0.25
# How long a helper that ran parts waits for the next round before it leaves (the leader calls
# helpers again for each round of several parts).
HELP_IDLE_S = 2.0
# How long a leader whose level is decided waits for the parts still running elsewhere to stop.
STOP_WAIT_S = 3.0
# A stopped part's bound: shorter than any answer, so an optimal search prunes everything at once.
STOPPED = 0


@dataclass(frozen=True)
class Hands:
    """What a worker process lends a split level: its claim connection and engine (and how long to
    retry them), its lease's name (what holds a part) and Celery hostname, and its output cap."""

    claims: Transactional
    engine: Engine
    patience_s: float
    holder: str
    hostname: str
    keep: int

    def db(self, statement: Callable[..., Any], **kwargs: Any) -> Any:
        """Run statement(connection, **kwargs) on the claim connection, retried for patience_s."""
        return in_transaction(self.claims, functools.partial(statement, **kwargs), self.patience_s)


@dataclass(frozen=True)
class Level:
    """A split level: its run, its attempt, and the claim its parts were handed out under."""

    run_id: int
    item: PendingAttempt
    token: int

    @property
    def key(self) -> AttemptKey:
        return self.item.key

    def where(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "key": self.key, "token": self.token}


@contextlib.contextmanager
def parts_of(hands: Hands, level: Level) -> Iterator[Callable[[Taken], Outcome]]:
    """Within: run(taken) runs one taken part of level in this process's solver child and writes its end.

    The parts share a bound with this process, made on entry: the solver child forked next inherits it
    and is kept for the level's next parts (one fork for all the parts this process runs, not one
    each), and a watcher offers it the level's shortest answer found elsewhere, or STOPPED once the
    level is decided or its claim lost. On exit the child holding the bound is let go: it is never
    kept for another level's attempts.
    """
    bound = SharedBound(context=multiprocessing.get_context("fork"))
    share_bounds({shared_key(*level.key): bound})
    forget_kept_child()  # the next child forks from this process as it is now: with the bound
    done = threading.Event()
    watcher = threading.Thread(
        target=_watch, args=(hands, level, bound, done), name="packsolve-part-watch", daemon=True
    )
    watcher.start()
    try:
        yield functools.partial(_run_part, hands, level)
    finally:
        done.set()
        watcher.join()
        share_bounds({})
        forget_kept_child()


def _run_part(hands: Hands, level: Level, taken: Taken) -> Outcome:
    """Run one taken part and write its end (refused if the part is no longer this process's); return
    its Outcome. Its limits are the level's, its wall limit less what the level ran before it was taken."""
    part = PartSpec(taken.index, taken.of, taken.parts, taken.window, taken.best)
    limits = part_limits(level.item.spec.limits, taken.elapsed_s)
    spec = replace(level.item.spec, part=part, limits=limits)
    outcome = next(iter(execute_attempts([spec], hands.keep)))
    length = solution_length(spec.kind, outcome)
    finish = functools.partial(
        part_queue.finish,
        taken=taken,
        holder=hands.holder,
        outcome=outcome,
        length=length,
        worker=hands.hostname,
    )
    if not in_transaction(hands.claims, finish, hands.patience_s):
        log.info(
            "run %s level %s %s: part %d's result refused (handed out again, or its claim was taken back)",
            level.run_id,
            level.key[0][:12],
            level.key[1],
            taken.index + 1,
        )
    return outcome


def _watch(hands: Hands, level: Level, bound: SharedBound, done: threading.Event) -> None:
    """Offer the running part the level's best answer found elsewhere; stop it once the level is over."""
    while not done.wait(WATCH_S):
        try:
            ours = in_transaction(hands.engine, functools.partial(part_queue.current, **level.where()), 1.0)
            best = None
            if ours:
                best = in_transaction(
                    hands.engine, functools.partial(part_queue.best_length, **level.where()), 1.0
                )
        except Exception:  # the database away: the part goes on, its end is written (or refused) later
            continue
        if not ours:
            bound.offer(STOPPED)
            return
        if best is not None:
            bound.offer(best)


def part_limits(limits: Limits, elapsed_s: float) -> Limits:
    """Return a part's limits: the level's, its wall limit less the elapsed_s the level has run already."""
    if limits.time_limit is None:
        return limits
    return replace(limits, time_limit=max(0.05, limits.time_limit - elapsed_s))


def lead(
    hands: Hands, plan: PlannedSplit, run_id: int, token: int, call_helpers: Callable[[int], None]
) -> Outcome | None:
    """Lead a split level whose attempt this process claimed (token); return its Outcome, or None if its
    claim was lost meanwhile (taken back or cancelled: its result would be refused).

    call_helpers(n) asks for up to n helpers (a failure to is logged: the leader runs every part alone),
    at most once every HELP_IDLE_S: a helper waits that long for the next round before it leaves.
    """
    item = plan.attempt
    level = Level(run_id, item, token)
    combination = plan.combination()
    hands.db(part_queue.begin, **level.where())
    seen: set[int] = set()
    wall = item.spec.limits.wall_limit()
    called = -HELP_IDLE_S  # when helpers were last called (monotonic)
    with contextlib.ExitStack() as stack:
        run_part = stack.enter_context(parts_of(hands, level))
        stack.callback(lambda: hands.db(part_queue.close, holder_of_lead=hands.hostname, **level.where()))
        while combination.outcome is None:
            handed = combination.hand_out()
            if handed:
                rows = [Handed(h.index, h.round, h.window, h.best) for h in handed]
                split = (plan.of, combination.count)
                if not hands.db(part_queue.hand_out, split=split, handed=rows, **level.where()):
                    return None
                # Helpers stay for the next round HELP_IDLE_S: called again only after that long.
                if len(rows) > 1 and time.monotonic() - called >= HELP_IDLE_S:
                    _call(call_helpers, len(rows) - 1)
                    called = time.monotonic()
            taken = hands.db(part_queue.take, holder=hands.holder, **level.where())
            if taken is not None:
                run_part(taken)
            for end in hands.db(part_queue.ended, seen=seen, **level.where()):
                seen.add(end.id)
                combination.took(end.index, end.outcome)
            if combination.outcome is not None or taken is not None:
                continue
            if not hands.db(part_queue.current, **level.where()):
                return None
            hands.db(part_queue.requeue_lapsed, **level.where())
            if wall is not None and time.monotonic() - combination.started > wall:  # a probe's time too
                combination.timed_out()
                break
            time.sleep(POLL_S)
        # Parts still running elsewhere see the level's answer within WATCH_S and stop: their ends are
        # waited for (a while), so the level's totals are its parts' and none is left running.
        stopping = time.monotonic() + STOP_WAIT_S
        while hands.db(part_queue.running, **level.where()) and time.monotonic() < stopping:
            time.sleep(POLL_S)
        for end in hands.db(part_queue.ended, seen=seen, **level.where()):
            combination.took(end.index, end.outcome)
    outcome = combination.outcome
    assert outcome is not None
    totals = replace(
        outcome.stats, nodes=combination.nodes, cpu_s=combination.cpu_s, peak_rss_mb=combination.peak_rss_mb
    )
    return verified(item.spec, replace(outcome, stats=totals))


def _call(call_helpers: Callable[[int], None], count: int) -> None:
    try:
        call_helpers(count)
    except Exception as exc:  # the broker away: this process runs the parts alone
        log.warning("could not call helpers for a split level (its leader runs its parts alone): %s", exc)


def help_with(hands: Hands, run_id: int, item: PendingAttempt) -> int:
    """Take and run the parts of a split level led elsewhere while there are any; return how many ran.

    A helper that finds no part to take leaves at once; one that ran parts waits up to HELP_IDLE_S for
    the next round. It leaves once the level's claim is no longer the one it helped (decided, taken
    back, cancelled).
    """
    token = hands.db(part_queue.token_of, run_id=run_id, key=item.key)
    if token is None:
        return 0
    level = Level(run_id, item, token)
    taken = hands.db(part_queue.take, holder=hands.holder, **level.where())
    if taken is None:
        return 0
    ran = 0
    idle_since: float | None = None
    with parts_of(hands, level) as run_part:
        while True:
            if taken is not None:
                run_part(taken)
                ran += 1
                idle_since = None
            elif not hands.db(part_queue.current, **level.where()):
                return ran
            else:
                now = time.monotonic()
                if idle_since is None:
                    idle_since = now
                elif now - idle_since > HELP_IDLE_S:
                    return ran
                time.sleep(POLL_S)
            taken = hands.db(part_queue.take, holder=hands.holder, **level.where())
