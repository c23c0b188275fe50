"""Chaos with real processes on both brokers: kill -9 workers, lose the queue, kill database connections.

Each test ends by auditing the run's export: one final record per level, none
lost, none duplicated. The figures are printed (pytest -s); docs/benchmarks.md publishes them.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import redis

from packsolve.settings import DEFAULT_SEND_SETTLE_S
from tests.support.chaos_pack import audit, write_pack
from tests.support.services import (
    amqp_depth,
    child_env,
    packsolve_cmd,
    private_redis,
    purge_amqp_queue,
    rabbitmq_vhost,
    run_cli,
    wait_for_run,
)
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("chaos_env")]


def submit(env: dict[str, str], *args: str) -> int:
    res = run_cli("submit", *args, env=env)
    assert res.returncode == 0, res.stderr
    return int(res.stdout.strip().splitlines()[-1])


def exported(env: dict[str, str], run_id: int) -> list[dict]:
    res = run_cli("export", str(run_id), "--format", "jsonl", env=env)
    assert res.returncode == 0, res.stderr
    return [json.loads(line) for line in res.stdout.splitlines()]


@contextmanager
def scheduler_loop(env: dict[str, str], grace: float, interval: float = 1.0) -> Iterator[subprocess.Popen]:
    """Run `packsolve scheduler` in the background for the duration of the block."""
    with tempfile.NamedTemporaryFile("w+", prefix="packsolve-scheduler-", suffix=".log", delete=False) as log:
        proc = subprocess.Popen(
            packsolve_cmd("scheduler", "--grace", str(grace), "--interval", str(interval)),
            env=child_env(env),
            stdout=subprocess.DEVNULL,
            stderr=log,
            text=True,
        )
        proc.log_path = log.name  # type: ignore[attr-defined]
        try:
            yield proc
        finally:
            proc.terminate()
            proc.wait(20)


def report(name: str, figures: dict) -> None:
    print(f"\nCHAOS {name}: {json.dumps(figures, sort_keys=True)}")


class Broker:
    """A broker of this test's own: its URL, how to make it lose its queue, how many tasks wait."""

    def __init__(self, url: str, lose: Callable[[], None], depth: Callable[[], int]) -> None:
        self.url, self.lose, self.depth = url, lose, depth


def _queue() -> str:
    return os.environ.get("PACKSOLVE_QUEUE") or "packsolve"


@pytest.fixture(params=["redis", pytest.param("rabbitmq", marks=pytest.mark.rabbitmq)])
def own_broker(request) -> Iterator[Broker]:
    """Redis of this test's own (losing its queue: restarted without persistence) or a RabbitMQ vhost
    of its own (losing its queue: purged); chaos must not share a queue with anything else."""
    if request.param == "redis":
        with private_redis() as (url, restart):
            yield Broker(url, restart, lambda: int(redis.Redis.from_url(url).llen(_queue())))
    else:
        with rabbitmq_vhost() as url:
            yield Broker(
                url, lambda: purge_amqp_queue(url, _queue()) and None, lambda: amqp_depth(url, _queue())
            )


def test_kill_minus_9_one_of_two_workers_repeatedly_leaves_exactly_one_final_result_per_level(
    tmp_path, own_broker, pg_url, start_worker
):
    broker = own_broker.url
    env = {"PACKSOLVE_DATABASE_URL": pg_url, "PACKSOLVE_BROKER_URL": broker}
    levels = 200
    pack = write_pack(tmp_path, levels, ms=(40, 240), seed=1)
    start_worker(broker, pg_url, "steady@test", concurrency=2)
    victim = start_worker(broker, pg_url, "victim@test", concurrency=2)
    started = time.monotonic()
    run_id = submit(env, str(pack), "--time-limit", "3")
    kills = 0
    with scheduler_loop(env, grace=1):
        for _ in range(4):
            time.sleep(2.5)
            # The whole process group: Celery's main process, its pool and the solver children.
            os.killpg(victim.proc.pid, signal.SIGKILL)
            victim.proc.wait(10)
            kills += 1
            victim = start_worker(broker, pg_url, "victim@test", concurrency=2)
        wait_for_run(pg_url, run_id, timeout=150)
    records = exported(env, run_id)
    figures = audit(records, levels)
    figures.update(kills=kills, seconds=round(time.monotonic() - started, 1))
    for r in records:
        if r["status"] != "solved":
            print("not solved:", r["level"], r["status"], r["tries"], r["message"])
    report("kill -9", figures)
    assert figures["records"] == levels and figures["final"] == levels
    assert figures["lost"] == 0 and figures["duplicated"] == 0
    assert figures["statuses"] == {"solved": levels}
    assert figures["max_tries"] >= 2  # the kills did interrupt attempts, which were run again


