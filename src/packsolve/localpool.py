"""Local mode: run a run's pending attempts on a process pool, the parent writing to the database."""

from __future__ import annotations

import contextlib
import functools
import multiprocessing
import os
import select
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from sqlalchemy import Engine

from packsolve.attempt import AttemptKey, Result, StopReason, began
from packsolve.budget import SharedBound
from packsolve.combining import Handout
from packsolve.db.attempts import record
from packsolve.db.local_runs import mark_running, record_over_cancel, was_cancelled
from packsolve.db.models import utcnow
from packsolve.db.parts import PartRun, record_parts
from packsolve.db.session import session_scope
from packsolve.db.sink import FlushPolicy, ResultSink
from packsolve.execution import (
    AttemptSpec,
    PartSpec,
    cgroups,
    cores,
    execute_attempts,
    preparing,
    solution_length,
)
from packsolve.execution.spec import PendingAttempt
from packsolve.outcome import Outcome, Status
from packsolve.pids import pid_alive
from packsolve.settings import Settings
from packsolve.split_plans import PlannedSplit, Probe
from packsolve.splitting import share_bounds, shared_key

# How often the run is read to see whether `packsolve cancel` asked it to stop.
CANCEL_CHECK_S = 0.5
# Where a pidfd cannot be had, how often a pool process looks whether its solve process lives.
OWNER_POLL_S = 0.5
# How often a pool process tells the solve process which attempt it runs now (status shows it running).
# A tick, not a message per attempt: thousands of tiny levels a second would flood the pipe.
STARTED_EVERY_S = 0.1


class Stopped(Exception):
    """The pool stopped before the end: Ctrl-C (interrupted) or `packsolve cancel` (cancelled).

    Results finished before the stop are written; in_flight holds the attempts
    (level hash, heuristic) that were running when their processes were killed.
    """

    def __init__(self, reason: StopReason, in_flight: list[AttemptKey]) -> None:
        super().__init__(f"local run {reason}: {len(in_flight)} attempt(s) stopped while running")
        self.reason = reason
        self.in_flight = in_flight


class _Started:
    """A pool process's side of "running now": the attempt it runs, told to the solve process each tick.

    The solve process marks what it hears running (with this process as worker, its try counted);
    an attempt that starts and ends between two ticks is never told, and counts its try with its result.
    """

    def __init__(self) -> None:
        self.queue: Any = None
        self.now: tuple[AttemptKey, str, datetime] | None = None  # ((level hash, heuristic), worker, started)

    def serve(self, queue: Any) -> None:
        """Start the thread that puts the attempt running now on queue, once per attempt."""
        self.queue = queue

        def tell() -> None:
            told = None
            while True:
                time.sleep(STARTED_EVERY_S)
                now = self.now
                if now is not None and now is not told:
                    queue.put(now)
                    told = now

        threading.Thread(target=tell, name="packsolve-started", daemon=True).start()


_STARTED = _Started()


def _init(
    owner: int, started: Any, failed: dict[str, str], cpus: Any, measure: str, bounds: dict[str, SharedBound]
) -> None:
    """Pool initializer: die with the solve process, tell it which attempt runs now, know what
    it could not prepare (its attempts end as errors saying why, execution.preparing), measure as the
    cgroups setting says (measure), search the parts of best-of-all split levels with the bounds
    every process shares (splitting.share_bounds), and, pinned, take a set of CPUs of its own from
    cpus (a queue holding one set per process)."""
    cgroups.choose(measure)
    share_bounds(bounds)
    if cpus is not None:
        cores.pin(cpus.get())
    _die_with(owner)
    _STARTED.serve(started)
    preparing.remember_failures(failed)


def _die_with(owner: int) -> None:
    """Pool initializer: kill this pool process the moment the solve process owner ends, however it ends.

    A `kill -9` of the solve runs no clean-up, and a pool process's parent is the forkserver,
    not the solve: a thread waits on a pidfd of the owner and then SIGKILLs this process, whose
    solver child follows it (PR_SET_PDEATHSIG). Without pidfds, the thread polls the owner.
    """

    def watch() -> None:
        try:
            fd = os.pidfd_open(owner)
        except (AttributeError, OSError):
            fd = None
        if fd is not None:
            select.select([fd], [], [])  # readable once the owner has exited
        else:
            while pid_alive(owner):
                time.sleep(OWNER_POLL_S)
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, name="packsolve-owner-watch", daemon=True).start()


