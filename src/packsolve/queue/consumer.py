"""A worker pool process: what it owns, and consuming a task: claim its attempts, run them, record them.

`packsolve worker` (worker.py) makes one WorkerProcess in each pool process, at its start
(Celery's worker_process_init): it owns the process's engine, claim connection, lease, result
buffer, pace, refusals and deployment id. Each task goes through its admit (admission: signature,
database, declared programs), then its run_task. Nothing runs before the task matched the
database's run, attempts, kinds, heuristics and limits (Admission.matching).
"""

from __future__ import annotations

import functools
import itertools
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

from sqlalchemy import Connection, Engine
from sqlalchemy.orm import Session

from packsolve.attempt import AttemptKey, Result, began
from packsolve.db.counters import TASKS_REFUSED, add
from packsolve.db.models import utcnow
from packsolve.db.refusals import record_refusal
from packsolve.db.retry import in_transaction
from packsolve.db.runs import split_after_of
from packsolve.db.session import get_engine
from packsolve.db.workers import Facts, live_workers, mark_signing
from packsolve.execution import (
    AttemptSpec,
    Limits,
    cgroups,
    cores,
    execute_attempts,
    execute_overlapped,
    solution_length,
)
from packsolve.execution.preparing import prepare
from packsolve.execution.spec import PendingAttempt
from packsolve.external.declaration import Solvers
from packsolve.external.provenance import Noted, note_programs_run
from packsolve.external.resolution import ProgramMissing, resolve
from packsolve.outcome import Outcome, Status
from packsolve.queue import splits
from packsolve.queue.admission import REFUSE_UNRECORDED, Admission, Refused, comes_back_in
from packsolve.queue.app import Cluster
from packsolve.queue.claiming import Claimant, ClaimConnection, Claimed
from packsolve.queue.lease import Lease
from packsolve.queue.protocol import Task, decode, task_keys
from packsolve.queue.results import worker_sink
from packsolve.settings import Settings
from packsolve.split_plans import PlannedSplit, Probe, Splitting, plan_splitting

# Attempts of a chunk are claimed (and run in one solver child) in groups of about this much work.
GROUP_S = 0.5
# A lone attempt of a kind and heuristic whose last attempt here took under this long is tiny:
# once its task matched the database (admission.matching: run, level, kind, heuristic, limits), it starts
# solving at once and is claimed only if it has not ended within this long. One that ends
# sooner is claimed by its result's write, which counts its try: a tiny attempt then costs no
# claim of its own. Others are claimed first, so a duplicate delivery (attempt final or
# cancelled) is skipped unrun; so is a message Redis delivers again (its worker died), so
# that its try is counted before it can kill another.
TINY_S = 0.05
MAX_GROUP = 200
# A timeout that a freeze of this process overlapped is run again (the frozen stretch was not the
# solver's time), at most this many times.
FROZEN_RERUNS = 2

log = logging.getLogger("packsolve.worker")


@dataclass(frozen=True)
class Done:
    """One attempt run: its outcome, and the claim it ran under (None: not claimed, its result's write
    counts its try)."""

    item: PendingAttempt
    outcome: Outcome
    claimed: Claimed | None
    split: bool = False  # the level ran as parts (queue.splits): its outcome is theirs, never run again


