"""The parent side: following a solver child through its jobs, and every way a job can end.

run_batch runs a batch of jobs in one solver child after another. The kept child (one
per process, forked once and kept between batches) takes them if it is idle; otherwise a
fresh child is forked with the jobs in its memory. The parent waits for each job's line
up to the job's hard limit, kills the child there, and turns a death into the ending of
the job that was running; a fresh child takes the jobs after it.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable, Generator, Sequence
from typing import Any, NamedTuple

from packsolve.execution import processes, wire
from packsolve.execution.spec import Job, Limits
from packsolve.outcome import SearchStats, Status

# A child whose results were declined (started returned False) is kept if it finishes within this.
ABANDON_GRACE_S = 0.1


class JobResult(NamedTuple):
    """What the parent learned about one job: the child's payload, the job's usage, a forced ending."""

    payload: dict[str, Any]
    stats: SearchStats
    forced: tuple[Status, str] | None  # (status, message) when the solver's own answer does not stand


class Abandoned(Exception):
    """The caller declined the results of the jobs it handed over (see run_batch)."""


def run_batch(
    jobs: Sequence[Job], started: Callable[[], bool] | None = None, started_after: float = 0.0
) -> Generator[JobResult, None, None]:
    """Yield each job's result, in order, running the jobs after a child's death in a fresh one.

    started, if given, is called once the first child has the jobs, before any
    result is awaited; with started_after > 0, only if the first job has not
    ended within that many seconds (else never). If it returns False the results
    are not wanted: nothing is yielded, Abandoned is raised, and the child is kept
    only if it finishes within ABANDON_GRACE_S (else killed).
    """
    start = 0
    while start < len(jobs):
        child = _run_child(jobs[start:], started, started_after)
        started = None
        try:
            for result in child:
                start += 1
                yield result
        finally:
            child.close()


def _run_child(
    jobs: Sequence[Job], started: Callable[[], bool] | None, started_after: float
) -> Generator[JobResult, None, None]:
    """Run jobs in one solver child; yield each job's result as it arrives, stopping after a death or kill.

    The kept child takes the jobs through its pipe if it can; otherwise (none kept,
    it died while idle, a job cannot be pickled or unpickled, another thread's
    batch is using it) a fresh child is forked with the jobs in its memory.
    """
    with processes.kept_child_turn() as own:
        child = processes.hand_over(jobs) if own else None
        yield from _follow(child or processes.fork(jobs, keep=own), jobs, own, started, started_after)


def _follow(
    child: processes.Child,
    jobs: Sequence[Job],
    keep: bool,
    started: Callable[[], bool] | None = None,
    started_after: float = 0.0,
) -> Generator[JobResult, None, None]:
    """Yield the results of the jobs a child runs; keep it if it ends the batch healthy.

    started, if given, is called once the child has the jobs, before any result is
    awaited; with started_after > 0, only if the first job has not ended within
    that many seconds (else never). If it returns False the results are not
    wanted: nothing is yielded, Abandoned is raised, and the child is kept only
    if it finishes within ABANDON_GRACE_S (else killed).
    """
    lines = wire.Lines(child.from_child)
    mark = time.monotonic()  # when the job now running started (as far as the parent knows)
    started_by = mark + started_after  # when started is due, if it still is
    done = 0
    killed = False
    reaped: tuple[int, int, Any] | None = None
    current: processes.Child | None = child  # None once handed back as the kept child
    abandon_by = None
    try:
        while done < len(jobs):
            # Inside the try: if started raises (its database is gone), the child must not be left.
            if started is not None and time.monotonic() >= started_by:
                wanted, started = started(), None
                if not wanted:
                    abandon_by = time.monotonic() + ABANDON_GRACE_S
            now = time.monotonic()  # after started, which may have waited on its database
            hard = jobs[done][1].hard_time()
            if abandon_by is not None:
                wait: float | None = max(0.0, abandon_by - now)
            else:
                wait = None if hard is None else max(0.0, mark + hard - now)
            if started is not None:
                wait = started_by - now if wait is None else min(wait, started_by - now)
            line = lines.next(wait)
            if line is False:
                if started is not None and (hard is None or time.monotonic() < mark + hard):
                    continue  # only started's time came: call it, then wait on
                os.kill(child.pid, signal.SIGKILL)
                killed = True
                break
            if line is None:
                break
            if done == 0 and line == wire.REFUSED:  # the kept child could not unpickle them: fork afresh
                child.discard()
                child = current = processes.fork(jobs, keep)
                lines = wire.Lines(child.from_child)
                mark = time.monotonic()
                continue
            result = _decode(line)
            started = None  # the first job ended before started was due: it never is
            # The next job's clock starts when the parent reads this line, not when the child
            # wrote it: a child blocked on a full pipe (parent busy writing results) has not
            # started the next job yet. Lenient by the parent's delay; RLIMIT_CPU still holds.
            mark = time.monotonic()
            child.reported_cpu += result.stats.cpu_s
            done += 1
            leaving = bool(result.payload.pop("_retire", False)) or (
                result.forced is not None and result.forced[0] is Status.MEMOUT
            )
            if done == len(jobs) and keep and not leaving:
                # idle now: the next batch's, before the last yield
                processes.keep_for_next_batch(child)
                current = None
            if abandon_by is None:
                yield result
            if leaving:
                break  # after a MemoryError (or grown too big) the child leaves; the rest get a fresh one
        if current is not None:
            reaped = os.wait4(child.pid, 0)
    finally:
        if current is not None:
            if reaped is None:  # interrupted (Celery soft limit, Ctrl-C, consumer gone): leave no orphan
                current.discard()
            else:
                current.close()
    if abandon_by is not None:
        raise Abandoned
    if done == len(jobs):
        return
    assert reaped is not None
    _, wstatus, usage = reaped
    wall = time.monotonic() - mark
    # The child's usage covers every job it ran; the one that ended it gets what the others did not use.
    cpu = max(0.0, usage.ru_utime + usage.ru_stime - child.reported_cpu)
    stats = SearchStats(0, wall, cpu, usage.ru_maxrss / 1024.0)
    limits = jobs[done][1]
    if killed:
        yield JobResult({}, stats, (Status.TIMEOUT, f"killed at the hard limit after {wall:.1f} s"))
    elif os.WIFSIGNALED(wstatus):
        yield JobResult({}, stats, _signal_ending(os.WTERMSIG(wstatus), stats, limits))
    elif not (os.WIFEXITED(wstatus) and os.WEXITSTATUS(wstatus) == 0 and done > 0):
        code = os.WEXITSTATUS(wstatus) if os.WIFEXITED(wstatus) else -1
        message = f"solver process ended without a result (exit code {code})"
        yield JobResult({}, stats, (Status.ERROR, message))
    # else: the child left cleanly after a memout; run_batch forks a new one for the rest.


def _decode(line: bytes) -> JobResult:
    """Return the result of one line the child wrote about one job; an error if it is unreadable."""
    try:
        payload = json.loads(line)
    except ValueError:
        return JobResult({}, SearchStats(), (Status.ERROR, "solver process wrote an unreadable result"))
    measured = payload.pop("_usage")
    stats = SearchStats(0, measured["wall"], measured["cpu"], measured["rss"])
    if payload.get("status") == "memout":
        return JobResult(payload, stats, (Status.MEMOUT, payload.get("message", "out of memory")))
    if payload.get("status") == "error":
        return JobResult(payload, stats, (Status.ERROR, payload.get("message", "solver failed")))
    return JobResult(payload, stats, None)


def _signal_ending(signum: int, stats: SearchStats, limits: Limits) -> tuple[Status, str]:
    """Return the (status, message) of a child killed by signum: CPU limit, memory kill, or a crash."""
    try:
        name = signal.Signals(signum).name
    except ValueError:
        name = str(signum)
    if signum == signal.SIGXCPU:
        return Status.TIMEOUT, f"CPU time limit reached ({stats.cpu_s:.1f} s CPU)"
    if signum == signal.SIGKILL and limits.memory_limit_mb is not None:
        return Status.MEMOUT, f"solver process killed (SIGKILL) at {stats.peak_rss_mb:.0f} MB peak RSS"
    return Status.ERROR, f"solver process died from signal {name}"