def _attempts(
    specs: list[AttemptSpec], hashes: list[str], keep: int
) -> list[tuple[Outcome, str, datetime, datetime, int | None]]:
    """Run a chunk in one solver child; return (outcome, worker, started, finished, length) per spec.

    Each outcome keeps at most keep bytes of its solver's own output (the output_keep setting).
    """
    worker = f"local@{socket.gethostname()}:{os.getpid()}"
    out = []
    outcomes = execute_attempts(specs, keep)
    try:
        for spec, level_hash in zip(specs, hashes, strict=True):
            _STARTED.now = ((level_hash, spec.heuristic), worker, utcnow())
            outcome = next(outcomes)
            finished = utcnow()
            out.append(
                (outcome, worker, began(outcome, finished), finished, solution_length(spec.kind, outcome))
            )
    finally:
        _STARTED.now = None
        outcomes.close()
    return out


class _StopSignals:
    """Ctrl-C (SIGINT) and `kill PID` (SIGTERM) during a local run, raised only where it is safe.

    A KeyboardInterrupt raised at any bytecode can land inside a database write: SQLAlchemy's
    pool then prints a traceback of its own while resetting the connection. So the handlers
    raise only while the loop waits on the pool; a signal that arrives elsewhere is kept and
    raised at the next wait. In a thread other than the main one no handler can be set: the
    caller's own signal handling applies.
    """

    def __init__(self) -> None:
        self.requested: int | None = None
        self.waiting = False
        self.previous: dict[int, Any] = {}

    def __enter__(self) -> _StopSignals:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self.previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *_: object) -> None:
        # Only where ours is still set: after a stop both signals stay ignored, so a second Ctrl-C
        # cannot cut short the caller's marking of the rest (solve_local restores them after).
        for sig, handler in self.previous.items():
            if handler is not None and signal.getsignal(sig) == self._handle:
                signal.signal(sig, handler)

    def _handle(self, signum: int, _frame: object) -> None:
        self.requested = signum
        if self.waiting:
            raise KeyboardInterrupt(f"signal {signum}")

    @contextlib.contextmanager
    def interruptible(self) -> Iterator[None]:
        """The one place a stop may be raised: a signal kept from before is raised on entry."""
        if self.requested is not None:
            raise KeyboardInterrupt(f"signal {self.requested}")
        self.waiting = True
        try:
            yield
        finally:
            self.waiting = False


class _Recorder:
    """The solve process's side of a local run: results to the result sink (written in batches by its
    policy, in this loop), attempts started marked running, a cancel noticed."""

    def __init__(
        self,
        engine: Engine,
        run_id: int,
        on_result: Callable[[str, Outcome], None] | None,
        policy: FlushPolicy,
    ) -> None:
        self.engine = engine
        self.run_id = run_id
        self.on_result = on_result
        self.sink = ResultSink(functools.partial(_write, engine), policy)
        self.part_runs: list[PartRun] = []  # parts of split levels that ended, not yet written
        self.started: dict[AttemptKey, tuple[AttemptKey, str, datetime]] = {}  # told running, not yet marked
        self.marked: set[AttemptKey] = set()  # marked running (their try counted), no result yet
        self.last_flush = self.last_check = time.monotonic()

    def add(
        self, keys: list[AttemptKey], results: list[tuple[Outcome, str, datetime, datetime, int | None]]
    ) -> None:
        """Buffer the results of a chunk (its attempts, in order) and report each to on_result."""
        for key, (outcome, worker, started, finished, length) in zip(keys, results, strict=True):
            self.started.pop(key, None)
            # Not marked running: the result counts the try, landing only while the attempt is queued.
            claimed = key in self.marked
            self.marked.discard(key)
            level_hash, heuristic = key
            self.sink.add(
                Result(
                    self.run_id,
                    level_hash,
                    outcome,
                    length,
                    worker,
                    started,
                    finished,
                    claimed=claimed,
                    heuristic=heuristic,
                )
            )
            if self.on_result is not None:
                self.on_result(level_hash, outcome)

    def hear(self, queue: Any) -> None:
        """Take what the pool processes told of attempts they started (a result already here wins)."""
        buffered = set(self.sink.waiting().get(self.run_id, ()))
        while not queue.empty():
            key, worker, started = queue.get()
            if key not in buffered:
                self.started[key] = (key, worker, started)

    def flush(self) -> None:
        """Write the attempts started, then the buffered results."""
        if self.started:
            with session_scope(self.engine) as session:
                self.marked |= mark_running(session, self.run_id, list(self.started.values()))
            self.started.clear()
        if self.part_runs:
            with session_scope(self.engine) as session:
                record_parts(session, self.part_runs)
            self.part_runs.clear()
        self.sink.flush()
        self.last_flush = time.monotonic()

    def flush_if_due(self) -> None:
        """Write when the sink's policy says so, or the attempts started every_s after the last write."""
        if self.sink.due() or time.monotonic() - self.last_flush >= self.sink.policy.every_s:
            self.flush()

    def check_cancelled(self) -> None:
        """Raise Stopped(CANCELLED) once `packsolve cancel` marked the run (read every CANCEL_CHECK_S)."""
        if time.monotonic() - self.last_check < CANCEL_CHECK_S:
            return
        self.last_check = time.monotonic()
        with session_scope(self.engine) as session:
            if was_cancelled(session, self.run_id):
                raise Stopped(StopReason.CANCELLED, [])


