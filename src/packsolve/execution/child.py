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
from typing import Any, NoReturn

from packsolve.budget import Budget
from packsolve.execution import wire
from packsolve.execution.rlimits import (
    current_rss_mb,
    lift_rlimits,
    peak_rss_mb,
    reset_peak_rss,
    set_rlimits,
    start_cpu_clock,
)
from packsolve.execution.spec import Job, Limits, Work

# A solver child is kept after its batch for the next one: forking a process the size of a
# worker costs milliseconds, far more than a tiny attempt. It leaves instead when its memory
# grew by this much, so one big attempt's heap does not inflate every later attempt's peak RSS.
RETIRE_GROWTH_MB = 128


def serve(jobs: Sequence[Job], recv_fd: int, send_fd: int, parent: int) -> NoReturn:
    """Run jobs, then each batch read from recv_fd (none if recv_fd < 0); one line per job to send_fd.

    Never returns: exits without cleanup, with code 70 if anything escaped a job.
    """
    code = 0
    try:
        _serve(jobs, recv_fd, send_fd, parent)
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
            leaving = payload["status"] == "memout"  # after a MemoryError the heap is suspect
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
        jobs = more


def run_job(work: Work, limits: Limits) -> dict[str, Any]:
    """Run one job under its limits; return its payload with its own usage (an exception becomes one)."""
    set_rlimits(limits)
    reset_peak_rss()
    started = time.monotonic()
    before = resource.getrusage(resource.RUSAGE_SELF)
    budget = Budget(limits.time_limit, limits.node_limit)
    measured = None
    try:
        out = work(budget)
        payload = {
            "status": out.status.value,
            "solution": out.solution,
            "nodes": out.stats.nodes or budget.nodes,
            "message": out.message,
        }
        # An external program's job measures the program's own tree (this child only watched it).
        measured = out.stats if out.stats.wall_s > 0 else None
    except MemoryError:
        payload = {"status": "memout", "message": _memout_message(limits)}
    except RecursionError as exc:
        payload = {"status": "error", "message": f"RecursionError: {exc} (search went too deep)"}
    except Exception as exc:
        payload = {"status": "error", "message": _describe(exc)}
    after = resource.getrusage(resource.RUSAGE_SELF)
    end = time.monotonic()
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    payload["_usage"] = {"wall": end - started, "cpu": cpu, "rss": peak_rss_mb(after)}
    if measured is not None:
        payload["_usage"] = {"wall": measured.wall_s, "cpu": measured.cpu_s, "rss": measured.peak_rss_mb}
    return payload


def encode(payload: dict[str, Any], limits: Limits) -> bytes:
    """Return the job's line as JSON; a memout or error line if the payload cannot be encoded."""
    usage = payload["_usage"]
    try:
        return json.dumps(payload).encode()
    except MemoryError:
        return json.dumps({"status": "memout", "message": _memout_message(limits), "_usage": usage}).encode()
    except (TypeError, ValueError) as exc:
        return json.dumps(
            {"status": "error", "message": f"solution is not JSON: {exc}", "_usage": usage}
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
