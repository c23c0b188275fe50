"""Waiting in tests: poll a condition until it holds or a deadline passes (the one polling loop)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(check: Callable[[], object], timeout: float, every: float = 0.2) -> bool:
    """Poll check() until it is true or timeout seconds pass; return whether it became true.

    check() is asked once more at the deadline, so a condition that holds by then counts.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(every)
    return bool(check())


def wait_for(get: Callable[[], T], timeout: float, every: float = 0.2, what: str | None = None) -> T:
    """Poll get() until it returns a truthy value, and return that value.

    After timeout seconds raise AssertionError naming what was awaited (what, else get's name) and
    the last value get() returned. An exception get() raises (an assert that the process waited on
    is still alive) ends the wait at once.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = get()
        if value:
            return value
        if time.monotonic() >= deadline:
            break
        time.sleep(every)
    name = what or getattr(get, "__qualname__", repr(get))
    raise AssertionError(f"waited {timeout} s for {name}; last value seen: {value!r}")


def stretched(seconds: float) -> float:
    """Return a bound measured on an idle machine, stretched by how loaded this one is now.

    A test may bound how soon something happens (a cancel stops a solve within seconds); on a machine
    running L runnable processes on C cores each gets about C/L of a core, so the bound is multiplied
    by the one-minute load average over the cores, never shrunk below itself.
    """
    import os

    return seconds * max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))