def _write(engine: Engine, results: list[Result]) -> None:
    """Write a batch of a local run's results in one transaction (the runs they finish stamped)."""
    with session_scope(engine) as session:
        # Results finished before a cancel reached this loop are still results: they replace
        # the "cancelled before it ran" that cancel wrote over their still-queued rows.
        written = record(session, results)
        if written < len(results):
            record_over_cancel(session, results)


class _Splits:
    """The split levels of a local run: their parts handed to the pool, their answers combined.

    Each part is a chunk of one attempt of the part (its AttemptSpec with a PartSpec), under what
    is left of its level's limits when it is handed out: the wall time from the level's start, the
    nodes and CPU its parts have not spent (a part handed out with none left is not run: the level
    times out). Parts of a level decided already are not handed out; those still running end under
    their own limits and are written, their effort counted in the level's.
    """

    def __init__(
        self, run_id: int, splits: Sequence[PlannedSplit], probes: Iterable[AttemptKey], context: Any
    ) -> None:
        self.run_id = run_id
        self.levels = {s.attempt.key: _SplitLevel(s) for s in splits}
        # Made before the pool's processes start, which inherit them (one int64 each, in one shared
        # array), for the levels split from the start and those a probe may split: the best answer's
        # length so far, which stops the parts that cannot beat it (best of all: their native search
        # reads it; first found: any answer stops them, splitting._stop_once_found).
        keys = [*self.levels, *(k for k in probes if k not in self.levels)]
        self.bounds = dict(
            zip((shared_key(*key) for key in keys), SharedBound.many(len(keys), context), strict=True)
        )
        self.waiting: list[tuple[AttemptKey, Handout]] = []  # handed out, not yet submitted
        self.futures: dict[Future, tuple[AttemptKey, Handout]] = {}
        for key, level in self.levels.items():
            self.waiting += [(key, h) for h in level.combination.hand_out()]

    def add(self, planned: PlannedSplit, began_at: datetime) -> None:
        """Split now a level whose first attempt, begun at began_at, ran past --split-after (a probe):
        its first round is handed out before everything."""
        level = _SplitLevel(planned)
        level.started_at = began_at
        self.levels[planned.attempt.key] = level
        self.waiting[:0] = [(planned.attempt.key, h) for h in level.combination.hand_out()]

    @property
    def busy(self) -> bool:
        return bool(self.waiting or self.futures)

    def undecided(self) -> list[AttemptKey]:
        return [key for key, level in self.levels.items() if level.combination.outcome is None]

    def submit(self, pool: ProcessPoolExecutor, keep: int, room: int, recorder: _Recorder, idle: int) -> None:
        """Submit waiting parts while the pool has room (room: tasks it may still take); parts handed out
        ahead of their round (Handout.ahead) only onto an idle process (idle: how many processes have
        no task, running or queued, with no other attempt waiting).

        An ahead part queued behind busy processes would run before the rounds other split levels hand
        out meanwhile, and in its own level's last round it is wasted: it runs only where a process
        would otherwise wait."""
        while self.waiting and len(self.futures) < room:
            if self.waiting[0][1].ahead and idle <= 0:
                return
            key, handout = self.waiting.pop(0)
            level = self.levels[key]
            spec = level.part_spec(handout)
            if spec is None:  # the level's limits are spent
                level.combination.timed_out()
                self._decided(key, recorder)
                continue
            self.futures[pool.submit(_attempts, [spec], [key[0]], keep)] = (key, handout)
            idle -= 1  # the part took an idle process, if there was one

    def took(self, fut: Future, recorder: _Recorder) -> None:
        """Take a part's result: write its run, combine it, hand out what comes next."""
        key, handout = self.futures.pop(fut)
        level = self.levels[key]
        [(outcome, worker, started, finished, _)] = fut.result()
        level.started_at = min(level.started_at or started, started)
        decided = level.combination.outcome is not None
        if decided and outcome.status not in (Status.SOLVED, Status.NO_SOLUTION):
            # Stopped (or run out) once its level had its answer: what it cost is kept, not how it ended.
            why = "stopped: its level was decided by another part first"
            outcome = replace(outcome, status=Status.CANCELLED, message=why)
        recorder.part_runs.append(
            PartRun(
                self.run_id,
                key[0],
                key[1],
                handout.index,
                level.combination.count,
                handout.round,
                handout.window,
                outcome,
                worker,
                started,
                finished,
            )
        )
        bound = self.bounds.get(shared_key(*key))
        if bound is not None and outcome.status == Status.SOLVED:
            # The parts still running see it within a few thousand nodes, and stop: none is shorter.
            bound.offer(level.combination.length(outcome.solution))
        level.combination.took(handout.index, outcome)
        if decided:
            return
        if level.combination.outcome is not None:
            self._decided(key, recorder)
        else:
            # Its parts ahead not yet submitted go back and are handed out again with the rest, in the
            # parts' order: kept queued, they would run in the order they ended the round before.
            for k, h in self.waiting:
                if k == key and h.ahead:
                    level.combination.give_back(h.index)
            self.waiting = [(k, h) for k, h in self.waiting if k != key or not h.ahead]
            handed = [(key, h) for h in level.combination.hand_out()]
            # A new round's parts before everything; parts ahead of their round after everything.
            self.waiting[:0] = [(k, h) for k, h in handed if not h.ahead]
            self.waiting += [(k, h) for k, h in handed if h.ahead]

    def _decided(self, key: AttemptKey, recorder: _Recorder) -> None:
        level = self.levels[key]
        outcome = level.combination.outcome
        assert outcome is not None
        self.waiting = [(k, h) for k, h in self.waiting if k != key]
        finished = utcnow()
        worker = f"local@{socket.gethostname()}:parts"
        length = solution_length(level.attempt.spec.kind, outcome)
        recorder.add([key], [(outcome, worker, level.started_at or finished, finished, length)])


