"""Sending and leases with a real broker and real workers: a submit that cannot half-happen, no Celery
soft limit on tasks, worker leases taken and given back, and scheduler --once's exit code."""

from __future__ import annotations

import json
import time

import pytest
import redis
from sqlalchemy import select

from packsolve.db.models import Attempt, Run, Worker, utcnow
from packsolve.db.session import get_engine, session_scope
from packsolve.queue.protocol import decode_message
from packsolve.runstate import ShownState
from packsolve.settings import DEFAULT_DB_PATIENCE_S
from tests.support.chaos_pack import write_pack
from tests.support.inprocess import invoke
from tests.support.services import private_redis, wait_for_run
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.usefixtures("chaos_env"), pytest.mark.redis]


def queue_name() -> str:
    import os

    return os.environ.get("PACKSOLVE_QUEUE") or "packsolve"


def test_a_submit_whose_broker_fails_midway_leaves_an_unsent_run_to_resume_or_delete(tmp_path, sqlite_url):
    """Defect 4: one line, exit 1, a run shown `unsent` that the scheduler leaves alone; resume sends it."""
    with private_redis() as (url, _restart):
        client = redis.Redis.from_url(url)
        used = int(client.info("memory")["used_memory"])
        client.config_set("maxmemory", used + 400_000)  # room for a few hundred tasks, not 3,000
        env = {"PACKSOLVE_DATABASE_URL": sqlite_url, "PACKSOLVE_BROKER_URL": url}
        pack = write_pack(tmp_path, 3000, ms=1)
        res = invoke("submit", str(pack), "--chunk-size", "1", "--time-limit", "5", env=env)
        assert res.returncode == 1, res.stderr
        assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr
        assert "not sent in full" in res.stderr and "packsolve resume" in res.stderr, res.stderr
        sent_before = client.llen(queue_name())
        assert 0 < sent_before < 3000
        listing = invoke("runs", env=env)
        assert ShownState.UNSENT in listing.stdout, listing.stdout
        # `status` says the same (it once said `running`), and why.
        status = json.loads(invoke("status", "--format", "json", env=env).stdout)
        assert (status["state"], status["unsent"]) == (ShownState.UNSENT, True), status
        assert status["send_error"], status
        client.delete(queue_name())  # even with its queue empty, the scheduler does not send it
        time.sleep(5.5)
        res = invoke("scheduler", "--once", "--grace", "0", env=env)
        assert res.returncode == 0 and "requeued 0," in res.stderr, res.stderr
        client.config_set("maxmemory", 0)  # the broker is back
        res = invoke("resume", "latest", env=env)
        assert res.returncode == 0, res.stderr
        tasks = [decode_message(raw) for raw in client.lrange(queue_name(), 0, -1)]
        assert sum(len(t.items) for t in tasks if t is not None) == 3000
        with session_scope(get_engine(sqlite_url)) as s:
            run = s.scalars(select(Run)).one()
            assert run.sent_at is not None and run.send_error is None


def test_tasks_carry_no_celery_soft_limit_and_a_hard_limit_above_the_database_waits(
    tmp_path, broker, sqlite_url
):
    """Defect 6: Celery's soft limit no longer fires inside a database retry or a result write."""
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url, "PACKSOLVE_BROKER_URL": broker}
    res = invoke("submit", str(write_pack(tmp_path, 2, ms=5)), "--time-limit", "2", env=env)
    assert res.returncode == 0, res.stderr
    raw = redis.Redis.from_url(broker).lrange(queue_name(), 0, -1)
    assert raw
    for message in raw:
        hard, soft = json.loads(message)["headers"]["timelimit"]  # Celery's order: (hard, soft)
        assert soft is None and hard >= 2 * DEFAULT_DB_PATIENCE_S
    redis.Redis.from_url(broker).delete(queue_name())


def test_a_worker_takes_a_lease_per_process_and_gives_it_back_when_it_stops(
    tmp_path, broker, pg_url, start_worker
):
    """Leases: each pool process that claims keeps one alive, says what it offers, and ends it on exit."""
    env = {"PACKSOLVE_DATABASE_URL": pg_url, "PACKSOLVE_BROKER_URL": broker}
    worker = start_worker(broker, pg_url, hostname="lease@test", concurrency=2)
    res = invoke("submit", str(write_pack(tmp_path, 6, ms=50)), "--time-limit", "5", env=env)
    assert res.returncode == 0, res.stderr
    run_id = int(res.stdout.strip().splitlines()[-1])
    wait_for_run(pg_url, run_id, timeout=60)
    with session_scope(get_engine(pg_url)) as s:
        leases = list(s.scalars(select(Worker)))
        holders = {a.holder for a in s.scalars(select(Attempt).where(Attempt.run_id == run_id))}
    assert leases and all(w.host == "lease@test" and w.lease_until > utcnow() for w in leases)
    assert holders <= {w.name for w in leases}
    assert all("chaos" in json.loads(w.offers) for w in leases)
    status = invoke("status", str(run_id), env=env)
    assert status.returncode == 0
    worker.stop()
    with session_scope(get_engine(pg_url)) as s:
        assert all(w.lease_until <= utcnow() for w in s.scalars(select(Worker)))
    res = invoke("submit", str(write_pack(tmp_path / "b", 2, ms=5)), "--time-limit", "5", env=env)
    status = invoke("status", res.stdout.strip().splitlines()[-1], env=env)
    assert "no live worker serves this run" in status.stdout, status.stdout


