"""The packsolve command line run inside the test process: `invoke`, in place of run_cli where no process
boundary is under test.

A subprocess (tests.support.services.run_cli) costs an interpreter's start and every import, each
call. `invoke` runs the real click group (packsolve.cli.root.cli) through click's CliRunner and
returns what run_cli returns, a CompletedProcess with returncode, stdout and stderr (separate), so a
call site changes its name only. A command's uncaught exception gives exit code 1 and its traceback
on stderr, as `python -m packsolve` would print it.

What a command can leave behind in the process is put back after each call, so one test's call
cannot change the next test's (several tests share a pytest-xdist process):
- the environment (env is laid over ours for the call, as run_cli does), the working directory and
  sys.argv (a command records it on the runs it makes);
- the settings resolved (settings.current's cache), the puzzle kinds found (KINDS, by the settings)
  and the preparations done or failed (execution.preparing);
- the database engines opened (disposed: their connections closed, a PostgreSQL database droppable);
- the Celery apps made (closed: their broker connections) and Celery's current app;
- a forkserver (stopped before the call and after it: it holds the environment it started with,
  and each solve must start its pool processes from its own);
- the root logger's handlers and level, and the warning filters;
- the signal handlers: a handler a command leaves set is a bug of that command: restored, and the
  call fails saying which.

What stays this process's, so a call that depends on it keeps run_cli: its pid (a local run made
here records the test process, alive while the tests run: resume refuses the run as still being
solved), what a command remembers once per process (queue.brokerscan says an unreadable broker
entry once), the environment a pool process inherits when that is what a test checks, and a
service (serve, metrics, worker, a scheduler loop) whose refusal is tested: started by mistake, it
would run in the test process until the suite's timeout instead of a subprocess's.
"""

from __future__ import annotations

import inspect
import logging
import os
import signal
import subprocess
import sys
import traceback
import warnings
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from click.testing import CliRunner

# The signals whose handlers a command must leave as it found them.
WATCHED_SIGNALS = (
    signal.SIGINT,
    signal.SIGTERM,
    signal.SIGHUP,
    signal.SIGQUIT,
    signal.SIGCHLD,
    signal.SIGPIPE,
)


class LeakedState(AssertionError):
    """A command left process-wide state changed (a signal handler): a bug in the command."""


