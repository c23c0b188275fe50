"""Telling someone a run is over: --notify COMMAND (summary JSON on stdin), --notify-url URL (JSON POST).

A notification never changes a run or its exit code: one that fails is a warning on stderr, which
names neither the command (it may hold a token) nor the URL's query (masked, as everywhere).
"""

from __future__ import annotations

import json
import shlex
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

import click

from packsolve.masking import mask_url

# A notification must not hold the end of a night: a command gets this long, a POST this many tries.
COMMAND_TIMEOUT_S = 60.0
POST_TIMEOUT_S = 5.0
POST_TRIES = 3
POST_BACKOFF_S = 1.0


def notify_options(fn: Callable) -> Callable:
    fn = click.option(
        "--notify-url",
        default=None,
        metavar="URL",
        help="When the run ends, POST its summary JSON to URL (retried; a failure is only a warning).",
    )(fn)
    return click.option(
        "--notify",
        "notify_command",
        default=None,
        metavar="COMMAND",
        help="When the run ends, run COMMAND with its summary JSON on stdin (mail, chat, a desktop note).",
    )(fn)


def notify(engine: Any, run_id: int, command: str | None, url: str | None) -> None:
    """Send the run's summary to command and url (each if given); warn on stderr about any that failed."""
    if not command and not url:
        return
    from packsolve.cli.options import err_console
    from packsolve.db.runs import resolve_run
    from packsolve.db.session import session_scope
    from packsolve.report.summary import run_summary

    with session_scope(engine) as session:
        body = json.dumps(run_summary(session, resolve_run(session, run_id)), default=str).encode()
    problems = [p for p in (_run_command(command, body), _post(url, body)) if p]
    for problem in problems:
        err_console.print(f"warning: {problem}", style="yellow", highlight=False, markup=False)


def _run_command(command: str | None, body: bytes) -> str | None:
    """Run command (split as a shell would; no shell runs it) with body on stdin; return what failed."""
    if not command:
        return None
    try:
        done = subprocess.run(
            shlex.split(command), input=body, capture_output=True, timeout=COMMAND_TIMEOUT_S
        )
    except (OSError, ValueError, subprocess.TimeoutExpired) as exc:
        return f"--notify: the command could not run: {exc}"
    if done.returncode != 0:
        why = (done.stderr.decode(errors="replace").strip().splitlines() or [""])[-1]
        return f"--notify: the command exited {done.returncode}" + (f": {why}" if why else "")
    return None


def _post(url: str | None, body: bytes) -> str | None:
    """POST body as JSON to url, retried POST_TRIES times; return what failed last, or None."""
    if not url:
        return None
    if not url.startswith(("http://", "https://")):
        return f"--notify-url {mask_url(url)!r}: not an http:// or https:// URL"
    last = ""
    for attempt in range(POST_TRIES):
        if attempt:
            time.sleep(POST_BACKOFF_S * attempt)
        request = urllib.request.Request(url, body, {"Content-Type": "application/json"}, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=POST_TIMEOUT_S):  # noqa: S310 (scheme checked)
                return None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            last = str(getattr(exc, "reason", exc))
    return f"--notify-url {mask_url(url)}: not delivered after {POST_TRIES} tries ({last})"