def test_scheduler_once_fails_when_the_broker_cannot_be_reached(sqlite_url):
    """scheduler --once exits non-zero when the broker cannot be reached: cron relies on it."""
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url, "PACKSOLVE_BROKER_URL": "redis://127.0.0.1:1/0"}
    res = invoke("scheduler", "--once", env=env)
    assert res.returncode == 1, res.stderr
    assert "Traceback" not in res.stderr and "broker" in res.stderr.splitlines()[-1], res.stderr


def test_a_worker_of_another_database_refuses_the_tasks_and_leaves_them_for_the_right_one(
    tmp_path, broker, sqlite_url, start_worker
):
    """Tasks carry their database's deployment id; a worker of another database never eats them."""
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url, "PACKSOLVE_BROKER_URL": broker}
    wrong = start_worker(broker, f"sqlite:///{tmp_path / 'elsewhere.db'}", hostname="wrong@test")
    res = invoke("submit", str(write_pack(tmp_path, 3, ms=5)), "--time-limit", "5", env=env)
    assert res.returncode == 0, res.stderr
    run_id = int(res.stdout.strip().splitlines()[-1])
    wait_until(lambda: "another database" in wrong.log(), 30)
    refusal = next(line for line in wrong.log().splitlines() if "another database" in line)
    assert "elsewhere.db" in refusal and "PACKSOLVE_DATABASE_URL" in refusal
    with session_scope(get_engine(sqlite_url)) as s:
        assert {(a.status, a.tries) for a in s.scalars(select(Attempt))} == {("queued", 0)}
    assert "no live worker serves this run" in invoke("status", str(run_id), env=env).stdout
    start_worker(broker, sqlite_url, hostname="right@test")
    wait_for_run(sqlite_url, run_id, timeout=60)
    with session_scope(get_engine(sqlite_url)) as s:
        assert {(a.status, a.worker) for a in s.scalars(select(Attempt))} == {("solved", "right@test")}


def test_a_killed_pool_process_s_claim_is_taken_over_by_its_redelivery_without_waiting_for_its_lease(
    tmp_path, broker, pg_url, start_worker
):
    """Defect 8's common case (the OOM killer): no scheduler needed, no lease to wait out."""
    import os
    import signal

    env = {"PACKSOLVE_DATABASE_URL": pg_url, "PACKSOLVE_BROKER_URL": broker}
    start_worker(broker, pg_url, hostname="pool@test", concurrency=1)
    res = invoke("submit", str(write_pack(tmp_path, 1, ms=4000)), "--time-limit", "30", env=env)
    assert res.returncode == 0, res.stderr
    run_id = int(res.stdout.strip().splitlines()[-1])
    deadline = time.monotonic() + 30
    holder = None
    while holder is None and time.monotonic() < deadline:
        with session_scope(get_engine(pg_url)) as s:
            holder = s.scalars(select(Attempt.holder).where(Attempt.status == "running")).first()
        time.sleep(0.1)
    assert holder is not None
    os.kill(int(holder.rpartition("/")[2]), signal.SIGKILL)
    wait_for_run(pg_url, run_id, timeout=30)
    with session_scope(get_engine(pg_url)) as s:
        attempt = s.scalars(select(Attempt)).one()
    assert (attempt.status, attempt.tries) == ("solved", 2) and attempt.holder != holder


def test_a_killed_workers_unacked_task_is_cleared_once_its_attempt_is_sent_again(
    tmp_path, pg_url, start_worker
):
    """Redis keeps a killed worker's delivered task for 12 hours; the scheduler clears it."""
    import os
    import signal

    with private_redis() as (url, _restart):
        env = {"PACKSOLVE_DATABASE_URL": pg_url, "PACKSOLVE_BROKER_URL": url, "PACKSOLVE_LEASE_TTL": "2"}
        victim = start_worker(url, pg_url, hostname="victim@test", env={"PACKSOLVE_LEASE_TTL": "2"})
        res = invoke("submit", str(write_pack(tmp_path, 1, ms=3000)), "--time-limit", "20", env=env)
        assert res.returncode == 0, res.stderr
        run_id = int(res.stdout.strip().splitlines()[-1])
        client = redis.Redis.from_url(url)
        wait_until(lambda: client.hlen("unacked"), 30, every=0.1)
        time.sleep(1.0)  # claimed by now
        os.killpg(victim.proc.pid, signal.SIGKILL)
        victim.proc.wait(10)
        assert client.hlen("unacked") == 1  # left behind for the visibility timeout
        time.sleep(2.5)  # the lease lapses
        res = invoke("scheduler", "--once", "--grace", "60", env=env)
        # The same pass that sends the attempt again clears the old task: it would only be skipped.
        assert "requeued 1," in res.stderr and "unacked cleared 1" in res.stderr, res.stderr
        assert client.hlen("unacked") == 0 and client.zcard("unacked_index") == 0
        start_worker(url, pg_url, hostname="heir@test")
        wait_for_run(pg_url, run_id, timeout=60)
        with session_scope(get_engine(pg_url)) as s:
            assert {(a.status, a.worker) for a in s.scalars(select(Attempt))} == {("solved", "heir@test")}
