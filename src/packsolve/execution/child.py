"""What runs in a forked solver child: its jobs one by one, each under its limits, one JSON line each."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import time
import traceback
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any, NoReturn

from packsolve.budget import Budget
from packsolve.execution import cgroups, wire
from packsolve.execution.rlimits import (
    current_rss_mb,
    lift_rlimits,
    peak_rss_mb,
    reset_peak_rss,
    set_rlimits,
    start_cpu_clock,
    usage,
)
from packsolve.execution.spec import Job, Limits, Work
from packsolve.outcome import Status

# A solver child is kept after its batch for the next one: forking a process the size of a
# worker costs milliseconds, far more than a tiny attempt. It leaves instead when its memory
# grew by this much, so one big attempt's heap does not inflate every later attempt's peak RSS.
RETIRE_GROWTH_MB = 128
# A job's cgroup holds a built-in solver's new memory to this multiple of the memory limit plus this
# much: RLIMIT_AS (address space, which exceeds what is resident) should stop it first, gracefully.
GROUP_MEMORY_FACTOR = 1.25
GROUP_MEMORY_SLACK_MB = 64


def serve(jobs: Sequence[Job], recv_fd: int, send_fd: int, parent: int) -> NoReturn:
    """Run jobs, then each batch read from recv_fd (none if recv_fd < 0); one line per job to send_fd.

    Never returns: exits without cleanup, with code 70 if anything escaped a job.
    """
    code = 0
    try:
        _serve(jobs, recv_fd, send_fd, parent)
        cgroups.release()
    except BaseException:
        code = 70
    finally:
        os._exit(code)


def _serve(jobs: Sequence[Job], recv_fd: int, send_fd: int, parent: int) -> None:
    """Run each job under its limits and write its line; return when the child should leave."""
    # The parent decides about interrupts; a terminal's Ctrl-C must not garble the pipe.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    # A long-lived child must not hold the worker's sockets and pipes open (database
    # connections, Celery's pipes): their owner's close would not reach the other end.
    _close_fds_except({0, 1, 2, recv_fd, send_fd})
    _die_with_parent(parent)
    start_cpu_clock()
    baseline = current_rss_mb()
    while True:
        for i, (work, limits) in enumerate(jobs):
            payload = run_job(work, limits)
            leaving = payload["status"] == Status.MEMOUT  # after a MemoryError the heap is suspect
            if recv_fd >= 0 and i == len(jobs) - 1 and not leaving:
                leaving = payload["_retire"] = current_rss_mb() > baseline + RETIRE_GROWTH_MB
            wire.write_all(send_fd, encode(payload, limits) + b"\n")
            if leaving:
                return
        if recv_fd < 0:
            return
        lift_rlimits()
        try:
            more = wire.receive_batch(recv_fd)
        except wire.BatchRefused:  # e.g. a solver defined after this child was forked
            wire.write_all(send_fd, wire.REFUSED + b"\n")  # the parent forks afresh
            return
        if more is None:
            return
        wire.write_all(send_fd, wire.TAKEN + b"\n")
        jobs = more


def run_job(work: Work, limits: Limits) -> dict[str, Any]:
    """Run one job under its limits, in a cgroup of its own where the machine allows it (cgroups.py);
    return its payload with its own usage (an exception becomes one)."""
    with cgroups.job_group(_group_memory_mb(limits)) as group:
        payload = _run_job(work, limits)
        if group is not None and payload["_usage"]["wall_s"] > 0 and not payload.pop("_own_tree", False):
            # The kernel's account of the job's CPU (a built-in solver's: this process while in the group).
            payload["_usage"]["cpu_s"] = group.cpu_s()
    return payload


def _group_memory_mb(limits: Limits) -> float | None:
    """Return the memory limit of a job's cgroup: a backstop above the memory limit a built-in solver
    meets first as a MemoryError (RLIMIT_AS); an external program's is set exactly when it starts."""
    if limits.memory_limit_mb is None:
        return None
    return limits.memory_limit_mb * GROUP_MEMORY_FACTOR + GROUP_MEMORY_SLACK_MB


def _run_job(work: Work, limits: Limits) -> dict[str, Any]:
    """Run one job under its limits; return its payload with its own usage (an exception becomes one)."""
    set_rlimits(limits)
    reset_peak_rss()
    started = time.monotonic()
    before = resource.getrusage(resource.RUSAGE_SELF)
    budget = Budget(limits.time_limit, limits.node_limit, limits.cpu_limit)
    measured = None
    try:
        out = work(budget)
        payload = {
            "status": out.status.value,
            "solution": out.solution,
            "nodes": out.stats.nodes or budget.nodes,
            "message": out.message,
        }
        if out.resume is not None:  # a best-of-all part that searched its window (only then)
            payload["resume"] = out.resume
        # The solver's own output, as kept (only when there is some: most lines carry none).
        for stream in ("stdout", "stderr"):
            if getattr(out, stream):
                payload[stream] = getattr(out, stream)
        # An external program's job measures the program's own tree (this child only watched it).
        measured = out.stats if out.stats.wall_s > 0 else None
    except MemoryError:
        payload = {"status": Status.MEMOUT.value, "message": _memout_message(limits)}
    except RecursionError as exc:
        payload = {"status": Status.ERROR.value, "message": f"RecursionError: {exc} (search went too deep)"}
    except Exception as exc:
        payload = {"status": Status.ERROR.value, "message": _describe(exc)}
    after = resource.getrusage(resource.RUSAGE_SELF)
    end = time.monotonic()
    stats = usage(before, after, end - started, peak_rss_mb(after)) if measured is None else measured
    if measured is not None:
        payload["_own_tree"] = True  # measured by the program's run (spawn.py), its group's if it had one
    # Every field of the stats, read back as SearchStats(**...) by the parent; nodes go in the payload.
    payload["_usage"] = {**asdict(stats), "nodes": 0}
    return payload


def encode(payload: dict[str, Any], limits: Limits) -> bytes:
    """Return the job's line as JSON; a memout or error line if the payload cannot be encoded."""
    usage = payload["_usage"]
    try:
        return json.dumps(payload).encode()
    except MemoryError:
        return json.dumps(
            {"status": Status.MEMOUT.value, "message": _memout_message(limits), "_usage": usage}
        ).encode()
    except (TypeError, ValueError) as exc:
        return json.dumps(
            {"status": Status.ERROR.value, "message": f"solution is not JSON: {exc}", "_usage": usage}
        ).encode()


def _close_fds_except(keep: set[int]) -> None:
    """Close every file descriptor but keep; close none if they cannot be listed (no /proc)."""
    try:
        fds = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        return
    for fd in fds:
        if fd not in keep:
            with contextlib.suppress(OSError):
                os.close(fd)


def _die_with_parent(parent: int) -> None:
    """Ask Linux to kill this child when the process that forked it dies; exit if it already has.

    A kept child stuck in a solver would otherwise outlive a worker killed -9. Where
    the request is not available, end of file on the pipe still ends an idle child.
    """
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # it died before the request took effect
        os._exit(0)


def _memout_message(limits: Limits) -> str:
    """Return the message of a memout, naming the memory limit if there is one."""
    if limits.memory_limit_mb is None:
        return "out of memory"
    return f"memory limit of {limits.memory_limit_mb} MB reached"


def _describe(exc: BaseException) -> str:
    """Return 'Type: message' and where it was raised, short enough for a table cell."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" (at {os.path.basename(frames[-1].filename)}:{frames[-1].lineno})" if frames else ""
    return f"{type(exc).__name__}: {exc}{where}"[:2000]
