"""A solver child's rlimits and its own memory readings (Linux /proc; rusage where that is missing)."""

from __future__ import annotations

import contextlib
import math
import os
import resource
import signal
from dataclasses import asdict
from typing import Any

from packsolve.execution.spec import Limits
from packsolve.outcome import SearchStats


def set_rlimits(limits: Limits) -> None:
    """Cap this job's memory and CPU relative to what the child has already mapped and used.

    Only soft limits: a child running several jobs must be able to move them for
    the next one (a hard limit can never be raised again).
    """
    if limits.memory_limit_mb is not None:
        # The child starts as a copy of the worker, so the cap is on top of what is already mapped.
        cap = address_space_bytes() + limits.memory_limit_mb * 1024 * 1024
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        resource.setrlimit(
            resource.RLIMIT_AS, (cap if hard == resource.RLIM_INFINITY else min(cap, hard), hard)
        )
    allowed = cpu_backstop_s(limits)
    if allowed is not None:
        # Counted from the CPU the kernel says this child used, in the clock RLIMIT_CPU is checked in.
        cpu = math.ceil(kernel_cpu_s() + allowed)
        _, hard = resource.getrlimit(resource.RLIMIT_CPU)
        resource.setrlimit(
            resource.RLIMIT_CPU, (cpu if hard == resource.RLIM_INFINITY else min(cpu, hard), hard)
        )


def cpu_backstop_s(limits: Limits) -> float | None:
    """Return the CPU seconds after which the kernel ends a job (SIGXCPU); None without a time or CPU limit.

    Under a CPU limit it is the limit plus a grace: what stops a native search (C), which does
    not read the CPU clock, and a solver ignoring its budget. Under a wall limit alone it is a
    backstop should the parent itself be stalled: the hard limit plus 2 s.
    """
    candidates = [] if limits.time_limit is None else [limits.time_limit + limits.grace() + 2]
    hard_cpu = limits.hard_cpu()
    if hard_cpu is not None:
        candidates.append(hard_cpu)
    return min(candidates) if candidates else None


# The CPU clock's starting value: years of CPU, so it never runs out (SIGPROF would end the child).
_CPU_CLOCK_S = 1e8


def start_cpu_clock() -> None:
    """Start reading this process's CPU as RLIMIT_CPU counts it (call once, early in a solver child).

    The kernel checks RLIMIT_CPU against its tick-sampled CPU clock (CPUCLOCK_PROF), not the
    precise time getrusage reports. The two drift apart in a process that often sleeps and
    wakes (a kept solver child between thousands of tiny jobs): by seconds over a long life,
    enough that a cap computed from getrusage fired SIGXCPU a fraction of a second into a job.
    ITIMER_PROF runs in that very clock: what it has counted down is what the kernel counts.
    """
    signal.setitimer(signal.ITIMER_PROF, _CPU_CLOCK_S)


def kernel_cpu_s() -> float:
    """Return this process's CPU seconds as RLIMIT_CPU counts them (getrusage's if the clock is off)."""
    left, _ = signal.getitimer(signal.ITIMER_PROF)
    if left > 0:
        return _CPU_CLOCK_S - left
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def lift_rlimits() -> None:
    """Between batches: back to the hard limits, so reading the next batch is never capped."""
    for which in (resource.RLIMIT_AS, resource.RLIMIT_CPU):
        _, hard = resource.getrlimit(which)
        resource.setrlimit(which, (hard, hard))


def reset_peak_rss() -> None:
    """Reset the kernel's peak-RSS mark (VmHWM) so the next reading is this job's own peak."""
    with contextlib.suppress(OSError), open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def _counted(reading: Any) -> dict[str, Any]:
    """Return the figures one rusage reading counts up (CPU so far), by their SearchStats field names.

    The one place that reads a cumulative figure out of rusage: a new one is one more entry here
    (and its SearchStats field); the solver child, a program's run and a dead child's last job
    all measure through usage() and unreported().
    """
    return {"cpu_s": reading.ru_utime + reading.ru_stime}


def usage(before: Any, after: Any, wall_s: float, peak_rss_mb: float) -> SearchStats:
    """Return what was used between two rusage readings, with the wall time and peak measured otherwise."""
    start, end = _counted(before), _counted(after)
    return SearchStats(
        **{name: end[name] - start[name] for name in end}, wall_s=wall_s, peak_rss_mb=peak_rss_mb
    )


def unreported(total: Any, reported: SearchStats, wall_s: float, peak_rss_mb: float) -> SearchStats:
    """Return what a process's total rusage holds beyond what its jobs reported (never below 0)."""
    return SearchStats(
        **{name: max(0, value - getattr(reported, name)) for name, value in _counted(total).items()},
        wall_s=wall_s,
        peak_rss_mb=peak_rss_mb,
    )


def added(a: SearchStats, b: SearchStats) -> SearchStats:
    """Return a and b summed field by field (a running total of jobs' usage)."""
    return SearchStats(**{name: value + getattr(b, name) for name, value in asdict(a).items()})


def peak_rss_mb(usage: Any) -> float:
    """Return the peak RSS since the last reset in MB; the process's lifetime peak if unknown."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except (OSError, ValueError, IndexError):
        pass
    return usage.ru_maxrss / 1024.0


def current_rss_mb() -> float:
    """Return this process's resident memory in MB; 0.0 if it cannot be read."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return 0.0


def address_space_bytes() -> int:
    """Return the bytes this process has mapped (what RLIMIT_AS counts); 0 if it cannot be read."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return 0
