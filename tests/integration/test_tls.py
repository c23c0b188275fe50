"""TLS everywhere a cluster talks: rediss://, amqps:// and PostgreSQL with sslmode=verify-full.

The servers are the test's own (tests/support/tls.py): each speaks only TLS, with a certificate
from a CA the test makes, so a run that ends means every connection was encrypted and its
certificate checked. A real worker runs a small run over each TLS broker and writes its results
to PostgreSQL over verify-full; a client given another CA is refused in one line.
"""

from __future__ import annotations

import json
import uuid

import pytest

from tests.support.services import Worker, run_cli, wait_for_run
from tests.support.tls import TlsPostgres, TlsRabbit, TlsRedis, make_certificates

pytestmark = [pytest.mark.tls, pytest.mark.slow]


@pytest.fixture(scope="module")
def state(tmp_path_factory):
    return tmp_path_factory.mktemp("tls")


@pytest.fixture(scope="module")
def certs(state):
    return make_certificates(state / "ca")


@pytest.fixture(scope="module")
def other_ca(state):
    """A CA that signed nothing the servers use: a client trusting only it must refuse them."""
    return make_certificates(state / "other-ca", "another CA").ca


@pytest.fixture(scope="module")
def postgres(certs):
    server = TlsPostgres(certs)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def brokers(state, certs):
    """The TLS brokers, started once for the module: {"rediss": url, "amqps": url}."""
    redis_server = TlsRedis(state, certs)
    rabbit = TlsRabbit(state, certs)
    yield {"rediss": redis_server, "amqps": rabbit}
    redis_server.stop()
    rabbit.stop()


def write_pack(directory, count: int):
    """Write count distinct coins levels as one JSON-lines file; return it."""
    pack = directory / "pack.jsonl"
    lines = [json.dumps({"kind": "coins", "notes": [1, 2, 5, 10 + i], "target": 8 + i}) for i in range(count)]
    pack.write_text("\n".join(lines) + "\n")
    return pack


def fresh_database(postgres, certs) -> str:
    """Create a database of this test's own; return its verify-full URL."""
    name = f"tls_{uuid.uuid4().hex[:12]}"
    import psycopg

    with psycopg.connect(
        host=str(postgres.sockets), port=postgres.port, user="postgres", autocommit=True
    ) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return postgres.url(certs.ca, name)


@pytest.mark.parametrize("scheme", ["rediss", "amqps"])
def test_a_worker_runs_a_run_over_a_tls_broker_and_writes_to_postgres_over_verify_full(
    scheme, brokers, postgres, certs, tmp_path
):
    broker = brokers[scheme].url(certs.ca)
    database = fresh_database(postgres, certs)
    env = {
        "PACKSOLVE_BROKER_URL": broker,
        "PACKSOLVE_DATABASE_URL": database,
        "PACKSOLVE_QUEUE": f"q-{scheme}",
    }
    worker = Worker(broker, database, f"tls-{scheme}@test", env={"PACKSOLVE_QUEUE": f"q-{scheme}"})
    try:
        worker.wait_ready(120)
        res = run_cli("submit", str(write_pack(tmp_path, 4)), "--time-limit", "10", env=env)
        assert res.returncode == 0, res.stderr
        run_id = int(res.stdout.strip().splitlines()[-1])
        wait_for_run(database, run_id, timeout=120)
        # The scheduler asks the broker over TLS too (Redis: its unacknowledged tasks).
        reconciled = run_cli("scheduler", "--once", env=env, timeout=120)
        assert reconciled.returncode == 0 and "broker not asked" not in reconciled.stderr, reconciled.stderr
    finally:
        worker.stop()
    exported = run_cli("export", str(run_id), env=env)
    assert exported.returncode == 0, exported.stderr
    records = [json.loads(line) for line in exported.stdout.splitlines()]
    assert len(records) == 4 and {r["status"] for r in records} <= {"solved", "no_solution"}
    assert {r["worker"] for r in records} == {f"tls-{scheme}@test"}
    # The worker's connections to PostgreSQL were TLS ones: the server refuses any other (hostnossl reject).
    from sqlalchemy import text

    from packsolve.db.session import get_engine

    with get_engine(database, create=False).connect() as conn:
        assert conn.execute(text("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")).scalar() is True


def test_a_database_whose_certificate_does_not_chain_to_the_ca_given_is_refused_in_one_line(
    postgres, certs, other_ca, tmp_path
):
    url = fresh_database(postgres, certs).replace(str(certs.ca), str(other_ca))
    res = run_cli("runs", env={"PACKSOLVE_DATABASE_URL": url}, cwd=tmp_path, timeout=60)
    errors = [line for line in res.stderr.splitlines() if line.strip()]
    assert res.returncode == 1 and len(errors) == 1 and "certificate verify failed" in errors[0], res.stderr


@pytest.mark.parametrize("scheme", ["rediss", "amqps"])
def test_a_broker_whose_certificate_does_not_chain_to_the_ca_given_is_refused_in_one_line(
    scheme, brokers, other_ca, tmp_path, sqlite_url
):
    env = {"PACKSOLVE_BROKER_URL": brokers[scheme].url(other_ca), "PACKSOLVE_DATABASE_URL": sqlite_url}
    res = run_cli("submit", str(write_pack(tmp_path, 1)), env=env, timeout=120)
    errors = [line for line in res.stderr.splitlines() if line.startswith("Error:")]
    assert res.returncode == 1 and len(errors) == 1 and "Traceback" not in res.stderr, res.stderr[-3000:]
    assert "certificate verify failed" in errors[0] or "CERTIFICATE_VERIFY_FAILED" in errors[0], errors[0]
