"""Run a packsolve command (rerun, resume) in a process of its own and learn the run it started."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from packsolve.errors import PlanError, ReportError
from packsolve.settings import child_environment

# How long a command may take to say which run it started (planning a big rerun reads its levels).
START_TIMEOUT_S = 120.0


def _reap(process: subprocess.Popen[bytes], log: Path) -> None:
    """Wait for the command to end (no zombie is left), then remove its log."""
    process.wait()
    log.unlink(missing_ok=True)


def _start(state: Any, args: list[str]) -> tuple[subprocess.Popen[bytes], Path]:
    given = {"database_url": state.engine.url.render_as_string(hide_password=False)}
    if state.broker_url:
        given["broker_url"] = state.broker_url
    env = child_environment(**given)
    fd, name = tempfile.mkstemp(prefix="packsolve-serve-", suffix=".log")
    with os.fdopen(fd, "wb") as log:
        # Its own session: the run goes on when the dashboard stops, as one started from a shell would.
        process = subprocess.Popen(
            [sys.executable, "-m", "packsolve", *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            env=env,
            start_new_session=True,
        )
    return process, Path(name)


def _wait_for(process: subprocess.Popen[bytes], log: Path, pattern: re.Pattern[str]) -> str:
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        text = log.read_text(encoding="utf-8", errors="replace")
        found = pattern.search(text)
        if found:
            return found.group(1)
        code = process.poll()
        if code is not None:
            text = log.read_text(encoding="utf-8", errors="replace")
            if pattern.search(text):
                continue
            lines = [line.strip() for line in text.splitlines() if line.strip()]
            errors = [line.removeprefix("Error: ") for line in lines if line.startswith("Error: ")]
            why = (errors or lines or [f"the command ended with status {code} and said nothing"])[-1]
            raise (PlanError if code else ReportError)(why)
        if time.monotonic() > deadline:
            raise PlanError(f"the command did not say which run it started within {START_TIMEOUT_S:g} s")
        time.sleep(0.05)


async def run_command(state: Any, args: list[str], started: str) -> str:
    """Run `packsolve ARGS` on the dashboard's database; return the run its stderr names (started's group).

    The command goes on in the background. Its one-line error, if it fails
    before naming a run, is raised as a PlanError (the page shows it).
    """
    process, log = _start(state, args)
    try:
        return await asyncio.to_thread(_wait_for, process, log, re.compile(started, re.MULTILINE))
    finally:
        threading.Thread(target=_reap, args=(process, log), daemon=True).start()
