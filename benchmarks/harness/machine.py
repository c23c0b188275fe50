"""The machine line of a result: CPU model, cores, load average, Python, date (UTC).

Figures on a shared two-core machine move with the others' load, so every result says
what the machine was doing when it was measured.
"""

from __future__ import annotations

import os
import platform
import time
from pathlib import Path


def cpu_model() -> str:
    """Return the CPU's model name from /proc/cpuinfo, or the platform's machine type elsewhere."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
        return next(ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or platform.machine() or "unknown CPU"


def load() -> str:
    """Return the one-minute load average as "load 1.3"."""
    return f"load {os.getloadavg()[0]:.1f}"


def utc_now() -> str:
    """Return the date and time as results print it: "2026-12-01 16:50 UTC"."""
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())


def machine(used: str = "") -> str:
    """Return "CPU model, N cores[ (used)], Python X"; used: how many of them ran."""
    cores = f"{os.cpu_count()} cores" + (f" ({used})" if used else "")
    return f"{cpu_model()}, {cores}, Python {platform.python_version()}"


def machine_line(used: str = "") -> str:
    """Return the machine, its load and the date: "CPU model, N cores, Python X, load L, DATE UTC"."""
    return f"{machine(used)}, {load()}, {utc_now()}"


def shown_path(path: os.PathLike[str] | str) -> str:
    """Return path as a result prints it: relative to the working directory, never this machine's layout."""
    return os.path.relpath(path)
