"""The repository's docker-compose.yml brought up for real on the tests' Docker engine.

    with compose_stack(engine, tmp_path, workers=3) as stack:
        run_id = stack.submit(pack)          # from the host, through the published ports
        stack.wait_finished(run_id, 120)

The product file is used as users use it, with its variables: random secrets, published ports moved
off the machine's own Redis and PostgreSQL (still bound to 127.0.0.1), the stand-in base images.
One CI-only override (tests/compose/ci.override.yml) mounts the test-only chaos kind read-only into
the packsolve containers and shortens the lease and the scheduler's pass, so damage is repaired in
seconds.
"""

from __future__ import annotations

import secrets
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from tests.support.docker_engine import Engine, build_standins, docker_engine
from tests.support.kinds import chaos_kind
from tests.support.services import ROOT, free_port, run_cli
from tests.support.waiting import wait_until

COMPOSE_FILE = ROOT / "docker-compose.yml"
CI_OVERRIDE = ROOT / "tests" / "compose" / "ci.override.yml"
SECRETS = ("POSTGRES_PASSWORD", "REDIS_PASSWORD", "PACKSOLVE_TASK_KEY", "FLOWER_BASIC_AUTH")
LEASE_TTL_S = 4.0  # PACKSOLVE_LEASE_TTL of the workers and the scheduler (ci.override.yml)
GRACE_S = 3.0  # the scheduler's --grace (ci.override.yml)


def secret_values() -> dict[str, str]:
    """Return fresh values for the compose file's required secrets."""
    values = {name: secrets.token_hex(16) for name in SECRETS}
    values["FLOWER_BASIC_AUTH"] = f"admin:{secrets.token_hex(8)}"
    return values