class WorkerProcess:
    """One pool process of `packsolve worker`: its database, lease, results and pace, and its tasks.

    Made once per process (start_process), after the fork: nothing of it crosses one.
    """

    def __init__(self, settings: Settings, hostname: str, declared: Solvers | None = None) -> None:
        self.settings = settings
        self.hostname = hostname
        self.engine: Engine = get_engine(settings.database_url, migrate=False, pre_ping=False)
        self.claims = ClaimConnection(self.engine)
        # A database call that fails on a dropped connection (server restart, pg_terminate_backend,
        # SQLite busy) is retried this long before the task gives up; the scheduler covers the rest.
        self.patience_s = settings.db_patience
        self.results = worker_sink(self.engine, settings)
        self.declared: Solvers = dict(declared or {})
        self.admission = Admission(dict(self.declared), task_keys(settings), self.engine, self.patience_s)
        self.pace: dict[
            tuple[str, str], float
        ] = {}  # the wall time of the last attempt of each (kind, heuristic)
        self.noted: Noted = set()  # the programs this process recorded (queue.programs)
        self._lease: Lease | None = None
        self._lease_lock = threading.Lock()
        self._split_after: dict[int, float | None] = {}  # run id -> its --split-after (seconds), read once
        self._cluster: Cluster | None = None  # made when this process first calls for helpers

    # --- the lease ----------------------------------------------------------------------------

    def lease(self) -> Lease:
        """Return this process's lease, taking it (and starting its renewals) the first time."""
        with self._lease_lock:
            if self._lease is None:
                lease = Lease(
                    ClaimConnection(self.engine),
                    self.hostname,
                    self.settings.lease_ttl,
                    self.results,
                    Facts(
                        concurrency=self.settings.concurrency or os.cpu_count() or 1,
                        programs=declared_programs(self.declared),
                        measurement=cgroups.mode(),
                        # Pinned at the process's start (worker.py), before its first task takes the lease.
                        cpus=cores.shown([cores.usable_cpus()]) if self.settings.cpus_per_attempt else None,
                    ),
                    self.admission.tally,
                )
                lease.start()
                if self.admission.keys.accepted:  # senders without the key are told (Cluster.check_signing)
                    in_transaction(
                        self.claims, functools.partial(mark_signing, name=lease.name), self.patience_s
                    )
                self._lease = lease
            return self._lease

    def take_lease_early(self) -> None:
        """Take the lease from a thread (a worker waiting for its first task is live too); if the
        database is away, the first task takes it."""

        def take() -> None:
            try:
                self.lease()
            except Exception as exc:
                log.warning("taking this process's lease at start failed (its first task takes it): %s", exc)

        threading.Thread(target=take, name="packsolve-lease-start", daemon=True).start()

    def stop(self) -> None:
        """Write what this process still holds, then end its lease, so what it held is taken back at once."""
        self.results.flush()
        with self._lease_lock:
            lease, self._lease = self._lease, None
        if lease is not None:
            lease.retire()

    # --- a task -------------------------------------------------------------------------------

    def admit(self, payload: Any) -> Task:
        """Return the task if this process may run it; else raise Refused (see admission, and refuse)."""
        try:
            return self.admission.admit(payload)
        except Refused as refused:
            if not refused.requeue:
                self.admission.refusals.drop(refused.reason)
                self.admission.tally.add(refused.counted)
            raise

    def refuse(self, payload: Any, refused: Refused, before: int) -> float | None:
        """Record a refusal another worker may not share (db.refusals); return in how many seconds the
        task comes back to the queue, or None to drop it. Never waits.

        before: how many times the task was refused already. Dropped: a task none of whose attempts
        is queued any more (they ended, or were given up), or, when the refusal cannot be recorded
        (another database's task, or one this worker may not trust), one refused REFUSE_UNRECORDED
        times. The scheduler does not send again what was refused within db.refusals.FRESH.
        """
        times = before + 1
        waiting = self._record_refusal(payload, refused) if refused.ours else None
        if waiting is None:  # not recorded with its count (another database's, or no task at all)
            self.admission.tally.add(refused.counted)
        if waiting == 0 or (not refused.authentic and times >= REFUSE_UNRECORDED):
            back_in = None
        else:
            back_in = comes_back_in(times)
        self.admission.refusals.refuse(refused.reason, back_in)
        return back_in

    def _record_refusal(self, payload: Any, refused: Refused) -> int | None:
        """Record the refusal against the queued attempts the task names; return how many (None: no task)."""
        try:
            task = decode(payload)
        except ValueError:
            return None
        kinds = {item.key: item.spec.kind for item in task.items}

        def record(connection: Connection) -> int:
            # Counted in the refusal's transaction: /metrics agrees with the refusals table.
            add(connection, TASKS_REFUSED, refused.counted)
            return record_refusal(
                connection, task.run_id, kinds, self.hostname, (refused.reason, refused.authentic)
            )

        try:
            # Retried only this long: the message waits meanwhile, and comes back all the same. On the
            # engine, not the autocommit claim connection: the row and its count land together.
            return in_transaction(self.engine, record, self.settings.refusal_patience)
        except Exception as exc:  # the database away: the task comes back later all the same
            log.warning("could not record a refusal (the task comes back later): %s", exc)
            return None

    def run_task(self, task: Task, redelivered: bool = False) -> None:
        """Run every attempt of a task's chunk: prepare, claim, run, record; skip final or cancelled ones.

        What the chunk's heuristics need once per machine (execution.preparing: pattern tables to
        build) is done first, in this process, outside every attempt's limits and before any claim;
        this process remembers it. One it could not do ends its attempts as errors saying why.

        Attempts are claimed in groups of about GROUP_S of work (the first alone, to
        learn the chunk's pace) and run in one solver child per group. A claim is one
        statement, committed on its own; a lone tiny attempt (TINY_S) is claimed only
        if it outlasts TINY_S. Results go to this process's ResultSink, written in
        batches within its policy's every_s: a task of one tiny level costs no round trip of
        its own to the database. A worker killed loses at most the attempt it was
        running plus under its policy's every_s of results; claimed (or held) attempts are
        requeued by the scheduler once this process's lease lapses, unclaimed ones
        once the broker's queue is empty.
        """
        # Only what the database knows, as it knows it (run, level, kind, heuristic, limits, cap): nothing
        # else runs, and nothing already final (a task replayed) starts a solver.
        task = self.admission.matching(self.claims, task)
        items = list(task.items)
        if not items:
            return
        lease = self.lease()
        if task.helps:
            self._help(task, items[0], lease)
            return
        # Before any claim: a renewal never gives back what this task is about to claim.
        lease.own(task.run_id, [item.key for item in items])
        try:
            specs = [item.spec for item in items]
            note_programs_run(self.engine, task.run_id, self.hostname, specs, self.noted, self.patience_s)
            # Before any claim, so no claim's clock runs meanwhile; the lease thread keeps renewing.
            prepare(specs, log.info)
            claimant = Claimant(
                task.run_id, self.hostname, lease.name, lease.host, task.max_tries, redelivered
            )
            self._run_chunk(items, claimant, lease, _Splitting(self._splitting_of(task), task.deployment))
        finally:
            # What this task still holds and does not run (it failed midway: the database was down too
            # long) goes back at the lease's next tick, not when the lease lapses: it renews.
            lease.disown()

    def _run_chunk(
        self, items: list[PendingAttempt], claimant: Claimant, lease: Lease, splitting: _Splitting
    ) -> None:
        """Claim, run and record the chunk's attempts group by group, the first alone (see run_task); an
        attempt to split is a group of its own, led as parts (queue.splits)."""
        pos = 0
        group_size = 1
        while pos < len(items):
            group = items[pos : pos + group_size]
            if group[0].key in splitting.plans:
                group = group[:1]
            else:
                group = list(itertools.takewhile(lambda item: item.key not in splitting.plans, group))
            pos += len(group)
            # The first claim of a chunk also holds the rest of it for this process (see db.attempts.hold).
            waiting = [item.key for item in items[pos:]] if len(group) == pos else []
            started = time.monotonic()
            plan = splitting.plans.get(group[0].key)
            if plan is not None:
                self._lead(plan, waiting, claimant, lease, splitting.deployment)
                continue  # a split level's pace is not its kind's
            count = self._run_group(group, waiting, claimant, lease, splitting)
            if count:
                # The first attempt alone sets the pace; a slow one met later only delays claimed
                # attempts, whose deadlines are staggered for exactly that.
                group_size = _group_size((time.monotonic() - started) / count)

    def _run_group(
        self,
        group: list[PendingAttempt],
        waiting: list[AttemptKey],
        claimant: Claimant,
        lease: Lease,
        splitting: _Splitting,
    ) -> int:
        """Claim and run one group, handing each result to the buffer; return how many ran.

        A probe (split_plans.Probe) runs under --split-after as its wall limit (its claim under its own
        limits); one that passes it is split once the group is over, and led here under its claim."""
        claim = functools.partial(
            claimant.claim,
            keys=[item.key for item in group],
            hard_s=Limits.widest(item.spec.limits for item in group).hard_time(),
            waiting=waiting,
        )
        if (
            len(group) == 1
            and not waiting
            and self._tiny(group[0].spec)
            and group[0].key not in splitting.probes
        ):
            claim_after = 0.0 if claimant.redelivered else TINY_S
            gate = DatabaseClaim(self.claims, claim, group[0].key, self.patience_s)
            done = _run_overlapped(claimant.run_id, group[0], gate, claim_after, self.settings.output_keep)
            return self._record(claimant, lease, done)
        claimed = in_transaction(self.claims, claim, self.patience_s)
        runnable = [item for item in group if claimed.runs(item.key)]
        for item in group:
            if not claimed.runs(item.key):
                h, heuristic = item.key
                log.info(
                    "run %s level %s %s: %s", claimant.run_id, h[:12], heuristic, claimed.verdicts[item.key]
                )
        passed: list[tuple[PlannedSplit, Claimed]] = []
        outcomes = _run_claimed(runnable, claimed, self.settings.output_keep, splitting.spec_of)
        count = self._record(claimant, lease, outcomes, _successors(runnable), (splitting.probes, passed))
        for plan, by in passed:
            self._lead_claimed(plan, by, claimant, lease, splitting.deployment)
        return count

    # --- split levels (queue.splits) --------------------------------------------------------------

    def _hands(self, lease: Lease) -> splits.Hands:
        return splits.Hands(
            self.claims, self.engine, self.patience_s, lease.name, self.hostname, self.settings.output_keep
        )

    def _splitting_of(self, task: Task) -> Splitting:
        """Return the task's attempts to split and its probes (split_plans.plan_splitting), if its run
        was sent with --split-after and two or more worker processes are live to share the parts."""
        if task.run_id not in self._split_after:
            self._split_after[task.run_id] = in_transaction(
                self.claims, functools.partial(split_after_of, run_id=task.run_id), self.patience_s
            )
        split_after = self._split_after[task.run_id]
        if split_after is None:
            return Splitting([], {})

        def plan(connection: Connection) -> Splitting:
            session = Session(bind=connection)
            slots = len(live_workers(session))
            return plan_splitting(session, task.items, split_after, slots) if slots > 1 else Splitting([], {})

        return in_transaction(self.claims, plan, self.patience_s)

    def _lead(
        self,
        plan: PlannedSplit,
        waiting: list[AttemptKey],
        claimant: Claimant,
        lease: Lease,
        deployment: str | None,
    ) -> None:
        """Claim a split level's attempt and lead its parts (queue.splits.lead); record its one result."""
        item = plan.attempt
        hard_s = item.spec.limits.hard_time()
        claim = functools.partial(claimant.claim, keys=[item.key], hard_s=hard_s, waiting=waiting)
        claimed = in_transaction(self.claims, claim, self.patience_s)
        if not claimed.runs(item.key):
            h, heuristic = item.key
            log.info("run %s level %s %s: %s", claimant.run_id, h[:12], heuristic, claimed.verdicts[item.key])
            return
        self._lead_claimed(plan, claimed, claimant, lease, deployment)

    def _lead_claimed(
        self, plan: PlannedSplit, claimed: Claimed, claimant: Claimant, lease: Lease, deployment: str | None
    ) -> None:
        """Lead the parts of a split level whose attempt this process claimed; record its one result."""
        item = plan.attempt

        def call_helpers(count: int) -> None:
            # No more than the other live worker processes: a call no process is free for waits on the
            # queue, and is dropped unrun once the level is decided. Counted at each call (once per
            # HELP_IDLE_S at most), not once per task: workers join and leave while a long level runs.
            def others(connection: Connection) -> int:
                return len(live_workers(Session(bind=connection))) - 1

            count = min(count, in_transaction(self.claims, others, self.patience_s))
            if count < 1:
                return
            if self._cluster is None:
                self._cluster = Cluster.of(self.settings)
            self._cluster.call_helpers(claimant.run_id, item, count, claimant.max_tries, deployment)

        outcome = splits.lead(
            self._hands(lease), plan, claimant.run_id, claimed.tokens[item.key], call_helpers
        )
        if outcome is None:
            h, heuristic = item.key
            log.info(
                "run %s level %s %s: its claim was lost while its parts ran",
                claimant.run_id,
                h[:12],
                heuristic,
            )
            return
        self._record(claimant, lease, [Done(item, outcome, claimed, split=True)])

    def _help(self, task: Task, item: PendingAttempt, lease: Lease) -> None:
        """Run parts of a split level another process leads (a call for help, Task.helps)."""
        ran = splits.help_with(self._hands(lease), task.run_id, item)
        h, heuristic = item.key
        log.info("run %s level %s %s: helped with %d part(s)", task.run_id, h[:12], heuristic, ran)

    def _tiny(self, spec: AttemptSpec) -> bool:
        return self.pace.get((spec.kind, spec.heuristic), 1e9) < TINY_S

    def _record(
        self,
        claimant: Claimant,
        lease: Lease,
        done: Iterable[Done],
        successor: dict[AttemptKey, AttemptKey] | None = None,
        probing: tuple[Mapping[AttemptKey, Probe], list[tuple[PlannedSplit, Claimed]]] | None = None,
    ) -> int:
        """Hand each attempt's result to the buffer as it ends, starting the next's try; return how many.

        probing: the group's probes, and where to put those that passed --split-after (not recorded:
        the caller splits them)."""
        count = 0
        since = time.monotonic()
        probes, passed = probing or ({}, [])
        for each in done:
            count += 1
            now = time.monotonic()
            key, spec = each.item.key, each.item.spec
            outcome = each.outcome
            probe = probes.get(key)
            # A probe that passed --split-after is no result: its split's comes once it is led.
            split_now = probe is not None and each.claimed is not None and probe.passed(outcome)
            if probe is not None and each.claimed is not None and split_now:
                passed.append((probe.planned(outcome), each.claimed))
            elif not each.split:  # a split level's parts were each run under their own watch
                outcome = _without_freezes(lease, spec, outcome, (since, now), self.settings.output_keep)
            since = time.monotonic()
            self.pace[(spec.kind, spec.heuristic)] = outcome.stats.wall_s
            after = (successor or {}).get(key)
            if after is not None and each.claimed is not None:
                start = functools.partial(claimant.start, key=after, claimed=each.claimed)
                in_transaction(self.claims, start, self.patience_s)
            if split_now:
                continue
            self.results.add(self._result(claimant.run_id, key, spec, outcome, each.claimed, lease.offset_s))
            if outcome.stats.wall_s >= self.results.policy.every_s:
                self.results.flush()  # batching pays for tiny attempts only; a long one's result goes now
        return count

    def _result(
        self,
        run_id: int,
        key: AttemptKey,
        spec: AttemptSpec,
        outcome: Outcome,
        claimed: Claimed | None,
        offset_s: float,
    ) -> Result:
        """Return the result to write of an attempt that ended now, stamped in the server's clock.

        It names its heuristic: it lands on that attempt of the level only (a run may have several).
        """
        finished = utcnow() + timedelta(seconds=offset_s)
        token = claimed.tokens.get(key) if claimed is not None else None
        length = solution_length(spec.kind, outcome)
        start = began(outcome, finished)
        h, heuristic = key
        claimed_now = claimed is not None
        return Result(
            run_id, h, outcome, length, self.hostname, start, finished, claimed_now, token, heuristic
        )


