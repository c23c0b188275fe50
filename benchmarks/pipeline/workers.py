"""Workers, submits and runs of the pipeline benchmark, timed from outside as a user would see them."""

from __future__ import annotations

import contextlib
import datetime
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.harness import PACKSOLVE, ROOT, run_packsolve


class Worker:
    """A worker process (packsolve's, or a baseline's) in its own process group, its output in a log."""

    def __init__(self, argv: list[str], env: dict[str, str], log: Path) -> None:
        self.log_path = log
        self._log = open(log, "w")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            argv,
            env={**os.environ, **env},
            cwd=ROOT,  # baselines are run as `python -m benchmarks.X`
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_started(self, broker: str, queue: str, timeout: float = 120) -> float:
        """Return the monotonic time at which the worker took its first message off the queue.

        Timing from there (not from the log's "ready") leaves start-up out for both
        workers alike, at any log level.
        """
        import redis

        r = redis.Redis.from_url(broker)
        initial = r.llen(queue)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"worker exited early:\n{self.log_path.read_text()}")
            if r.llen(queue) < initial:
                return time.monotonic()
            time.sleep(0.005)
        raise TimeoutError(f"worker took no task:\n{self.log_path.read_text()}")

    def wait_logged(self, text: str, timeout: float = 120) -> None:
        """Wait until the worker's log holds text (" ready." at INFO level)."""
        deadline = time.monotonic() + timeout
        while text not in self.log_path.read_text(errors="replace"):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"worker never logged {text!r}:\n{self.log_path.read_text()}")
            time.sleep(0.05)

    def stop(self) -> None:
        """Stop the worker's whole process group: SIGTERM, then SIGKILL after 30 s."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        self._log.close()


def packsolve_worker(
    env: dict[str, str], processes: int, tmp: Path, name: str, loglevel: str = "WARNING"
) -> Worker:
    """Start `packsolve worker` with processes pool processes, named name@bench, its log in tmp."""
    argv = [*PACKSOLVE, "worker", "--concurrency", str(processes), "--hostname", f"{name}@bench"]
    return Worker([*argv, "-l", loglevel], env, tmp / f"{name}.log")


def wait_run(db_url: str, run_id: int, timeout: float = 3600) -> float:
    """Return the monotonic time at which the run was finished: its last result written.

    The worker that writes a run's last results stamps the run's finished_at (the
    clock of this machine), so the end is read from there, not from when a poll
    happens to see it: polling every 0.2 s then costs the workers' CPU almost
    nothing (polling every few milliseconds took several percent of a core).
    """
    from sqlalchemy import select

    from packsolve.db.models import Run
    from packsolve.db.session import get_engine

    engine = get_engine(db_url)
    finished = select(Run.finished_at).where(Run.id == run_id)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with engine.connect() as conn:
            stamp = conn.execute(finished).scalar()
        if stamp is not None:
            if stamp.tzinfo is None:  # SQLite keeps no zone: packsolve writes UTC
                stamp = stamp.replace(tzinfo=datetime.UTC)
            return time.monotonic() - (time.time() - stamp.timestamp())
        time.sleep(0.2)
    raise TimeoutError(f"run {run_id} not finished")


def submit(pack: Path, env: dict[str, str], *extra: str) -> tuple[int, int, float, float]:
    """Submit the pack; return (run id, chunk size, wall s, CPU s)."""
    out, err, wall, cpu = run_packsolve(["submit", str(pack), "--time-limit", "60", *extra], env)
    said = re.search(r"of up to (\d+)", err)
    return int(out.strip().splitlines()[-1]), int(said.group(1)) if said else 1, wall, cpu


def first_message(broker: str, queue: str) -> Callable[[], float]:
    """Watch the queue from now on; return a function giving when the first message arrived there.

    Ready workers take a message within milliseconds, so arrival is seen as the
    queue length rising or as the messages taken (Redis' unacked hash growing).
    """
    import redis

    r = redis.Redis.from_url(broker)
    base = r.hlen("unacked")
    seen: list[float] = []

    def watch() -> None:
        while not seen:
            if r.llen(queue) or r.hlen("unacked") > base:
                seen.append(time.monotonic())
            time.sleep(0.001)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()

    def arrived() -> float:
        thread.join(60)
        return seen[0]

    return arrived


def cpu_seconds(pid: int) -> float:
    """Return the CPU seconds (user + system) process pid has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