@dataclass
class Stack:
    """One compose project on the engine: its variables, and helpers to drive and read it."""

    engine: Engine
    project: str
    variables: dict[str, str]
    env_file: Path
    packs: Path
    timings: dict[str, float]

    def compose(
        self, *args: str, timeout: float = 300, check: bool = True, files: tuple[Path, ...] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run docker-compose on this project (the product file and the CI override)."""
        chosen = (COMPOSE_FILE, CI_OVERRIDE) if files is None else files
        argv = ["docker-compose", "--project-directory", str(ROOT), "--env-file", str(self.env_file)]
        for f in chosen:
            argv += ["-f", str(f)]
        res = subprocess.run(
            [*argv, "-p", self.project, *args],
            capture_output=True,
            text=True,
            env={**self.engine.env(), **self.variables},
            timeout=timeout,
            check=False,
        )
        if check and res.returncode != 0:
            raise AssertionError(
                f"docker-compose {' '.join(args)} failed ({res.returncode}):\n{res.stderr[-4000:]}"
            )
        return res

    def containers(self, service: str) -> list[str]:
        """Return the ids of the service's containers (running or not)."""
        return self.compose("ps", "-q", service).stdout.split()

    def inspect(self, container: str, template: str) -> str:
        return self.engine.docker("inspect", "-f", template, container).stdout.strip()

    @property
    def pg_url(self) -> str:
        pw = self.variables["POSTGRES_PASSWORD"]
        return f"postgresql+psycopg://packsolve:{pw}@127.0.0.1:{self.variables['POSTGRES_PORT']}/packsolve"

    @property
    def broker_url(self) -> str:
        return f"redis://:{self.variables['REDIS_PASSWORD']}@127.0.0.1:{self.variables['REDIS_PORT']}/0"

    @property
    def flower_url(self) -> str:
        return f"http://127.0.0.1:{self.variables['FLOWER_PORT']}"

    @property
    def prometheus_url(self) -> str:
        return f"http://127.0.0.1:{self.variables['PROMETHEUS_PORT']}"

    def prometheus(self, path: str) -> Any:
        """Return the JSON `data` of a GET on Prometheus's HTTP API (path from /api/v1/ on)."""
        import json
        import urllib.request

        with urllib.request.urlopen(f"{self.prometheus_url}/api/v1/{path}", timeout=10) as response:
            body = json.load(response)
        assert body["status"] == "success", body
        return body["data"]

    def client_env(self) -> dict[str, str]:
        """The environment of a packsolve command on the host, pointed at the published ports."""
        return {
            "PACKSOLVE_BROKER_URL": self.broker_url,
            "PACKSOLVE_DATABASE_URL": self.pg_url,
            "PACKSOLVE_TASK_KEY": self.variables["PACKSOLVE_TASK_KEY"],
            "PACKSOLVE_EXTRA_KINDS": chaos_kind.ENV,
            "PACKSOLVE_QUEUE": "packsolve",
        }

    def submit(self, pack: Path, *args: str) -> int:
        """Submit a pack from the host; return the run id."""
        res = run_cli("submit", str(pack), *args, env=self.client_env(), timeout=180)
        if res.returncode != 0:
            raise AssertionError(f"submit failed ({res.returncode}): {res.stderr[-3000:]}")
        return int(res.stdout.strip().splitlines()[-1])

    def sql(self, query: str, **params: Any) -> list[Any]:
        """Run a query against the PostgreSQL container through its published port."""
        engine = create_engine(self.pg_url)
        try:
            with engine.connect() as conn:
                return list(conn.execute(text(query), params).all())
        finally:
            engine.dispose()

    def finished(self, run_id: int) -> bool:
        try:
            rows = self.sql("SELECT finished_at IS NOT NULL FROM runs WHERE id = :r", r=run_id)
        except Exception:  # the database is down for the moment (a damage scenario)
            return False
        return bool(rows and rows[0][0])

    def wait_finished(self, run_id: int, timeout: float) -> bool:
        return wait_until(lambda: self.finished(run_id), timeout, every=0.5)

    def wait_ready(self, workers: int, timeout: float = 300) -> None:
        """Wait for `migrate` to exit 0, redis and postgres healthy, and `workers` workers ready."""

        def migrated() -> bool:
            ids = self.containers("migrate")
            if not ids:
                return False
            status, code = self.inspect(ids[0], "{{.State.Status}} {{.State.ExitCode}}").split()
            if status == "exited" and code != "0":
                logs = self.engine.docker("logs", ids[0], check=False)
                raise AssertionError(f"migrate exited {code}: {logs.stdout[-2000:]}{logs.stderr[-2000:]}")
            return status == "exited"

        def healthy() -> bool:
            for service in ("redis", "postgres"):
                ids = self.containers(service)
                if not ids or self.inspect(ids[0], "{{.State.Health.Status}}") != "healthy":
                    return False
            return True

        if not wait_until(migrated, timeout, every=1.0):
            raise AssertionError(f"migrate did not finish within {timeout:.0f} s")
        if not wait_until(healthy, 60, every=1.0):
            raise AssertionError("redis and postgres not healthy within 60 s")
        if not wait_until(lambda: len(self.ready_workers()) >= workers, 120, every=1.0):
            raise AssertionError(f"{workers} workers not ready within 120 s: {self.ready_workers()}")

    def ready_workers(self) -> set[str]:
        """Return the Celery names of the running worker containers that logged they are ready."""
        names = set()
        for cid, name in self.worker_names().items():
            logs = self.engine.docker("logs", cid, check=False)
            if f"{name} ready." in logs.stdout + logs.stderr:
                names.add(name)
        return names

    def worker_names(self) -> dict[str, str]:
        """Return {container id (short): celery@<hostname>} for the running worker containers."""
        names = {}
        for cid in self.containers("worker"):
            if self.inspect(cid, "{{.State.Running}}") == "true":
                names[cid[:12]] = f"celery@{self.inspect(cid, '{{.Config.Hostname}}')}"
        return names

    def logs(self, service: str) -> str:
        return self.compose("logs", "--no-color", service, check=False).stdout


@contextmanager
def compose_stack(engine: Engine, workdir: Path, workers: int) -> Iterator[Stack]:
    """Bring the compose file up with `workers` worker containers; take it down (volumes too) after."""
    start = time.monotonic()
    timings: dict[str, float] = {}
    images = build_standins(engine)
    timings["stand-in images"] = time.monotonic() - start
    timings.update(engine.timings)
    packs = workdir / "packs"
    packs.mkdir(parents=True, exist_ok=True)
    env_file = workdir / "empty.env"  # a developer's .env must not leak into the test
    env_file.write_text("")
    variables = {
        **secret_values(),
        **images,
        "REDIS_PORT": str(free_port()),
        "POSTGRES_PORT": str(free_port()),
        "FLOWER_PORT": str(free_port()),
        "PROMETHEUS_PORT": str(free_port()),
        "PACKS_DIR": str(packs),
        "PACKSOLVE_CONCURRENCY": "2",
    }
    stack = Stack(engine, f"psci{uuid.uuid4().hex[:8]}", variables, env_file, packs, timings)
    try:
        up = time.monotonic()
        # With the monitoring profile: Prometheus scraping `packsolve metrics` comes up with the rest.
        up_args = ("--profile", "monitoring", "up", "-d", "--build", "--scale", f"worker={workers}")
        res = stack.compose(*up_args, timeout=1200, check=False)
        if res.returncode != 0:
            logs = stack.compose("logs", "--no-color", "--tail", "30", check=False).stdout
            raise AssertionError(
                f"docker-compose up failed ({res.returncode}):\n{res.stderr[-3000:]}\n{logs}"
            )
        stack.wait_ready(workers)
        timings["compose build + up + ready"] = time.monotonic() - up
        yield stack
    finally:
        stack.compose(
            "--profile",
            "cli",
            "--profile",
            "monitoring",
            "down",
            "-v",
            "--remove-orphans",
            "--timeout",
            "5",
            check=False,
        )


def flower_get(stack: Stack, path: str, auth: tuple[str, str] | None) -> int:
    """Return the HTTP status of a GET on Flower through its published port."""
    import base64
    import urllib.error
    import urllib.request

    request = urllib.request.Request(stack.flower_url + path)
    if auth is not None:
        token = base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as e:
        return int(e.code)


@pytest.fixture(scope="session")
def docker() -> Iterator[Engine]:
    """The tests' own dockerd for the whole session (stopped and cleaned up at its end)."""
    with docker_engine() as engine:
        yield engine


@pytest.fixture(scope="session")
def compose_up(docker: Engine, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """docker-compose.yml up with three worker containers, shared by the compose tests of a session."""
    with compose_stack(docker, tmp_path_factory.mktemp("compose"), workers=3) as stack:
        yield stack