def invoke(
    *args: str, env: Mapping[str, str] | None = None, cwd: Path | str | None = None, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run `packsolve ARGS` in this process; return its exit code, stdout and stderr as run_cli does.

    env is laid over this process's environment for the call (run_cli's meaning); cwd is where it
    runs (None: here). input is what the command reads on stdin (none: an empty stdin).
    """
    from packsolve.cli.root import cli

    with _isolated(args, env or {}, cwd):
        result = _runner().invoke(cli, list(args), input=input, prog_name="packsolve", catch_exceptions=True)
    stderr = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        # As the interpreter prints an uncaught exception: a test looking for "Traceback" sees it.
        stderr += "".join(traceback.format_exception(result.exception))
    return subprocess.CompletedProcess(["packsolve", *args], result.exit_code, result.stdout, stderr)


def exported(run: str, env: Mapping[str, str]) -> list[dict[str, Any]]:
    """Return the records `packsolve export RUN --format jsonl` writes (run in this process; must succeed)."""
    import json

    out = invoke("export", run, "--format", "jsonl", env=env)
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


def _runner() -> CliRunner:
    """Return a CliRunner keeping stderr apart from stdout, capturing what is written to fds 1 and 2 too.

    click 8.4 captures at the file descriptor when asked (what a solve's processes write, as a
    subprocess's pipes would); click 8.2 keeps stderr apart by itself; click 8.1 when asked.
    """
    params = inspect.signature(CliRunner).parameters
    if "capture" in params:
        return CliRunner(capture="fd")
    if "mix_stderr" in params:
        return CliRunner(mix_stderr=False)  # type: ignore[call-arg]  # click < 8.2
    return CliRunner()


@contextmanager
def _isolated(args: tuple[str, ...], env: Mapping[str, str], cwd: Path | str | None) -> Iterator[None]:
    """Run the body in cwd, env laid over the environment, sys.argv as `python -m packsolve ARGS` has
    it, with fresh settings, kinds and console sizes; put back the process-wide state after it."""
    with ExitStack() as stack:
        stack.enter_context(_signals_kept())
        stack.enter_context(_forkserver_stopped())
        stack.enter_context(_celery_apps_closed())
        stack.enter_context(_engines_disposed())
        stack.enter_context(_logging_kept())
        stack.enter_context(warnings.catch_warnings())
        stack.enter_context(_environment(env))
        stack.enter_context(_consoles_sized())
        stack.enter_context(_caches_forgotten())
        stack.enter_context(_working_directory(cwd))
        stack.enter_context(_argv(args))
        yield


@contextmanager
def _argv(args: tuple[str, ...]) -> Iterator[None]:
    """Set sys.argv as `python -m packsolve ARGS` sets it: commands record it on the runs they make."""
    import packsolve

    before = sys.argv
    sys.argv = [str(Path(packsolve.__file__).with_name("__main__.py")), *args]
    try:
        yield
    finally:
        sys.argv = before


@contextmanager
def _working_directory(cwd: Path | str | None) -> Iterator[None]:
    before = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(before)


@contextmanager
def _environment(env: Mapping[str, str]) -> Iterator[None]:
    """Lay env over the environment; put it back as it was after (whatever the command changed)."""
    before = dict(os.environ)
    os.environ.update(env)
    try:
        yield
    finally:
        if dict(os.environ) != before:
            os.environ.clear()
            os.environ.update(before)


@contextmanager
def _consoles_sized() -> Iterator[None]:
    """Size the commands' rich consoles from the call's COLUMNS and LINES, as a new process's are.

    They are made when packsolve.cli.options is imported, and rich reads both variables then: made
    in one environment (pytest-xdist's workers set COLUMNS=80), they would ignore the call's.
    """
    from packsolve.cli import options

    consoles = (options.out_console, options.err_console)
    before = [(c._width, c._height) for c in consoles]
    columns, lines = os.environ.get("COLUMNS", ""), os.environ.get("LINES", "")
    for console in consoles:
        console._width = int(columns) if columns.isdigit() else None
        console._height = int(lines) if lines.isdigit() else None
    try:
        yield
    finally:
        for console, (width, height) in zip(consoles, before, strict=True):
            console._width, console._height = width, height


@contextmanager
def _caches_forgotten() -> Iterator[None]:
    """Forget the settings and kinds resolved, before (this call's environment) and after (the next's)."""
    _forget_caches()
    try:
        yield
    finally:
        _forget_caches()


def _forget_caches() -> None:
    from packsolve import levels, settings
    from packsolve.execution import preparing
    from packsolve.puzzles import KINDS

    settings._resolved.cache_clear()
    KINDS.refresh()
    levels.level_suffixes.cache_clear()
    # What a process remembers having prepared (or failed to, for a while): a new process starts without.
    preparing._done.clear()
    preparing._failed.clear()
    preparing._failed_at.clear()


@contextmanager
def _engines_disposed() -> Iterator[None]:
    """Dispose of the engines the call opened (get_engine keeps them for the process's life)."""
    from packsolve.db import session

    before = set(session._engines)
    try:
        yield
    finally:
        for key in set(session._engines) - before:
            session._engines.pop(key).dispose()


@contextmanager
def _celery_apps_closed() -> Iterator[None]:
    """Close the Celery apps the call made (their broker connection pools) and put back the current app."""
    state = sys.modules.get("celery._state")
    before_apps = set(map(id, state._get_active_apps())) if state is not None else set()
    before_current = (getattr(state._tls, "current_app", None), state.default_app) if state else (None, None)
    try:
        yield
    finally:
        state = sys.modules.get("celery._state")
        if state is not None:
            for app in list(state._get_active_apps()):
                if id(app) not in before_apps:
                    app.close()
            state._tls.current_app, state.default_app = before_current


@contextmanager
def _forkserver_stopped() -> Iterator[None]:
    """Run the call without a forkserver from before, and stop the one it started.

    A forkserver keeps the environment, settings and descriptors it started with: one left by a
    command run here otherwise (click's CliRunner used directly) would start this call's pool
    processes without the call's environment (a kind it names unknown there), as a new process's
    never are.
    """
    from multiprocessing import forkserver

    server: Any = forkserver._forkserver
    if server._forkserver_pid is not None:
        server._stop()
    try:
        yield
    finally:
        if server._forkserver_pid is not None:
            server._stop()


@contextmanager
def _logging_kept() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        yield
    finally:
        for handler in [h for h in root.handlers if h not in handlers]:
            root.removeHandler(handler)
            handler.close()
        root.handlers[:] = handlers
        root.setLevel(level)


@contextmanager
def _signals_kept() -> Iterator[None]:
    """Fail the call (after putting them back) if it left a signal's handler changed."""
    before = {sig: signal.getsignal(sig) for sig in WATCHED_SIGNALS}
    failed = True
    try:
        yield
        failed = False
    finally:
        after = {sig: signal.getsignal(sig) for sig in WATCHED_SIGNALS}
        changed = {sig: handler for sig, handler in after.items() if handler != before[sig]}
        for sig in changed:
            if before[sig] is not None:  # None: a handler set outside Python, which cannot be put back
                signal.signal(sig, before[sig])
        if changed and not failed:
            left = ", ".join(f"{sig.name}: {handler!r}" for sig, handler in changed.items())
            raise LeakedState(f"the command left signal handlers set ({left}); they were put back")