class _SplitLevel:
    """One split level: its attempt, its Combination, when its first part began."""

    def __init__(self, planned: PlannedSplit) -> None:
        self.attempt = planned.attempt
        self.of = planned.of
        self.combination = planned.combination()
        self.started_at: datetime | None = None

    def part_spec(self, handout: Handout) -> AttemptSpec | None:
        """Return the spec of a part handed out, under what is left of the level's limits (None: none)."""
        limits = self.attempt.spec.limits
        left = self.combination.left(limits.time_limit, limits.node_limit, limits.cpu_limit)
        if left is None:
            return None
        wall, nodes, cpu = left
        part = PartSpec(handout.index, self.of, self.combination.count, handout.window, handout.best)
        return replace(
            self.attempt.spec,
            limits=replace(limits, time_limit=wall, node_limit=nodes, cpu_limit=cpu),
            part=part,
        )


@dataclass(frozen=True)
class LocalWork:
    """What a local run's pool runs: chunks of attempts, and the attempts it runs as their parts."""

    chunks: list[list[PendingAttempt]]
    splits: Sequence[PlannedSplit] = ()
    # Attempts run whole first, split if they pass --split-after (their chunks hold Probe.spec()).
    probes: Mapping[AttemptKey, Probe] = field(default_factory=dict)