@dataclass(frozen=True)
class _Splitting:
    """A task's attempts to split (by key), its probes, and the deployment its calls for help name."""

    splitting: Splitting
    deployment: str | None

    @functools.cached_property
    def plans(self) -> dict[AttemptKey, PlannedSplit]:
        return {p.attempt.key: p for p in self.splitting.splits}

    @property
    def probes(self) -> dict[AttemptKey, Probe]:
        return self.splitting.probes

    def spec_of(self, item: PendingAttempt) -> AttemptSpec:
        """Return the spec to run the attempt with: a probe's under --split-after, else its own."""
        probe = self.probes.get(item.key)
        return item.spec if probe is None else probe.spec()


def declared_programs(declared: Solvers) -> dict[str, Any]:
    """Return what a worker process records of the programs it was declared (db.workers.Facts):
    per name, its kind, command, the digest of its declaration (what tasks name) and the SHA-256 of
    its executable as found on this machine (None: not found here; its tasks are refused)."""
    shown: dict[str, Any] = {}
    for name, solver in sorted(declared.items()):
        try:
            sha256: str | None = resolve(solver).sha256
        except ProgramMissing:
            sha256 = None
        shown[name] = {
            "kind": solver.kind,
            "command": solver.shown(),
            "digest": solver.digest(),
            "sha256": sha256,
        }
    return shown


