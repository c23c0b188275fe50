"""The parent side: following a solver child through its jobs, and every way a job can end.

run_batch runs a batch of jobs in one solver child after another. The kept child (one
per process, forked once and kept between batches) takes them if it is idle; otherwise a
fresh child is forked with the jobs in its memory. The parent waits for each job's line
up to the job's hard limit, kills the child there, and turns a death into the ending of
the job that was running; a fresh child takes the jobs after it.

A caller that makes its claim while the first job runs (a worker's lone tiny attempt) hands
run_batch a ClaimGate: it is asked once, when the child has the jobs (or once the first job
has outlasted a delay), whether the results are still wanted. The gate is the caller's, in
its own layer (a worker claims in its database); here it is only a question with a yes or no.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Generator, Sequence
from typing import Any, NamedTuple, Protocol

from packsolve.execution import processes, wire
from packsolve.execution.rlimits import added, cpu_backstop_s, unreported
from packsolve.execution.spec import Job, Limits
from packsolve.outcome import SearchStats, Status

# A child whose results the gate declined is kept if it finishes within this (else killed).
ABANDON_GRACE_S = 0.1


class ClaimGate(Protocol):
    """The caller's claim on an attempt, made once while the attempt runs in its solver child."""

    def claim(self) -> bool:
        """Return whether the attempt may proceed (its result is wanted); raise if no answer can be had."""
        ...


class JobResult(NamedTuple):
    """What the parent learned about one job: the child's payload, the job's usage, a forced ending."""

    payload: dict[str, Any]
    stats: SearchStats
    forced: tuple[Status, str] | None  # (status, message) when the solver's own answer does not stand


class _Ran(NamedTuple):
    """What one child did with its jobs: how many results it gave, whether the gate declined them."""

    results: int
    declined: bool


def run_batch(
    jobs: Sequence[Job], gate: ClaimGate | None = None, claim_after: float = 0.0
) -> Generator[JobResult, None, None]:
    """Yield each job's result, in order, running the jobs after a child's death in a fresh one.

    With a gate, gate.claim() is called once, when the first child has the jobs and the first
    job has run claim_after seconds (0: at once); never if that job ended sooner. If it returns
    False nothing more is yielded and the child is kept only if it finishes within
    ABANDON_GRACE_S (else killed). If it raises, the child is killed and the error propagates.
    """
    done = 0
    while done < len(jobs):
        ran = yield from _run_child(jobs[done:], gate, claim_after)
        if ran.declined:
            return
        done += ran.results
        gate = None


def _run_child(
    jobs: Sequence[Job], gate: ClaimGate | None, claim_after: float
) -> Generator[JobResult, None, _Ran]:
    """Run jobs in one solver child; yield each job's result as it arrives, stopping after a death or kill.

    The kept child takes the jobs through its pipe if it can; otherwise (none kept,
    it died while idle, a job cannot be pickled or unpickled, another thread's
    batch is using it) a fresh child is forked with the jobs in its memory.
    """
    with processes.kept_child_turn() as own:
        kept = processes.hand_over(jobs) if own else None
        child = kept or processes.fork(jobs, keep=own)
        watch = _Watch(child, jobs, own, gate, claim_after, taken=kept is None)
        return (yield from watch.results())


