"""Telling someone a run is over: --notify COMMAND (summary JSON on stdin), --notify-url URL (JSON POST).

Both are checked when given (a URL's form, a command's program), before any work; --notify-test sends
a test and exits. A notification never changes a run or its exit code: one that fails is a warning on
stderr, which names neither the command (it may hold a token) nor the URL's query (masked, as everywhere).
"""

from __future__ import annotations

import functools
import json
import shlex
import shutil
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

import click

from packsolve.errors import OptionError, UsageError
from packsolve.masking import mask_url

# A notification must not hold the end of a night: a command gets this long, a POST this many tries.
COMMAND_TIMEOUT_S = 60.0
POST_TIMEOUT_S = 5.0
POST_TRIES = 3
POST_BACKOFF_S = 1.0


def notify_options(fn: Callable) -> Callable:
    """Add --notify and --notify-url (checked when given, before any work) and --notify-test to a command."""

    @functools.wraps(fn)
    def command(*args: Any, notify_test: bool, **kwargs: Any) -> Any:
        if notify_test:
            _send_test(kwargs.get("notify_command"), kwargs.get("notify_url"))
        return fn(*args, **kwargs)

    command = click.option(
        "--notify-test",
        is_flag=True,
        help="Send a test notification to --notify / --notify-url and exit (1 if one failed); nothing runs.",
    )(command)
    command = click.option(
        "--notify-url",
        default=None,
        metavar="URL",
        callback=_check_url,
        help="When the run ends, POST its summary JSON to URL (retried; a failure is only a warning).",
    )(command)
    return click.option(
        "--notify",
        "notify_command",
        default=None,
        metavar="COMMAND",
        callback=_check_command,
        help="When the run ends, run COMMAND with its summary JSON on stdin (mail, chat, a desktop note).",
    )(command)


def _check_url(_ctx: click.Context, _param: click.Parameter, url: str | None) -> str | None:
    """Refuse a --notify-url that is no http(s) URL with a host: at the start, not after a night's run."""
    if url is None:
        return None
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise OptionError("--notify-url", f"{url!r} is not an http:// or https:// URL with a host")
    return url


def _check_command(_ctx: click.Context, _param: click.Parameter, command: str | None) -> str | None:
    """Refuse a --notify COMMAND that cannot be split or whose program is not found, at the start."""
    if command is None:
        return None
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise OptionError("--notify", f"{command!r} cannot be split as a shell would: {exc}") from None
    if not argv:
        raise OptionError("--notify", "an empty command")
    if shutil.which(argv[0]) is None:
        raise OptionError("--notify", f"{argv[0]!r} is not an executable program (not found on PATH)")
    return command


def _send_test(command: str | None, url: str | None) -> None:
    """Send a test notification to command and url; exit 0 if each was delivered, 1 if one failed."""
    from packsolve.cli.options import err_console

    if not command and not url:
        raise UsageError("--notify-test: give --notify COMMAND and/or --notify-url URL to test")
    body = json.dumps({"test": True, "message": "packsolve notification test"}).encode()
    problems = [p for p in (_run_command(command, body), _post(url, body)) if p]
    for problem in problems:
        err_console.print(f"error: {problem}", style="red", highlight=False, markup=False)
    sent = [f"--notify `{command}`"] * bool(command) + [f"--notify-url {url}"] * bool(url)
    if not problems:
        err_console.print(f"test notification sent: {', '.join(sent)}", highlight=False, markup=False)
    raise SystemExit(1 if problems else 0)


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