def _group_size(pace_s: float) -> int:
    """Return how many attempts of this pace (seconds each) make a group of about GROUP_S."""
    fits = int(GROUP_S / pace_s) if pace_s > 0 else MAX_GROUP
    return max(1, min(MAX_GROUP, fits))


def _successors(runnable: Sequence[PendingAttempt]) -> dict[AttemptKey, AttemptKey]:
    """Return each attempt's next in the group.

    Each attempt of a group starts when the one before it ends: its try is counted then
    (one statement), never before it starts, so a worker dying mid-group charges no
    attempt that never started, and one that kills its worker is charged.
    """
    return {a.key: b.key for a, b in zip(runnable, runnable[1:], strict=False)}


def _run_claimed(
    runnable: list[PendingAttempt],
    claimed: Claimed,
    keep: int,
    spec_of: Callable[[PendingAttempt], AttemptSpec],
) -> Iterator[Done]:
    """Run the claimed attempts in one solver child, yielding each as it ends (lazily: each result
    reaches the buffer, and the database, while the group goes on); each keeps at most keep bytes
    of its solver's own output."""
    outcomes = execute_attempts([spec_of(item) for item in runnable], keep)
    for item, outcome in zip(runnable, outcomes, strict=True):
        yield Done(item, outcome, claimed)


