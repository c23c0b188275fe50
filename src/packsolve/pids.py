"""Whether a process lives: the one check, by its pid, on this machine."""

from __future__ import annotations

import os


def pid_alive(pid: int) -> bool:
    """Return whether a process with this pid exists here (one of another user counts); False if none.

    A zombie its parent has not reaped yet still exists; a pid the system reused names the new process.
    """
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