def test_a_broker_that_loses_its_queue_then_scheduler_once_finishes_every_level(
    tmp_path, own_broker, pg_url, start_worker
):
    """Redis restarted without persistence, or RabbitMQ's queue purged: the scheduler sends the rest."""
    levels = 80
    broker = own_broker.url
    env = {"PACKSOLVE_DATABASE_URL": pg_url, "PACKSOLVE_BROKER_URL": broker}
    worker = start_worker(broker, pg_url, "w1@test", concurrency=2)
    started = time.monotonic()
    # About 8 s of work on the worker's two processes: on a loaded machine the submit command can
    # take seconds to return after its last task went out, and the queue must still hold tasks
    # when the broker loses it. So it is lost as soon as the worker is seen busy, not after a sleep.
    run_id = submit(env, str(write_pack(tmp_path, levels, ms=(100, 300), seed=2)), "--time-limit", "3")
    assert wait_until(lambda: _begun(pg_url, run_id) > 0, 60), "the worker never began"
    assert own_broker.depth() > 0  # tasks still queued when the broker loses them
    own_broker.lose()
    assert own_broker.depth() == 0
    # The worker reconnects and finishes what it held; what it held of the lost tasks it gives
    # back (holder RELEASED) on its next lease renewal. One pass after that finds everything; a
    # pass while the worker still holds a chunk leaves that chunk to the next pass (the service
    # runs them every interval; this test makes one).
    time.sleep(4.0)
    assert wait_until(lambda: _held_by_workers(pg_url, run_id) == 0, 60), "the worker never let go"
    # An empty queue means lost tasks only for attempts sent over send_settle ago (a task sent just
    # now may not be counted in the queue yet): the one pass below must come after that.
    time.sleep(max(0.0, DEFAULT_SEND_SETTLE_S + 1.0 - _seconds_since_sent(pg_url, run_id)))
    res = run_cli("scheduler", "--once", env=env)  # the default grace: no tuning needed
    assert res.returncode == 0, res.stderr
    requeued = int(res.stderr.split("requeued ")[1].split(",")[0])
    wait_for_run(pg_url, run_id, timeout=90)
    figures = audit(exported(env, run_id), levels)
    figures.update(restarts=1, requeued=requeued, seconds=round(time.monotonic() - started, 1))
    report("broker loses its queue", figures)
    assert worker.proc.poll() is None
    assert requeued > 0
    assert figures["records"] == levels and figures["final"] == levels
    assert figures["lost"] == 0 and figures["duplicated"] == 0
    assert figures["statuses"] == {"solved": levels}


def test_a_worker_whose_ack_fails_on_a_restarted_redis_goes_on_taking_tasks(tmp_path, pg_url, start_worker):
    """Redis dies while the worker's only slot runs a task: the task's ack then fails on the dead
    connection. The worker must still free that slot, notice the lost connection and consume what
    is sent to the restarted Redis, not wait forever for credit a failed ack never gave back."""
    with private_redis() as (broker, restart):
        env = {"PACKSOLVE_DATABASE_URL": pg_url, "PACKSOLVE_BROKER_URL": broker}
        # One process, one task at a time: while it runs the worker has no credit and so does not
        # listen on its connection to Redis, whose death it first hears of through the ack.
        start_worker(broker, pg_url, "w1@test", concurrency=1)
        first = submit(env, str(write_pack(tmp_path / "a", 1, ms=1000)), "--time-limit", "30")
        assert wait_until(lambda: _begun(pg_url, first) > 0, 60), "the worker never began"
        # SIGKILL, and started again (empty) only once the level has ended and its ack has failed.
        restart(down_s=8)
        assert _count(pg_url, _FINAL_SQL, first) == 1, "the level did not end while Redis was down"
        second = submit(env, str(write_pack(tmp_path / "b", 3, ms=50)), "--time-limit", "30")
        wait_for_run(pg_url, second, timeout=60)
        assert {r["status"] for r in exported(env, second)} == {"solved"}


