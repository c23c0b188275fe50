"""The dashboard's rerun and resume call packsolve's own functions: the run id comes back as a value.

A real `packsolve serve`, real runs, a real Redis and `packsolve worker` for distributed ones. Every
process the dashboard starts is watched (psutil, its children): a distributed action starts none, a
local one only the detached `packsolve resume RUN --quiet` of the run whose page the action goes to.
"""

from __future__ import annotations

import re
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from html import unescape
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import psutil
import pytest
from sqlalchemy import select

from packsolve.db.models import Run
from packsolve.db.runs import status_counts
from packsolve.db.session import get_engine, session_scope
from packsolve.runstate import RunMode
from tests.e2e.test_dashboard_security import csrf_of
from tests.support.dashboard import Served, serving
from tests.support.inprocess import invoke
from tests.support.report_runs import Planned, build_run, strip_level
from tests.support.services import Worker, free_port, wait_for_run

pytestmark = [pytest.mark.slow]
LEVELS = 4


def _packsolve_argv(cmdline: list[str]) -> tuple[str, ...] | None:
    """Return the packsolve arguments of a `python -m packsolve ...` command line, None for another one."""
    if "-m" in cmdline:
        at = cmdline.index("-m")
        if cmdline[at + 1 : at + 2] == ["packsolve"]:
            return tuple(cmdline[at + 2 :])
    return None


class Started:
    """The packsolve commands a process ran meanwhile, and the processes it started itself (pid: argv)."""

    def __init__(self) -> None:
        self.commands: set[tuple[str, ...]] = set()
        self.direct: dict[int, tuple[str, ...]] = {}


@contextmanager
def started_by(process: Any) -> Iterator[Started]:
    """Yield what the process (and what it starts) runs meanwhile, watched every 10 ms."""
    seen = Started()
    done = threading.Event()
    root = psutil.Process(process.pid)
    # A child forked but not yet exec'd shows the server's own command line for a moment: a command
    # started only if it keeps it (a fork doing the server's work) for over 2 s.
    own = root.cmdline()
    forked: dict[int, float] = {}

    def watch() -> None:
        while not done.is_set():
            for child in root.children(recursive=True):
                try:
                    cmdline = child.cmdline()
                    argv = _packsolve_argv(cmdline)
                    now = time.monotonic()
                    if cmdline == own and now - forked.setdefault(child.pid, now) < 2:
                        argv = None
                    parent = child.ppid()
                except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
                    continue
                if argv is not None:
                    seen.commands.add(argv)
                    if parent == root.pid:
                        seen.direct[child.pid] = argv
            time.sleep(0.01)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield seen
    finally:
        done.set()
        watcher.join(5)


def error_line(body: str) -> str:
    """Return the one-line message of the dashboard's error page."""
    found = re.search(r'<p class="error" id="error-message">(.*?)</p>', body, re.DOTALL)
    assert found, body[:500]
    message = unescape(found.group(1))
    assert "\n" not in message and "Traceback" not in body, message
    return message


def runs_in(url: str) -> list[tuple[int, int | None, str]]:
    """Return every run's id, parent and mode."""
    with session_scope(get_engine(url)) as session:
        return [(r.id, r.parent_id, r.mode) for r in session.scalars(select(Run).order_by(Run.id))]


def failing(url: str, mode: str = "local") -> int:
    """Return a finished run whose strip levels all timed out (plain solves them at once, given time)."""
    planned = [Planned(strip_level(i), "timeout", 0.5, message="time limit reached") for i in range(LEVELS)]
    return build_run(url, planned, time_limit=0.5, mode=mode)


def pending(url: str, mode: str) -> int:
    """Return a run none of whose levels has a result: a local one cancelled, a distributed one unsent."""
    run_id = build_run(url, [Planned(strip_level(i), None) for i in range(LEVELS)], mode=mode)
    if mode == "local":
        out = invoke("cancel", str(run_id), env={"PACKSOLVE_DATABASE_URL": url})
        assert out.returncode == 0, out.stderr
    return run_id


def act(served: Served, path: str, fields: dict[str, str], token: str | None = None) -> tuple[int, str]:
    """POST the action with the CSRF token (None: the run's page's); return its status and where it
    redirects (its Location), else its body."""
    token = token or csrf_of(served, re.sub(r"/(rerun|resume)$", "", path))
    body = urlencode({"csrf": token, **fields}).encode()
    request = urllib.request.Request(
        served.url + path.lstrip("/"),
        data=body,
        headers={"Content-Type": "application/x-www-form-urlencoded"},
        method="POST",
    )

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any) -> None:
            return None

    try:
        with urllib.request.build_opener(NoRedirect).open(request, timeout=120) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("Location") or exc.read().decode()


def child_of(where: str) -> int:
    """Return the run of a run page's path."""
    found = re.fullmatch(r"/runs/(\d+)", where)
    assert found, where
    return int(found.group(1))


def solved(url: str, run_id: int) -> int:
    with session_scope(get_engine(url)) as session:
        return status_counts(session, run_id).get("solved", 0)


