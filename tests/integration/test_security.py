"""Security: only JSON on the queue, no credentials in output, hostile values stay data (test_bound_values.py:
every value is a bound parameter)."""

from __future__ import annotations

import json
import os
import pickle
import time
import uuid
from pathlib import Path

import pytest
import redis

from tests.support.chaos_pack import write_pack
from tests.support.inprocess import invoke
from tests.support.services import Worker, private_redis, wait_for_run


class Payload:
    """Unpickling this creates a directory: proof that pickle content was executed."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.mkdir, (str(self.marker),))


@pytest.mark.usefixtures("chaos_env")
def test_a_pickle_message_on_the_queue_is_rejected_never_executed_and_the_worker_goes_on(
    tmp_path, broker, sqlite_url, start_worker
):
    from kombu import Connection, Exchange, Producer, Queue

    from packsolve.queue.protocol import TASK_NAME

    # The broker fixture's queue (packsolve.worker.QUEUE was fixed when another test imported it).
    QUEUE = os.environ.get("PACKSOLVE_QUEUE") or "packsolve"  # noqa: N806
    marker = tmp_path / "pwned"
    worker = start_worker(broker, sqlite_url, "w1@test")
    queue = Queue(QUEUE, Exchange(QUEUE, "direct"), routing_key=QUEUE)
    task_id = str(uuid.uuid4())
    body = pickle.dumps(((Payload(marker),), {}, {"callbacks": None, "errbacks": None, "chain": None}))
    with Connection(broker) as conn:
        Producer(conn).publish(
            body,
            exchange=queue.exchange,
            routing_key=QUEUE,
            declare=[queue],
            content_type="application/x-python-serialize",
            content_encoding="binary",
            headers={"lang": "py", "task": TASK_NAME, "id": task_id, "root_id": task_id, "argsrepr": "()"},
        )
    # A JSON task sent after it is run: the worker went past the pickle and is alive.
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url, "PACKSOLVE_BROKER_URL": broker}
    res = invoke("submit", str(write_pack(tmp_path, 2, ms=5)), "--time-limit", "5", env=env)
    assert res.returncode == 0, res.stderr
    wait_for_run(sqlite_url, int(res.stdout.strip().splitlines()[-1]), timeout=60)
    assert not marker.exists()
    assert worker.proc.poll() is None
    log = worker.log()
    assert "pickle" in log.lower() and ("ContentDisallowed" in log or "Refusing to deserialize" in log)
    r = redis.Redis.from_url(broker)
    assert r.llen(QUEUE) == 0  # rejected, not left to be redelivered forever
    assert all(task_id.encode() not in v for v in r.hvals("unacked"))


DB_SECRET = "DbS3cretPW"
REDIS_SECRET = "RedisS3cretPW"


@pytest.mark.redis  # a password-protected redis-server of its own
@pytest.mark.slow
@pytest.mark.usefixtures("chaos_env")
def test_credentials_in_urls_never_reach_logs_output_reports_or_the_database(tmp_path, pg_url):
    db_url = pg_url.replace("postgres@", f"postgres:{DB_SECRET}@", 1)  # trust auth: any password works
    assert DB_SECRET in db_url
    with private_redis(["--requirepass", REDIS_SECRET]) as (plain, _):
        broker = plain.replace("redis://", f"redis://:{REDIS_SECRET}@", 1)
        worker = Worker(broker, db_url, "w1@test", 1, tmp_path / "w.log")
        try:
            worker.wait_ready()
            pack = str(write_pack(tmp_path, 3, ms=5))
            # Passed as flags this time: the run's stored command line must not keep them either.
            res = invoke(
                "submit", pack, "--time-limit", "5", "--database-url", db_url, "--broker-url", broker
            )
            outputs = [res.stdout, res.stderr]
            assert res.returncode == 0, res.stderr
            run_id = int(res.stdout.strip().splitlines()[-1])
            wait_for_run(pg_url, run_id, timeout=60)
            env = {"PACKSOLVE_DATABASE_URL": db_url, "PACKSOLVE_BROKER_URL": broker}
            for args in (
                ["status", str(run_id), "--format", "json"],
                ["report", "summary", str(run_id), "--format", "json"],
                ["export", str(run_id)],
                ["db", "upgrade"],
                ["scheduler", "--once"],
                ["rerun", str(run_id), "--status", "solved", "--local", "-j", "1"],
            ):
                res = invoke(*args, env=env)
                assert res.returncode == 0, (args, res.stderr)
                outputs += [res.stdout, res.stderr]
            # Errors name the service without the password.
            for args in (
                ["submit", pack, "--broker-url", f"redis://:{REDIS_SECRET}@127.0.0.1:1/0"],
                ["status", "--database-url", f"postgresql://postgres:{DB_SECRET}@127.0.0.1:1/x"],
            ):
                res = invoke(*args, env=env)
                assert res.returncode != 0
                outputs += [res.stdout, res.stderr]
            outputs.append(worker.log())
        finally:
            worker.stop()
    from sqlalchemy import create_engine, text

    engine = create_engine(pg_url)
    with engine.connect() as conn:
        outputs += [
            json.dumps(list(row)) for row in conn.execute(text("SELECT options, host FROM runs")).all()
        ]
    engine.dispose()
    leaks = [o for o in outputs if DB_SECRET in o or REDIS_SECRET in o]
    assert leaks == []
    assert "***" in "".join(outputs)  # URLs were shown, masked


@pytest.mark.usefixtures("chaos_env")
def test_hostile_filter_values_are_data_not_sql(tmp_path, sqlite_url):
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url}
    hostile = "x' OR '1'='1'; DROP TABLE attempts; --"
    res = invoke("solve", str(write_pack(tmp_path, 3, ms=5)), "-q", "--label", hostile, env=env)
    assert res.returncode == 0, res.stderr
    res = invoke("status", hostile, "--format", "json", env=env)  # the label is found as the literal it is
    assert res.returncode == 0 and json.loads(res.stdout)["label"] == hostile
    assert invoke("status", "y' OR '1'='1", env=env).returncode != 0
    res = invoke("report", "hardest", "--kind", hostile, "--format", "json", env=env)
    assert res.returncode == 0 and json.loads(res.stdout or "[]") in ([], {}) or "rows" in res.stdout
    res = invoke("rerun", "latest", "--status", "solved", "--kind", hostile, env=env)
    assert res.returncode != 0 and "of kind" in res.stderr
    time.sleep(0.1)
    res = invoke("export", "latest", env=env)
    assert res.returncode == 0 and len(res.stdout.splitlines()) == 3  # the table is still there


@pytest.mark.postgres
@pytest.mark.usefixtures("chaos_env")
def test_a_query_password_a_webhook_token_and_a_bearer_token_are_never_stored_on_the_run(tmp_path, pg_url):
    query, hook, bearer = "QueryS3cret", "HookS3cret", "BearerS3cret"
    db_url = f"{pg_url}?password={query}&application_name=packsolve-test"  # trust auth: any password works
    res = invoke(
        "solve",
        str(write_pack(tmp_path, 2, ms=5)),
        "-q",
        "--database-url",
        db_url,
        "--notify",
        f"sh -c 'cat >/dev/null; echo Authorization: Bearer {bearer} >/dev/null'",
        f"--notify-url=http://127.0.0.1:1/hooks/{hook}?token={hook}",
    )
    assert res.returncode == 0, res.stderr
    assert query not in res.stderr + res.stdout and f"token={hook}" not in res.stderr
    from sqlalchemy import create_engine, text

    engine = create_engine(pg_url)
    with engine.connect() as conn:
        stored = json.dumps([row[0] for row in conn.execute(text("SELECT options FROM runs")).all()])
    engine.dispose()
    assert [s for s in (query, hook, bearer) if s in stored] == []
    assert "password=***" in stored and '"--notify", "***"' in stored and "--notify-url=***" in stored