class DatabaseClaim:
    """The ClaimGate of a worker's lone attempt: its claim in the database, made once while it runs.

    claim: the claim's statement (Claimant.claim with its attempt), run on this process's claim
    connection, retried on a dropped connection for patience_s (the worker's db_patience).
    claimed keeps its answer.
    """

    def __init__(
        self,
        claims: ClaimConnection,
        claim: Callable[[Connection], Claimed],
        key: AttemptKey,
        patience_s: float,
    ):
        self.claims = claims
        self.patience_s = patience_s
        self.statement = claim
        self.key = key
        self.claimed: Claimed | None = None  # None until claim() was asked

    def claim(self) -> bool:
        """Claim the attempt; return whether it runs here (False: final, cancelled, another's, lost)."""
        self.claimed = in_transaction(self.claims, self.statement, self.patience_s)
        return self.claimed.runs(self.key)


def _run_overlapped(
    run_id: int, item: PendingAttempt, gate: DatabaseClaim, claim_after: float, keep: int
) -> list[Done]:
    """Run one attempt, its claim made by the gate while it runs (see execute_overlapped).

    Return [Done], or [] if the claim declined it; its claim is None if it ended before claim_after.
    """
    outcome = execute_overlapped(item.spec, gate, claim_after, keep)
    if outcome is None:
        assert gate.claimed is not None
        verdict = gate.claimed.verdicts[item.key]
        log.info("run %s level %s %s: %s", run_id, item.level_hash[:12], item.spec.heuristic, verdict)
        return []
    return [Done(item, outcome, gate.claimed)]


