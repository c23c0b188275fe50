"""Starting runs from the dashboard: the functions `packsolve rerun` and `resume` call, in this process.

Planning (reading the parent's attempts, checking, creating the run, sending a
distributed run's tasks) runs in a small thread pool of the application's own;
its errors come back as the exceptions the CLI turns into one-line messages.
Only the solving of a local run leaves this process: it is detached as
`packsolve resume RUN --quiet`, on a run whose id is already known, in a
session of its own (it goes on when the dashboard stops, as one started from a
shell would). Nothing a child prints is read.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, TypeVar

from sqlalchemy import Engine, select

from packsolve import resumption, runs
from packsolve.db.models import Run
from packsolve.db.runs import resolve_run
from packsolve.db.session import session_scope
from packsolve.errors import PlanError
from packsolve.external.declaration import load_solvers
from packsolve.queue.app import Cluster
from packsolve.request import RerunRequest
from packsolve.runstate import RunMode
from packsolve.settings import Settings, child_environment

T = TypeVar("T")
# Runs planned at once; more wait their turn (planning a big rerun reads its levels).
PLANNERS = 2
# How long an action waits for the solve it detached to take its run (a big run's levels are read first).
START_TIMEOUT_S = 120.0


class Starter:
    """Starts reruns and resumes for the dashboard's actions; one per application (app.state.starter)."""

    def __init__(self, settings: Settings, engine: Engine, planners: int = PLANNERS) -> None:
        self.settings = settings
        self.engine = engine
        self._pool = ThreadPoolExecutor(max_workers=planners, thread_name_prefix="packsolve-start")
        self._lock = threading.Lock()
        self._cluster_of: Cluster | None = None
        # The local runs solved by a process started here, by id (None: being started).
        self._solving: dict[int, subprocess.Popen[bytes] | None] = {}

    async def rerun(self, request: RerunRequest, argv: Sequence[str]) -> int:
        """Start a child run as `packsolve rerun` would (argv: that command's, recorded); return its id.

        A local child is solved by a detached `packsolve resume CHILD`; a distributed one's tasks
        are sent from here. Raise PacksolveError as the command would (BrokerError: no broker).
        """
        return await self._planned(self._rerun, request, argv)

    async def resume(self, ref: str) -> int:
        """Resume the run ref names as `packsolve resume` would; return its id.

        A distributed run whose submit stopped is sent from here; a local run is
        checked here, then solved by a detached `packsolve resume RUN`. Raise
        PacksolveError as the command would, PlanError when nothing is left to resume.
        """
        return await self._planned(self._resume, ref)

    def close(self) -> None:
        """Stop planning (runs being planned finish; those waiting are dropped); detached solves go on."""
        self._pool.shutdown(wait=False, cancel_futures=True)

    async def _planned(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._pool, partial(fn, *args))

    def _cluster(self) -> Cluster:
        """Return the cluster of the dashboard's settings (made once; it connects only when it sends)."""
        with self._lock:
            if self._cluster_of is None:
                self._cluster_of = Cluster.of(self.settings)
            return self._cluster_of

    def _rerun(self, request: RerunRequest, argv: Sequence[str]) -> int:
        request.check()
        cluster = self._cluster()
        child, processes = runs.start_rerun(self.engine, request, argv, cluster, detached=True)
        if processes is None:
            runs.send(self.engine, cluster, child)
        elif child.pending:  # every level invalid: the run is finished already, nothing to solve
            self._detach(child.id)
        return child.id

    def _resume(self, ref: str) -> int:
        solvers = load_solvers(None)
        with session_scope(self.engine) as session:
            run = resolve_run(session, ref)
            run_id, mode, done_by = run.id, run.mode, run.pid if run.finished_at is not None else None
        if mode == RunMode.DISTRIBUTED:
            resumption.resume_distributed(self.engine, self._cluster(), str(run_id), solvers=solvers)
            return run_id
        self._reserve(run_id, done_by)
        try:
            resumption.check_local(self.engine, str(run_id), solvers)
            self._detach(run_id)
        except runs.NothingToRun as exc:
            raise PlanError(str(exc)) from None
        finally:
            with self._lock:
                if self._solving.get(run_id) is None:  # reserved, never started
                    self._solving.pop(run_id, None)
        return run_id

    def _reserve(self, run_id: int, done_by: int | None) -> None:
        """Hold the run for one resume from here; PlanError if another is being started or its solve lives.

        A solve started here that lives counts, unless it finished the run (done_by: the pid that
        solved the finished run last): it may not have recorded itself on the run yet.
        """
        with self._lock:
            if run_id in self._solving:
                process = self._solving[run_id]
                if process is None:
                    raise PlanError(f"run {run_id} is being resumed from this dashboard already; wait for it")
                if process.poll() is None and done_by != process.pid:
                    raise PlanError(
                        f"run {run_id} is still being solved by process {process.pid} on this machine; "
                        f"wait for it, or stop it with `packsolve cancel {run_id}` first"
                    )
            self._solving[run_id] = None

    def _detach(self, run_id: int) -> None:
        """Start `packsolve resume RUN --quiet` on the dashboard's database, in a session of its own."""
        env = child_environment(database_url=self.engine.url.render_as_string(hide_password=False))
        process = subprocess.Popen(
            [sys.executable, "-m", "packsolve", "resume", str(run_id), "--quiet"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,  # its summary: the run's page shows it
            env=env,
            start_new_session=True,
        )  # its stderr is the dashboard's: a solve that fails says why in the dashboard's log
        with self._lock:
            self._solving[run_id] = process
        threading.Thread(target=self._reap, args=(run_id, process), daemon=True).start()
        self._await_start(run_id, process)

    def _await_start(self, run_id: int, process: subprocess.Popen[bytes]) -> None:
        """Return once the detached solve has taken the run (its pid on it): the run's page shows it going.

        Raise PlanError if it ended before (its reason is in the dashboard's log); after
        START_TIMEOUT_S (a big run is still being read) return all the same.
        """
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            ended = process.poll()  # before the read: a solve that took the run and ended is seen taken
            with session_scope(self.engine) as session:
                if session.scalar(select(Run.pid).where(Run.id == run_id)) == process.pid:
                    return
            if ended is not None:
                raise PlanError(
                    f"the solve of run {run_id} (process {process.pid}) ended with status {ended} before it "
                    f"started (the dashboard's log says why); `packsolve resume {run_id}` runs it"
                )
            time.sleep(0.05)

    def _reap(self, run_id: int, process: subprocess.Popen[bytes]) -> None:
        """Wait for a detached solve to end (no zombie is left), then forget it."""
        process.wait()
        with self._lock:
            if self._solving.get(run_id) is process:
                del self._solving[run_id]
