"""One clock (the database server's), a frozen scheduler that holds no lock for long, `status` that
tells the truth, and the recovery bound the docs state.

Clocks are offset through the test hook packsolve.db.models.CLOCK_OFFSET, in this process or in a
worker or submitter started through tests/support/skewed_clock.py. PostgreSQL only for the clocks:
SQLite serves one machine, whose clock is the only one.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from datetime import timedelta

import pytest
import redis
from sqlalchemy import create_engine, select, text, update

from packsolve.attempt import ClaimVerdict
from packsolve.db import models
from packsolve.db.attempts import ClaimBy
from packsolve.db.models import Attempt, Worker, utcnow
from packsolve.db.runs import RunOptions, create_run, mark_sent
from packsolve.db.session import get_engine, session_scope
from packsolve.levels import make_level
from packsolve.planning import plan_levels
from tests.support.chaos_pack import write_pack
from tests.support.fencing import attempts, claim_levels, scheduler_loop, submit
from tests.support.inprocess import invoke
from tests.support.services import ROOT, child_env, packsolve_cmd
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.redis, pytest.mark.usefixtures("chaos_env")]


def skewed(seconds: float, *args: str) -> list[str]:
    """Return the command line of `packsolve ARGS` on a machine whose clock is off by seconds."""
    return [sys.executable, "-m", "tests.support.skewed_clock", f"{seconds:g}", *args]


def db_time(db: str):
    with session_scope(get_engine(db)) as s:
        return s.execute(select(text("now()"))).scalar_one()


@pytest.mark.parametrize("offset", [-30, 30, 600])
def test_a_claim_takes_its_time_from_the_database_server_not_the_workers_clock(offset, pg_url, monkeypatch):
    """Item 13: a worker off by 30 s took over a healthy worker's live claim (ahead), or set deadlines
    already past (behind); one 600 s ahead, a bound of its own."""
    engine = get_engine(pg_url)
    levels = [make_level(f"l{i}", {"kind": "coins", "notes": [1, 2], "target": 3 + i}) for i in range(2)]
    with session_scope(engine) as s:
        run_id = create_run(s, plan_levels(levels, None).attempts, RunOptions("distributed", max_tries=3))
        mark_sent(s, run_id)
    h1, h2 = (lv.hash for lv in levels)
    with session_scope(engine) as s:  # a healthy worker: its lease runs 20 s more in the server's clock
        s.add(Worker(name="a@host/1", host="a@host", lease_until=db_time(pg_url) + timedelta(seconds=20)))
    with engine.begin() as c:
        assert claim_levels(c, run_id, [h1], ClaimBy("a@host", 3, 10, "a@host/1")).verdicts == {
            h1: ClaimVerdict.RUN
        }
    monkeypatch.setattr(models, "CLOCK_OFFSET", timedelta(seconds=offset), raising=False)
    with engine.begin() as c:  # a redelivery to a worker whose clock is off
        assert claim_levels(c, run_id, [h1], ClaimBy("b@host", 3, 10, "b@host/2")).verdicts == {
            h1: ClaimVerdict.SKIP
        }
        assert claim_levels(c, run_id, [h2], ClaimBy("b@host", 3, 10, "b@host/2")).verdicts == {
            h2: ClaimVerdict.RUN
        }
    server = db_time(pg_url)
    with session_scope(engine) as s:
        row = s.scalars(select(Attempt).where(Attempt.level_hash == h2, Attempt.run_id == run_id)).one()
    assert abs((row.deadline - server).total_seconds() - 10) < 5, (row.deadline, server)


@pytest.mark.parametrize("offset", [-30, 30])
def test_a_worker_whose_clock_is_off_solves_every_level_once(offset, tmp_path, any_broker, pg_url):
    """Item 13: a worker 30 s behind used to lose every level after 5 tries (its deadlines were past)."""
    env = {"PACKSOLVE_DATABASE_URL": pg_url, "PACKSOLVE_BROKER_URL": any_broker.url}
    log = tmp_path / "worker.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            skewed(offset, "worker", "-c", "1", "-n", "skewed@test", "-l", "INFO"),
            env=child_env(env),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=ROOT,
        )
    try:
        assert wait_until(lambda: " ready." in log.read_text(), 60)
        run_id = submit(env, str(write_pack(tmp_path / "p", 8, ms=1000)), "--time-limit", "2")
        with scheduler_loop(env, grace=1, interval=1):
            from tests.support.services import wait_for_run

            wait_for_run(pg_url, run_id, timeout=90)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(20)
    assert {(a.status, a.tries, a.requeues) for a in attempts(pg_url, run_id)} == {("solved", 1, 0)}


def test_a_submitter_600_s_ahead_does_not_delay_resending_a_lost_queue(tmp_path, any_broker, pg_url):
    """Item 13: `sent_at` came from the submitter's clock; the scheduler waited 600 s to resend."""
    env = {"PACKSOLVE_DATABASE_URL": pg_url, "PACKSOLVE_BROKER_URL": any_broker.url}
    res = subprocess.run(
        skewed(600, "submit", str(write_pack(tmp_path, 4, ms=5)), "--time-limit", "5"),
        env=child_env(env),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert res.returncode == 0, res.stderr
    any_broker.lose()
    time.sleep(1.5)  # past the scheduler's send_settle, a second here (default 5 s)
    out = invoke("scheduler", "--once", "--grace", "0", env={**env, "PACKSOLVE_SEND_SETTLE": "1"})
    assert out.returncode == 0 and "requeued 4," in out.stderr, out.stderr


def test_a_scheduler_frozen_in_its_take_back_transaction_does_not_hold_the_attempts(tmp_path, broker, pg_url):
    """Item 14: a second scheduler skipped the rows the frozen one had locked: 30-40 s against a 5 s
    bound, or hours behind a dead link. Short transactions, and the server ends an idle one."""
    env = {"PACKSOLVE_DATABASE_URL": pg_url, "PACKSOLVE_BROKER_URL": broker}
    levels = 1000
    run_id = submit(env, str(write_pack(tmp_path, levels, ms=1)), "--time-limit", "5", "--chunk-size", "50")
    engine = get_engine(pg_url)
    with session_scope(engine) as s:  # every attempt held by a worker process that died
        s.add(Worker(name="dead@host/1", host="dead@host", lease_until=utcnow() - timedelta(seconds=5)))
        s.execute(update(Attempt).where(Attempt.run_id == run_id).values(holder="dead@host/1"))
    redis.Redis.from_url(broker).delete(os.environ["PACKSOLVE_QUEUE"])
    first = subprocess.Popen(
        packsolve_cmd("scheduler", "--once", "--grace", "60"),
        env=child_env(env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    watcher = create_engine(pg_url, isolation_level="AUTOCOMMIT")
    dbname = pg_url.rsplit("/", 1)[1]

    def inside_take_back() -> bool:
        with watcher.connect() as conn:
            return bool(
                conn.execute(
                    text(
                        "SELECT count(*) FROM pg_stat_activity WHERE datname = :d AND xact_start IS NOT NULL "
                        "AND query LIKE 'UPDATE attempts SET status%' AND pid <> pg_backend_pid()"
                    ),
                    {"d": dbname},
                ).scalar()
            )

    try:
        assert wait_until(inside_take_back, 60, every=0.005)
        first.send_signal(signal.SIGSTOP)
        started = time.monotonic()
        with scheduler_loop(env, grace=60, interval=1):
            # Soon, not never: the frozen pass's locks must not hold the attempts (the bound only
            # has to outlast a loaded machine's scheduler start and pass).
            taken = wait_until(lambda: all(a.requeues >= 1 for a in attempts(pg_url, run_id)), 90, every=0.5)
            took = time.monotonic() - started
            if not taken:
                print("requeued:", sum(a.requeues >= 1 for a in attempts(pg_url, run_id)), "of", levels)
    finally:
        first.send_signal(signal.SIGCONT)
        first.kill()
        first.wait(10)
        watcher.dispose()
    assert taken, "the second scheduler did not take back what the frozen one had locked within 90 s"
    print(f"\ntaken back by the second scheduler {took:.1f} s after the first froze")
    rows = attempts(pg_url, run_id)
    assert {a.requeues for a in rows} == {1} and {a.status for a in rows} == {"queued"}


def test_status_says_who_runs_a_run(tmp_path, broker, pg_url, start_worker):
    """Item 16: no "no live worker" while an idle worker runs; no ETA for levels nobody runs."""
    env = {"PACKSOLVE_DATABASE_URL": pg_url, "PACKSOLVE_BROKER_URL": broker}
    run_id = submit(env, str(write_pack(tmp_path, 4, ms=5)), "--time-limit", "5")
    redis.Redis.from_url(broker).delete(os.environ["PACKSOLVE_QUEUE"])  # its tasks are gone
    worker = start_worker(broker, pg_url, "idle@test")
    assert wait_until(lambda: "no live worker" not in invoke("status", str(run_id), env=env).stdout, 20)
    worker.stop()
    now = utcnow()
    with session_scope(get_engine(pg_url)) as s:  # one solved; the rest held by a process now dead
        s.add(Worker(name="dead@host/1", host="dead@host", lease_until=now - timedelta(seconds=5)))
        first, *rest = s.scalars(select(Attempt).where(Attempt.run_id == run_id).order_by(Attempt.seq))
        first.status, first.wall_s, first.started_at, first.finished_at = "solved", 1.0, now, now
        for a in rest:
            a.status, a.holder, a.tries, a.started_at = "running", "dead@host/1", 1, now
    out = invoke("status", str(run_id), env=env).stdout
    assert "eta 0m" not in out and "eta —" in out, out
    assert "no live worker serves this run" in out, out


def test_a_pass_takes_back_a_dead_workers_claims_before_it_waits_on_the_broker(tmp_path, broker, pg_url):
    """Item 17: each pass waited result_settle (1 s) for the broker before taking back a dead worker's
    claims (up to 5.6 s against a 5 s bound). Now a pass takes them back first, and passes start every
    --interval whatever each takes: the bound is the lease plus one interval (plus the pass's queries).

    Measured in the database's clock: from just before the pass to its take-back transaction."""
    from packsolve.queue.app import Cluster
    from packsolve.scheduler import reconcile
    from packsolve.settings import current

    env = {"PACKSOLVE_DATABASE_URL": pg_url, "PACKSOLVE_BROKER_URL": broker}
    run_id = submit(env, str(write_pack(tmp_path, 3, ms=5)), "--time-limit", "0", "--chunk-size", "3")
    redis.Redis.from_url(broker).delete(os.environ["PACKSOLVE_QUEUE"])  # delivered: the queue is empty
    engine = get_engine(pg_url)
    with session_scope(engine) as s:  # one claimed, two held, by a process whose lease just lapsed
        s.add(
            Worker(name="dead@host/1", host="dead@host", lease_until=db_time(pg_url) - timedelta(seconds=1))
        )
        first, *rest = s.scalars(select(Attempt).where(Attempt.run_id == run_id).order_by(Attempt.seq))
        first.status, first.tries, first.claims, first.holder = "running", 1, 1, "dead@host/1"
        for a in rest:
            a.holder = "dead@host/1"
    began = db_time(pg_url)
    # A broker wait long enough that a pass which waited first is told from one that took back first,
    # however long a loaded machine takes over the pass's own queries.
    cluster = Cluster.of(replace(current(), result_settle=8.0), broker=broker)
    done = reconcile(engine, cluster, grace_s=60)
    assert done.requeued == 3
    delay = (min(a.queued_at for a in attempts(pg_url, run_id)) - began).total_seconds()
    assert delay < cluster.settings.result_settle, delay