def _without_freezes(
    lease: Lease, spec: AttemptSpec, outcome: Outcome, ran: tuple[float, float], keep: int
) -> Outcome:
    """Return the outcome with the time this process spent frozen while it ran (ran: start, end) taken out.

    A timeout that a freeze overlapped is run again (up to FROZEN_RERUNS times):
    the solver did not have its time. Any other outcome keeps its verdict, and its
    wall time loses the frozen stretch.
    """
    start, end = ran
    for _ in range(FROZEN_RERUNS):
        frozen = lease.frozen_during(start, end)
        if frozen <= 0:
            return outcome
        if outcome.status is not Status.TIMEOUT:
            wall = max(0.0, outcome.stats.wall_s - frozen)
            return replace(outcome, stats=replace(outcome.stats, wall_s=wall))
        log.warning("%s attempt timed out after this process was frozen %.1f s: run again", spec.kind, frozen)
        start = time.monotonic()
        outcome = next(iter(execute_attempts([spec], keep)))
        end = time.monotonic()
    return outcome


# The one WorkerProcess of this pool process (None until start_process, and in any other process).
_process: WorkerProcess | None = None


def start_process(settings: Settings, hostname: str, declared: Solvers | None = None) -> WorkerProcess:
    """Make this pool process's WorkerProcess (at its start) and take its lease from a thread."""
    global _process
    _process = WorkerProcess(settings, hostname, declared)
    _process.take_lease_early()
    return _process


def this_process() -> WorkerProcess:
    """Return this pool process's WorkerProcess (made by start_process)."""
    if _process is None:
        raise RuntimeError(
            "no WorkerProcess in this process: start_process runs at each pool process's start"
        )
    return _process


def stop_process() -> None:
    """Write what this pool process holds and end its lease (before it exits); forget its WorkerProcess."""
    global _process
    process, _process = _process, None
    if process is not None:
        process.stop()