class _Watch:
    """One solver child followed through its jobs: each step below is one thing the parent does."""

    def __init__(
        self,
        child: processes.Child,
        jobs: Sequence[Job],
        keep: bool,
        gate: ClaimGate | None,
        claim_after: float,  # the gate is asked once the first job has run this long
        taken: bool,  # False: a kept child was sent the jobs and has not said it holds them (wire.TAKEN)
    ) -> None:
        self.child = child
        self.taken = taken
        self.jobs = jobs
        self.keep = keep  # whether the child may become the kept one when it ends the batch healthy
        self.lines = wire.Lines(child.from_child)
        self.mark = time.monotonic()  # when the job now running started (as far as the parent knows)
        self.gate = gate
        # When the gate is asked; None once it was, or once it can no longer be.
        self.claim_by = None if gate is None else self.mark + claim_after
        self.abandon_by: float | None = None  # set once the gate declined the results
        self.done = 0  # jobs whose line has been read
        self.killed = False
        self.reaped: tuple[int, int, Any] | None = None  # os.wait4's (pid, status, rusage)
        self.current: processes.Child | None = child  # None once handed back as the kept child

    def results(self) -> Generator[JobResult, None, _Ran]:
        """Yield each job's result; after a death or kill, the ending of the job it cost, then stop.

        Ask the gate when it is due (see run_batch); if it declines, yield nothing. Never leaves
        a child behind: one not handed back as the kept child is reaped, or killed and reaped if
        this is interrupted (Celery soft limit, Ctrl-C, the gate raising, consumer gone).
        """
        yielded = 0
        try:
            while self.done < len(self.jobs):
                # Inside the try: if the gate raises (its database is gone), the child must not be left.
                self._claim_if_due()
                line = self.lines.next(self._wait())
                if not self.taken and line is not False:
                    self._handed_over(line)
                    continue
                if line is False:
                    if self._only_the_claim_was_due():
                        continue
                    self._kill_at_hard_limit()
                    break
                if line is None:
                    break  # the child died: reaped below, its job's ending made after
                result, leaving = self._record(line)
                if self.abandon_by is None:
                    yielded += 1
                    yield result
                if leaving:
                    break  # after a MemoryError (or grown too big) the child leaves; the rest get a fresh one
            self._reap()
        finally:
            self._release()
        if self.abandon_by is not None:
            return _Ran(0, declined=True)
        if self.done < len(self.jobs):
            ending = self._ending_of_death()
            if ending is not None:
                yielded += 1
                yield ending
        return _Ran(yielded, declined=False)

    def _claim_if_due(self) -> None:
        """Ask the gate once its time has come; if it declines the results, grant the grace."""
        if self.gate is not None and self.claim_by is not None and time.monotonic() >= self.claim_by:
            self.claim_by = None
            if not self.gate.claim():
                self.abandon_by = time.monotonic() + ABANDON_GRACE_S

    def _hard_deadline(self) -> float | None:
        """Return when the running job is killed; None if it has no time limit."""
        hard = self.jobs[self.done][1].hard_time()
        return None if hard is None else self.mark + hard

    def _wait(self) -> float | None:
        """Return how long to wait for the next line: until the hard limit, the grace, or the gate is due."""
        now = time.monotonic()  # after the gate, which may have waited on its database
        deadline = self.abandon_by if self.abandon_by is not None else self._hard_deadline()
        wait = None if deadline is None else max(0.0, deadline - now)
        if self.claim_by is not None:
            wait = self.claim_by - now if wait is None else min(wait, self.claim_by - now)
        return wait

    def _only_the_claim_was_due(self) -> bool:
        """Return True if the wait ended for the gate's time only, not at the hard limit."""
        deadline = self._hard_deadline()
        return self.claim_by is not None and (deadline is None or time.monotonic() < deadline)

    def _kill_at_hard_limit(self) -> None:
        """Kill the child (its job passed the hard limit, or the declined child its grace)."""
        os.kill(self.child.pid, signal.SIGKILL)
        self.killed = True

    def _handed_over(self, line: bytes | None) -> None:
        """Read the kept child's first word on the jobs sent to it: it took them, or never will."""
        if line == wire.TAKEN:  # its jobs begin now
            self.taken = True
            self.mark = time.monotonic()
        else:  # it died while idle (None: its pipe was still open when they were sent) or REFUSED them
            self._fork_afresh()

    def _fork_afresh(self) -> None:
        """The kept child did not take the jobs: replace it by a fork that has them in memory."""
        self.child.discard()
        self.taken = True
        self.child = self.current = processes.fork(self.jobs, self.keep)
        self.lines = wire.Lines(self.child.from_child)
        self.mark = time.monotonic()

    def _record(self, line: bytes) -> tuple[JobResult, bool]:
        """Return the result of the job this line reports, and whether the child leaves after it."""
        result = _decode(line)
        self.claim_by = None  # the first job ended before the gate was due: it is never asked
        # The next job's clock starts when the parent reads this line, not when the child
        # wrote it: a child blocked on a full pipe (parent busy writing results) has not
        # started the next job yet. Lenient by the parent's delay; RLIMIT_CPU still holds.
        self.mark = time.monotonic()
        self.child.reported = added(self.child.reported, result.stats)
        self.done += 1
        leaving = bool(result.payload.pop("_retire", False)) or (
            result.forced is not None and result.forced[0] is Status.MEMOUT
        )
        if self.done == len(self.jobs) and self.keep and not leaving:
            self._hand_back()
        return result, leaving

    def _hand_back(self) -> None:
        """Make the child, idle after its last job, the next batch's kept one (before the last yield)."""
        processes.keep_for_next_batch(self.child)
        self.current = None

    def _reap(self) -> None:
        """Wait for the child that ended (or was killed) to exit; a kept child is left running."""
        if self.current is not None:
            self.reaped = os.wait4(self.child.pid, 0)

    def _release(self) -> None:
        """Close the pipes of a reaped child; kill and reap one that was not (leave no orphan).

        A child that ended mid-job may have left that job's processes and level directory:
        they are ended and removed here, whatever ended the child.
        """
        if self.current is not None:
            if self.reaped is None:
                self.current.discard()
            else:
                self.current.close()
            if self.done < len(self.jobs):
                processes.clean_up_after(self.child.pid, self.mark)

    def _ending_of_death(self) -> JobResult | None:
        """Return the ending of the job a dead or killed child was running; None if it left after a memout."""
        assert self.reaped is not None
        _, wstatus, usage = self.reaped
        wall = time.monotonic() - self.mark
        # The child's usage covers every job it ran; the one that ended it gets what the others did not use.
        stats = unreported(usage, self.child.reported, wall, usage.ru_maxrss / 1024.0)
        limits = self.jobs[self.done][1]
        if self.killed:
            return JobResult({}, stats, (Status.TIMEOUT, _killed_message(limits, wall)))
        if os.WIFSIGNALED(wstatus):
            return JobResult({}, stats, _signal_ending(os.WTERMSIG(wstatus), stats, limits))
        if not (os.WIFEXITED(wstatus) and os.WEXITSTATUS(wstatus) == 0 and self.done > 0):
            code = os.WEXITSTATUS(wstatus) if os.WIFEXITED(wstatus) else -1
            message = f"solver process ended without a result (exit code {code})"
            return JobResult({}, stats, (Status.ERROR, message))
        return None  # the child left cleanly after a memout; run_batch forks a new one for the rest