def test_one_pass_sends_again_what_a_worker_gave_back_and_what_the_broker_lost(tmp_path, own_broker, pg_url):
    """The tasks a pass sends again for attempts a worker gave back must not hide that the queue it
    found was empty: the same pass also sends the attempts whose tasks the broker lost."""
    from sqlalchemy import create_engine, text

    from packsolve.db.workers import RELEASED

    env = {"PACKSOLVE_DATABASE_URL": pg_url, "PACKSOLVE_BROKER_URL": own_broker.url}
    env["PACKSOLVE_SEND_SETTLE"] = "1"
    run_id = submit(env, str(write_pack(tmp_path, 10, ms=1)), "--chunk-size", "1")  # no worker: 10 queued
    own_broker.lose()
    assert own_broker.depth() == 0
    engine = create_engine(pg_url)
    try:
        with engine.begin() as conn:
            # As a worker does with the attempts of a lost task it held: it gives them back.
            conn.execute(
                text("UPDATE attempts SET holder = :released WHERE run_id = :run AND seq < 4"),
                {"released": RELEASED, "run": run_id},
            )
    finally:
        engine.dispose()
    sent = "SELECT count(*) FROM runs WHERE id = :run AND sent_at < now() - interval '1.5 seconds'"
    assert wait_until(lambda: _count(pg_url, sent, run_id) == 1, 30)  # past the send settle
    res = run_cli("scheduler", "--once", env=env)
    assert res.returncode == 0, res.stderr
    assert int(res.stderr.split("requeued ")[1].split(",")[0]) == 10, res.stderr
    assert own_broker.depth() == 10


_FINAL_SQL = "SELECT count(*) FROM attempts WHERE run_id = :run AND finished_at IS NOT NULL"


def _begun(url: str, run_id: int) -> int:
    """Attempts of the run a worker has begun (running, or final already)."""
    return _count(url, "SELECT count(*) FROM attempts WHERE run_id = :run AND started_at IS NOT NULL", run_id)


def _seconds_since_sent(url: str, run_id: int) -> float:
    """Return how long ago, by the database's clock, the run was sent (whole seconds, rounded down)."""
    return _count(url, "SELECT FLOOR(EXTRACT(EPOCH FROM now() - sent_at)) FROM runs WHERE id = :run", run_id)


def _held_by_workers(url: str, run_id: int) -> int:
    """Pending attempts of the run that a worker holds (claimed or in a chunk), not given back."""
    from packsolve.db.tables import PENDING_VALUES
    from packsolve.db.workers import RELEASED

    sql = (
        "SELECT count(*) FROM attempts WHERE run_id = :run AND status = ANY(:pending) "
        "AND holder IS NOT NULL AND holder <> :released"
    )
    return _count(url, sql, run_id, pending=list(PENDING_VALUES), released=RELEASED)


def _count(url: str, sql: str, run_id: int, **params: object) -> int:
    """Return the count one SQL statement reads, through a connection of its own."""
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return int(conn.execute(text(sql), {"run": run_id, **params}).scalar_one())
    finally:
        engine.dispose()


def test_killed_database_connections_mid_run_workers_recover_and_nothing_is_lost(
    tmp_path, own_broker, pg_url, start_worker
):
    broker = own_broker.url
    from sqlalchemy import create_engine, text

    env = {"PACKSOLVE_DATABASE_URL": pg_url, "PACKSOLVE_BROKER_URL": broker}
    levels = 120
    workers = [start_worker(broker, pg_url, f"w{i}@test", concurrency=2) for i in (1, 2)]
    started = time.monotonic()
    run_id = submit(env, str(write_pack(tmp_path, levels, ms=(20, 120), seed=3)), "--time-limit", "3")
    dbname = pg_url.rsplit("/", 1)[1]
    killer = create_engine(pg_url.rsplit("/", 1)[0] + "/postgres", isolation_level="AUTOCOMMIT")
    terminated = 0
    rounds = 0
    stop = threading.Event()

    def kill_connections() -> None:
        nonlocal terminated, rounds
        while not stop.is_set():
            with killer.connect() as conn:
                n = conn.execute(
                    text(
                        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                        "WHERE datname = :db AND pid <> pg_backend_pid()"
                    ),
                    {"db": dbname},
                ).scalar()
            terminated += n or 0
            rounds += 1
            stop.wait(0.7)

    t = threading.Thread(target=kill_connections, daemon=True)
    with scheduler_loop(env, grace=5, interval=0.5) as scheduler:  # its connections die too
        t.start()
        time.sleep(8)
        stop.set()
        t.join(10)
        killer.dispose()
        wait_for_run(pg_url, run_id, timeout=120)
        assert scheduler.poll() is None, "the scheduler must outlive the incident"
    scheduler_failures = Path(scheduler.log_path).read_text().count("pass failed")
    figures = audit(exported(env, run_id), levels)
    retries = sum(w.log().count("database call failed") for w in workers)
    figures.update(
        terminate_rounds=rounds,
        backends_terminated=terminated,
        worker_db_retries=retries,
        scheduler_failed_passes=scheduler_failures,
        seconds=round(time.monotonic() - started, 1),
    )
    report("pg_terminate_backend", figures)
    assert terminated > 0
    assert all(w.proc.poll() is None for w in workers)
    assert figures["records"] == levels and figures["final"] == levels
    assert figures["lost"] == 0 and figures["duplicated"] == 0
    assert figures["statuses"] == {"solved": levels}