def run_local(
    engine: Engine,
    run_id: int,
    work: LocalWork,
    jobs: int,
    settings: Settings,
    on_result: Callable[[str, Outcome], None] | None = None,
) -> None:
    """Run the pending attempts, in chunks, with jobs processes, recording each result.

    The attempts of work.splits (split_plans.choose_splits) run as their parts instead (_Splits): each part
    an attempt of its own in a pool process, handed out first (a split level is among the longest),
    round by round for a best-of-all split; each level's one result is made of its parts' answers
    (combining.Combination) and recorded as any attempt's, each part's run written beside it (parts).

    Each pool task is a chunk of attempts, so tiny levels share one solver
    child. The run is read every CANCEL_CHECK_S: once `packsolve cancel`
    marked it cancelled, or on KeyboardInterrupt, the pool's processes (and
    their solvers) are killed, the results finished so far are written, and
    Stopped is raised (StopReason CANCELLED or INTERRUPTED). Results are written by the
    local FlushPolicy of settings (the command's), and each keeps settings.output_keep bytes of its
    solver's own output.
    """
    # forkserver: the pool's processes must not inherit this process's threads or DB connections.
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["packsolve.execution"])
    policy, keep = FlushPolicy.local(settings), settings.output_keep
    wake_s = min(policy.every_s, CANCEL_CHECK_S)
    recorder = _Recorder(engine, run_id, on_result, policy)
    futures: dict[Future, list[AttemptKey]] = {}  # a chunk's future: its attempts
    parts = _Splits(run_id, work.splits, work.probes, ctx)
    started = ctx.SimpleQueue()
    pool = ProcessPoolExecutor(
        max_workers=max(1, jobs),
        mp_context=ctx,
        initializer=_init,
        initargs=(
            os.getpid(),
            started,
            preparing.failures(),
            _cpu_sets(ctx, settings, jobs),
            settings.cgroups,
            parts.bounds,
        ),
    )
    with _StopSignals() as signals:
        try:
            queue = list(reversed(work.chunks))
            # Keep only a few tasks per process in flight so a stop loses little.
            window = max(1, jobs) * 2
            while queue or futures or parts.busy:
                idle = 0 if queue else max(1, jobs) - len(futures) - len(parts.futures)
                parts.submit(pool, keep, window - len(futures), recorder, idle)
                while queue and len(futures) + len(parts.futures) < window:
                    chunk = queue.pop()
                    hashes = [p.level_hash for p in chunk]
                    futures[pool.submit(_attempts, [p.spec for p in chunk], hashes, keep)] = [
                        p.key for p in chunk
                    ]
                with signals.interruptible():
                    # Woken often enough to write on time and to notice a cancel on time.
                    done, _ = wait([*futures, *parts.futures], timeout=wake_s, return_when=FIRST_COMPLETED)
                recorder.hear(started)
                for fut in done:
                    if fut in parts.futures:
                        parts.took(fut, recorder)
                    else:
                        keys, results = futures.pop(fut), fut.result()
                        passed = [
                            (key, result)
                            for key, result in zip(keys, results, strict=True)
                            if key in work.probes and work.probes[key].passed(result[0])
                        ]
                        for key, (outcome, _, began_at, _, _) in passed:
                            parts.add(work.probes[key].planned(outcome), began_at)
                        split_now = {key for key, _ in passed}
                        kept = [(k, r) for k, r in zip(keys, results, strict=True) if k not in split_now]
                        recorder.add([k for k, _ in kept], [r for _, r in kept])
                recorder.flush_if_due()
                recorder.check_cancelled()
            recorder.flush()
        except (KeyboardInterrupt, Stopped) as exc:
            reason = exc.reason if isinstance(exc, Stopped) else StopReason.INTERRUPTED
            raise _stop(pool, futures, recorder, reason, parts) from None
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            recorder.flush()
            raise
        else:
            pool.shutdown(wait=True)


def _cpu_sets(ctx: Any, settings: Settings, jobs: int) -> Any:
    """Return a queue holding one set of CPUs for each pool process; None when attempts are not pinned.

    Each process takes one set as it starts, so no two share a core (execution.cores); the
    command checked before it created the run that the sets exist (request.check_jobs).
    """
    if settings.cpus_per_attempt is None:
        return None
    cpus = ctx.SimpleQueue()
    for cpu_set in cores.cpu_sets(settings.cpus_per_attempt, jobs, cores.physical_cores(cores.usable_cpus())):
        cpus.put(cpu_set)
    return cpus


def _stop(
    pool: ProcessPoolExecutor,
    futures: dict[Future, list[AttemptKey]],
    recorder: _Recorder,
    reason: StopReason,
    parts: _Splits,
) -> Stopped:
    """Kill the pool, write what finished, and return the Stopped to raise (naming what was running:
    a split level not yet decided among them, its parts' runs that ended written)."""
    # A second Ctrl-C (or kill) must not cut the writing of what finished short.
    with contextlib.suppress(ValueError):  # not the main thread: no signal handlers to set
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _kill(pool)
    for fut in [f for f in futures if f.done() and not f.cancelled() and f.exception() is None]:
        recorder.add(futures.pop(fut), fut.result())
    for fut in [f for f in parts.futures if f.done() and not f.cancelled() and f.exception() is None]:
        parts.took(fut, recorder)
    recorder.flush()
    return Stopped(reason, [key for keys in futures.values() for key in keys] + parts.undecided())


def _kill(pool: ProcessPoolExecutor) -> None:
    """Stop the pool at once: kill its processes (their solver children die with them)."""
    processes = list(getattr(pool, "_processes", {}).values())  # no public way before Python 3.14
    for process in processes:
        with contextlib.suppress(ProcessLookupError, ValueError, AttributeError):
            process.kill()
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        with contextlib.suppress(ValueError, AttributeError, AssertionError):
            process.join(5)
