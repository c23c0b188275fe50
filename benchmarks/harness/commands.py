"""The packsolve command line as a benchmark runs it: a child process, its wall and CPU seconds."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

PACKSOLVE = [sys.executable, "-m", "packsolve"]


def run_packsolve(
    args: list[str], env: dict[str, str], cwd: Path | None = None
) -> tuple[str, str, float, float]:
    """Run `packsolve ARGS` with env added to this process's; return (stdout, stderr, wall s, CPU s).

    The CPU seconds are the child's (user + system); a failing command raises RuntimeError with its stderr.
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    res = subprocess.run(
        [*PACKSOLVE, *args], env={**os.environ, **env}, cwd=cwd, capture_output=True, text=True
    )
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if res.returncode != 0:
        raise RuntimeError(f"packsolve {' '.join(args)} failed:\n{res.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return res.stdout, res.stderr, wall, cpu