def test_a_local_group_rerun_from_the_page_goes_to_the_run_it_made_whose_solve_alone_is_detached(
    sqlite_url: str, tmp_path: Path
) -> None:
    parent = failing(sqlite_url)
    with serving(sqlite_url, log_dir=tmp_path) as served, started_by(served.process) as seen:
        fields = {"status": "timeout", "heuristic": "plain", "time_limit": "10s"}
        code, where = act(served, f"runs/{parent}/rerun", fields)
        assert code == 303, where
        child = child_of(where)
        assert runs_in(sqlite_url) == [(parent, None, RunMode.LOCAL), (child, parent, RunMode.LOCAL)]
        wait_for_run(sqlite_url, child)
        assert served.get(f"runs/{child}")[0] == 200
    assert solved(sqlite_url, child) == LEVELS
    # Nothing but the child's own solve was started, by the command that resumes it.
    assert seen.commands == {("resume", str(child), "--quiet")}, seen.commands


def test_resume_of_a_cancelled_local_run_from_its_page_solves_the_rest_into_it(
    sqlite_url: str, tmp_path: Path
) -> None:
    run_id = pending(sqlite_url, "local")
    with serving(sqlite_url, log_dir=tmp_path) as served, started_by(served.process) as seen:
        code, body = served.get(f"runs/{run_id}")
        assert code == 200 and 'id="resume"' in body  # the page offers it: the run was cancelled
        code, where = act(served, f"runs/{run_id}/resume", {})
        assert (code, where) == (303, f"/runs/{run_id}")
        wait_for_run(sqlite_url, run_id)
        # Nothing left: the second resume says so in one line, and starts nothing.
        code, body = act(served, f"runs/{run_id}/resume", {})
        assert code == 400 and error_line(body).endswith("nothing to resume"), body[:300]
    assert solved(sqlite_url, run_id) == LEVELS
    assert [r[0] for r in runs_in(sqlite_url)] == [run_id]
    assert seen.commands == {("resume", str(run_id), "--quiet")}, seen.commands


def test_distributed_rerun_and_resume_send_their_tasks_from_the_dashboard_itself(
    pg_url: str, broker: str, start_worker: Callable[..., Worker], tmp_path: Path
) -> None:
    parent = failing(pg_url, "distributed")
    unsent = pending(pg_url, "distributed")
    start_worker(broker, pg_url)
    env = {"PACKSOLVE_BROKER_URL": broker}
    with serving(pg_url, env=env, log_dir=tmp_path) as served, started_by(served.process) as seen:
        fields = {"status": "timeout", "heuristic": "plain", "time_limit": "10"}
        code, where = act(served, f"runs/{parent}/rerun", fields)
        assert code == 303, where
        child = child_of(where)
        assert (child, parent, RunMode.DISTRIBUTED) in runs_in(pg_url)
        code, where = act(served, f"runs/{unsent}/resume", {})
        assert (code, where) == (303, f"/runs/{unsent}")
        wait_for_run(pg_url, child)
        wait_for_run(pg_url, unsent)
    assert (solved(pg_url, child), solved(pg_url, unsent)) == (LEVELS, LEVELS)
    assert seen.commands == set(), seen.commands  # no process at all: the tasks were sent in-process


def test_an_action_that_cannot_work_is_one_line_with_its_status_and_makes_nothing(
    sqlite_url: str, tmp_path: Path
) -> None:
    local = failing(sqlite_url)
    distributed = failing(sqlite_url, "distributed")
    unsent = pending(sqlite_url, "distributed")
    before = runs_in(sqlite_url)
    nowhere = f"redis://127.0.0.1:{free_port()}/0"  # no broker listens there
    with (
        serving(sqlite_url, env={"PACKSOLVE_BROKER_URL": nowhere}, log_dir=tmp_path) as served,
        started_by(served.process) as seen,
    ):
        code, body = act(served, f"runs/{local}/rerun", {"status": "wrong"})
        assert code == 400 and error_line(body) == f"run {local} has no attempt with status wrong", body[:300]
        code, body = act(served, f"runs/{local}/rerun", {"status": "timeout", "time_limit": "soon"})
        assert code == 400 and "'soon' is not a duration" in error_line(body), body[:300]
        for path in (f"runs/{distributed}/rerun", f"runs/{unsent}/resume"):
            code, body = act(served, path, {"status": "timeout"})
            message = error_line(body)
            assert code == 503 and message.startswith(f"cannot reach the broker at {nowhere}"), (
                path,
                message,
            )
        assert served.process.poll() is None
    assert runs_in(sqlite_url) == before
    assert seen.commands == set(), seen.commands


def test_two_resumes_of_a_run_at_once_start_one_solve_and_the_other_says_why_not(
    sqlite_url: str, tmp_path: Path
) -> None:
    run_id = pending(sqlite_url, "local")
    with serving(sqlite_url, log_dir=tmp_path) as served, started_by(served.process) as seen:
        token = csrf_of(served, f"runs/{run_id}")
        answers: list[tuple[int, str]] = []
        both = [
            threading.Thread(target=lambda: answers.append(act(served, f"runs/{run_id}/resume", {}, token)))
            for _ in range(2)
        ]
        for t in both:
            t.start()
        for t in both:
            t.join(180)
        wait_for_run(sqlite_url, run_id)
    assert sorted(code for code, _ in answers) == [303, 400], answers
    refused = error_line(next(body for code, body in answers if code == 400))
    assert any(why in refused for why in ("already", "still being solved", "nothing to resume")), refused
    assert list(seen.direct.values()) == [("resume", str(run_id), "--quiet")], seen.direct
    assert solved(sqlite_url, run_id) == LEVELS
