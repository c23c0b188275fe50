"""The CPU backstop of a solver child is counted in the clock the kernel checks RLIMIT_CPU in."""

from __future__ import annotations

import json
import math
import os
import resource
import signal
import time

import pytest

from packsolve.execution.rlimits import set_rlimits
from packsolve.execution.spec import Limits

# ITIMER_PROF counts down in CPUCLOCK_PROF, the clock RLIMIT_CPU is checked in: the test's own reading.
CLOCK_S = 1e7


def _flicker(seconds: float) -> None:
    """Work a millisecond, sleep a millisecond: the kernel's tick-sampled CPU drifts from getrusage's."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        spin = time.process_time() + 0.001
        while time.process_time() < spin:
            pass
        time.sleep(0.001)


def _headroom_after_drift() -> dict[str, float]:
    """In a fresh process: drift, set the backstop, return how much CPU it leaves in the kernel's clock."""
    signal.setitimer(signal.ITIMER_PROF, CLOCK_S)
    _flicker(3.0)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    precise = usage.ru_utime + usage.ru_stime
    # A time limit whose hard limit puts getrusage's count just under a whole second: ceil adds no slack.
    time_limit = (math.ceil(precise + 1.5) - 0.01 - precise - 1.0) / 1.05
    limits = Limits(time_limit=time_limit)
    set_rlimits(limits)
    soft, _ = resource.getrlimit(resource.RLIMIT_CPU)
    kernel = CLOCK_S - signal.getitimer(signal.ITIMER_PROF)[0]
    hard = limits.hard_time()
    assert hard is not None
    return {"headroom": soft - kernel, "promised": hard + 2, "drift": kernel - precise}


def test_the_cpu_backstop_leaves_a_job_its_seconds_however_far_the_kernel_clock_drifted() -> None:
    """A kept child sleeps and wakes between thousands of tiny jobs; the kernel's CPU count runs ahead of
    getrusage's. A cap computed from getrusage left the next job a fraction of a second before SIGXCPU
    ("CPU time limit reached" at 0.3 s CPU under a 1 s limit); it must leave the hard limit plus 2 s."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 0
        try:
            os.close(read)
            os.write(write, json.dumps(_headroom_after_drift()).encode())
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read) as f:
        out = f.read()
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 and out, status
    seen = json.loads(out)
    if seen["drift"] < 0.05:
        pytest.skip(f"the kernel's CPU clock did not drift here ({seen})")
    assert seen["headroom"] >= seen["promised"] - 0.02, seen
