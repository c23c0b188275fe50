"""Shared fixtures: real Redis, real PostgreSQL, real Celery workers (never eager mode).

Markers say what a test needs (registered in pyproject.toml): `redis`, `postgres`, `browser`,
`compose`, `slow`, `netns` (the cluster of network namespaces), `rabbitmq`. `redis`, `postgres` and
`netns` are added here from the fixtures a test uses, so
`pytest -m "not postgres"` runs everything that needs no PostgreSQL; a test that reaches a
service some other way carries the mark itself.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from tests.support.chaos_pack import chaos_env  # noqa: F401  (a fixture, for every test that asks for it)
from tests.support.cluster import _netns_cluster_session, netns_cluster  # noqa: F401  (fixtures)
from tests.support.compose_stack import compose_up, docker  # noqa: F401  (fixtures)
from tests.support.dashboard import browser, page  # noqa: F401  (fixtures: headless Chromium, a page in it)
from tests.support.fencing import any_broker, either_engine  # noqa: F401  (fixtures: a broker, an engine on db_url)
from tests.support.plugins import install  # noqa: F401  (a fixture: distributions put on sys.path)
from tests.support.services import Worker, postgres_database, redis_server

# The marker a test gets from each fixture it uses (directly or through another fixture).
FIXTURE_MARKS = {
    "redis_url": "redis",
    "broker": "redis",
    "start_worker": "redis",
    "pg_url": "postgres",
    "compose": "compose",
    "docker": "compose",
    "compose_up": "compose",
    "netns_cluster": "netns",
}
# Tests parametrized over databases (db_url, the one either-database fixture) reach pg_url through
# request.getfixturevalue, which collection cannot see: their PostgreSQL case is named by this value.
POSTGRES_PARAM = "postgres"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        marks = {mark for fixture, mark in FIXTURE_MARKS.items() if fixture in names}
        params = getattr(item, "callspec", None)
        values = {v for v in params.params.values() if isinstance(v, str)} if params is not None else set()
        if POSTGRES_PARAM in values:
            marks.add("postgres")
        for mark in sorted(marks):
            if item.get_closest_marker(mark) is None:
                item.add_marker(mark)


def _require_mark(request: pytest.FixtureRequest, mark: str) -> None:
    """Fail a test that uses a service without its marker, so `-m "not MARK"` can be trusted."""
    if request.node.get_closest_marker(mark) is None:
        pytest.fail(f"{request.node.nodeid} uses {mark} but is not marked {mark!r}", pytrace=False)


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    with redis_server() as url:
        yield url


@pytest.fixture
def broker(redis_url: str, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> str:
    """A Redis broker URL with a queue of this test's own (inherited by the CLI and workers it starts).

    A fresh queue name, not a flushed database: other test sessions may share the Redis.
    """
    _require_mark(request, "redis")
    monkeypatch.setenv("PACKSOLVE_QUEUE", f"packsolve-test-{uuid.uuid4().hex[:12]}")
    return redis_url


@pytest.fixture
def pg_url(request: pytest.FixtureRequest) -> Iterator[str]:
    _require_mark(request, "postgres")
    with postgres_database() as url:
        yield url


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'packsolve.db'}"


@pytest.fixture(params=["sqlite", POSTGRES_PARAM])
def db_url(request: pytest.FixtureRequest) -> str:
    """The test's own database: a SQLite file, then a fresh PostgreSQL database, dropped after the test.

    The PostgreSQL case is marked `postgres` (its parameter is POSTGRES_PARAM); a missing PostgreSQL
    fails it under CI=true and skips it elsewhere (tests.support.services.postgres_database).
    """
    return request.getfixturevalue("pg_url" if request.param == POSTGRES_PARAM else "sqlite_url")


@pytest.fixture
def clean_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty working directory of the test's own, with every packsolve setting's variable unset.

    For tests of what a command resolves by itself (no packsolve.toml but the test's, no
    PACKSOLVE_* from the environment the suite runs in).
    """
    from packsolve import settings

    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    for name in settings.SPECS:
        monkeypatch.delenv(settings.env_name(name), raising=False)
    return cwd


@pytest.fixture
def start_worker(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Callable[..., Worker]]:
    """Start real `packsolve worker` processes; all are stopped at the end of the test."""
    _require_mark(request, "redis")
    workers: list[Worker] = []

    def start(
        broker: str,
        database: str,
        hostname: str = "w1@test",
        concurrency: int = 1,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
        args: Sequence[str] = (),
    ) -> Worker:
        log = tmp_path / f"{hostname.split('@')[0]}.log"
        w = Worker(broker, database, hostname, concurrency, log, env, cwd, args)
        workers.append(w)
        w.wait_ready()
        return w

    yield start
    for w in workers:
        w.stop()
