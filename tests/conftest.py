"""Shared fixtures: real Redis, real PostgreSQL, real Celery workers (never eager mode)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.chaos_pack import chaos_env  # noqa: F401  (a fixture, for every test that asks for it)
from tests.support.services import Worker, postgres_database, redis_server


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    with redis_server() as url:
        yield url


@pytest.fixture
def broker(redis_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """A Redis broker URL with a queue of this test's own (inherited by the CLI and workers it starts).

    A fresh queue name, not a flushed database: other test sessions may share the Redis.
    """
    monkeypatch.setenv("PACKSOLVE_QUEUE", f"packsolve-test-{uuid.uuid4().hex[:12]}")
    return redis_url


@pytest.fixture
def pg_url() -> Iterator[str]:
    with postgres_database() as url:
        yield url


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'packsolve.db'}"


@pytest.fixture
def start_worker(tmp_path: Path) -> Iterator[Callable[..., Worker]]:
    """Start real `packsolve worker` processes; all are stopped at the end of the test."""
    workers: list[Worker] = []

    def start(broker: str, database: str, hostname: str = "w1@test", concurrency: int = 1) -> Worker:
        w = Worker(broker, database, hostname, concurrency, tmp_path / f"{hostname.split('@')[0]}.log")
        workers.append(w)
        w.wait_ready()
        return w

    yield start
    for w in workers:
        w.stop()