def _decode(line: bytes) -> JobResult:
    """Return the result of one line the child wrote about one job; an error if it is unreadable."""
    try:
        payload = json.loads(line)
    except ValueError:
        return JobResult({}, SearchStats(), (Status.ERROR, "solver process wrote an unreadable result"))
    stats = SearchStats(**payload.pop("_usage"))
    if payload.get("status") == Status.MEMOUT:
        return JobResult(payload, stats, (Status.MEMOUT, payload.get("message", "out of memory")))
    if payload.get("status") == Status.ERROR:
        return JobResult(payload, stats, (Status.ERROR, payload.get("message", "solver failed")))
    return JobResult(payload, stats, None)


def _killed_message(limits: Limits, wall: float) -> str:
    """Return the message of a job killed at its hard wall limit, or at the CPU limit's wall backstop."""
    if limits.wall_is_backstop():
        cpu = f"the CPU time limit {limits.cpu_limit:g} s"
        backstop = f"wall time backstop {limits.wall_limit():g} s of {cpu}"
        return f"{backstop} reached: killed after {wall:.1f} s"
    return f"wall time limit {limits.time_limit:g} s reached: killed at the hard limit after {wall:.1f} s"


def _signal_ending(signum: int, stats: SearchStats, limits: Limits) -> tuple[Status, str]:
    """Return the (status, message) of a child killed by signum: CPU limit, memory kill, or a crash."""
    try:
        name = signal.Signals(signum).name
    except ValueError:
        name = str(signum)
    if signum == signal.SIGXCPU:
        allowed = cpu_backstop_s(limits)
        backstop = "" if allowed is None else f", backstop {allowed:.1f} s"
        if limits.cpu_limit is not None:
            # The kernel kept the CPU limit (a native search or a step that does not read the budget).
            return (
                Status.TIMEOUT,
                f"CPU time limit {limits.cpu_limit:g} s reached ({stats.cpu_s:.1f} s CPU{backstop})",
            )
        if limits.time_limit is not None:  # the parent was stalled: the kernel kept the wall limit's backstop
            return Status.TIMEOUT, (
                f"wall time limit {limits.time_limit:g} s reached: ended by its CPU backstop "
                f"({stats.cpu_s:.1f} s CPU{backstop})"
            )
        return Status.TIMEOUT, f"the worker's own CPU rlimit reached ({stats.cpu_s:.1f} s CPU)"
    if signum == signal.SIGKILL and limits.memory_limit_mb is not None:
        return Status.MEMOUT, f"solver process killed (SIGKILL) at {stats.peak_rss_mb:.0f} MB peak RSS"
    return Status.ERROR, f"solver process died from signal {name}"
