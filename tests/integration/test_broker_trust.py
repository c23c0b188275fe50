"""What a broker writer cannot do: steer or kill workers through remote control, choose a task's kind
or its cap on tries, restart solvers by replaying a finished run's tasks, or stop the scheduler with
a crafted entry in Redis's unacknowledged set.

Real `packsolve worker` and `packsolve scheduler` processes on Redis and RabbitMQ (a vhost of the
test's own), tasks put on the queue by hand as a broker writer would (tests/support/forged.py).
"""

from __future__ import annotations

import json
import re
import time
import uuid

import pytest
import redis
from sqlalchemy import update

from packsolve.db.models import Attempt
from packsolve.db.session import get_engine, session_scope
from tests.support.chaos_pack import write_pack as write_chaos_pack
from tests.support.fencing import attempts, final_count, lease, running_count, scheduler_loop, submit
from tests.support.forged import publish_json, sent_bodies
from tests.support.services import private_redis, run_cli, wait_for_run
from tests.support.waiting import wait_until

COINS = [{"kind": "coins", "notes": [9, 1, 6, 3], "target": t} for t in (10, 12, 15, 18, 19, 40)]
KEY = "a-cluster-key-of-the-test"


def control(broker: str):
    """A bare Celery app on the broker: what anyone holding its URL can send commands with."""
    from celery import Celery

    return Celery("outsider", broker=broker)


def task_ids(worker) -> list[str]:
    """The ids of the tasks the worker received, from its log (Celery says each at INFO)."""
    return re.findall(r"packsolve\.attempt\[([0-9a-f-]{36})\] received", worker.log())


def test_without_remote_control_enabled_a_broker_writer_can_neither_list_nor_kill_running_tasks(
    tmp_path, any_broker, sqlite_url, start_worker, chaos_env
):
    """Item 3: inspect() gets no answer, revoke(terminate=True, SIGKILL) kills nothing."""
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url, "PACKSOLVE_BROKER_URL": any_broker.url}
    name = f"w-{uuid.uuid4().hex[:8]}@test"  # Redis carries commands to every worker on it: ask this one
    worker = start_worker(any_broker.url, sqlite_url, name)
    run_id = submit(env, str(write_chaos_pack(tmp_path, 1, ms=3000)), "--heuristic", "sleep")
    assert wait_until(lambda: running_count(sqlite_url, run_id) == 1, 60.0)
    outsider = control(any_broker.url)
    assert outsider.control.inspect(destination=[name], timeout=2).active() is None
    assert outsider.control.ping(destination=[name], timeout=1) == []
    [task_id] = task_ids(worker)
    outsider.control.revoke(task_id, terminate=True, signal="SIGKILL")
    wait_for_run(sqlite_url, run_id, timeout=60)
    [attempt] = attempts(sqlite_url, run_id)
    assert (attempt.status, attempt.tries) == ("solved", 1)
    assert "Terminating" not in worker.log() and "Traceback" not in worker.log()


def test_a_task_killed_on_request_with_remote_control_enabled_costs_no_try(
    tmp_path, any_broker, sqlite_url, start_worker, chaos_env
):
    """Item 3: a trusted broker may revoke; the kill the worker performs on request charges no try.

    At --max-tries 1 a charged kill would leave each level `lost`.
    """
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url, "PACKSOLVE_BROKER_URL": any_broker.url}
    name = f"w-{uuid.uuid4().hex[:8]}@test"
    on = {"PACKSOLVE_WORKER_REMOTE_CONTROL": "1", "PACKSOLVE_LEASE_TTL": "4"}
    worker = start_worker(any_broker.url, sqlite_url, name, env=on)
    assert "remote control is on" in worker.log()
    # 8 s a level: long enough for a loaded machine's inspect (a second or more a call) to see each
    # task running before it ends (at 3 s one ended unseen at load 12).
    pack = str(write_chaos_pack(tmp_path, 2, ms=8000))
    run_id = submit(env, pack, "--heuristic", "sleep", "--max-tries", "1", "--chunk-size", "1")
    outsider = control(any_broker.url)
    killed: set[str] = set()  # the levels whose task was killed, once each
    with scheduler_loop(env, grace=1, interval=1):
        deadline = time.monotonic() + 60
        while len(killed) < 2 and time.monotonic() < deadline:
            active = outsider.control.inspect(destination=[name], timeout=1).active() or {}
            for task in active.get(name, []):
                level = task["args"][0]["items"][0]["level"]
                if level not in killed:
                    killed.add(level)
                    outsider.control.revoke(task["id"], terminate=True, signal="SIGKILL")
        assert len(killed) == 2, worker.log()
        wait_for_run(sqlite_url, run_id, timeout=90)
    rows = attempts(sqlite_url, run_id)
    assert [(a.status, a.tries) for a in rows] == [("solved", 1), ("solved", 1)], [a.message for a in rows]
    assert worker.log().count("killed on request") == 2, worker.log()


def test_a_queued_task_resent_with_another_kind_or_cap_runs_as_the_database_says(
    tmp_path, any_broker, sqlite_url, start_worker
):
    """Item 6: no key; tasks re-sent as `sliding` (which has `plain` too) and with max_tries 1.

    The altered kinds are refused (their levels wait, and the scheduler sends them again); the
    attempts re-sent with a cap of 1, each tried once already, run under the run's cap of 3.
    """
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url, "PACKSOLVE_BROKER_URL": any_broker.url}
    pack = tmp_path / "pack.jsonl"
    pack.write_text("".join(json.dumps(lv) + "\n" for lv in COINS))
    run_id = submit(env, str(pack), "--heuristic", "plain", "--chunk-size", "1", "--max-tries", "3")
    any_broker.lose()  # the broker writer takes the queued tasks...
    bodies = sent_bodies(sqlite_url, run_id)
    hashes = [b["items"][0]["level"] for b in bodies]
    with session_scope(get_engine(sqlite_url)) as s:  # the last three met one worker's death already
        s.execute(update(Attempt).where(Attempt.level_hash.in_(hashes[3:])).values(tries=1))
    for body in bodies[:3]:
        body["items"][0]["spec"]["kind"] = "sliding"
    for body in bodies[3:]:
        body["max_tries"] = 1
    for body in bodies:  # ... and sends them back altered
        publish_json(any_broker.url, body)
    worker = start_worker(any_broker.url, sqlite_url, "w1@test")
    assert wait_until(lambda: final_count(sqlite_url, run_id) == 3, 60.0), worker.log()
    assert wait_until(lambda: any_broker.depth() == 0, 60.0)
    rows = {a.level_hash: a for a in attempts(sqlite_url, run_id)}
    assert {rows[h].status for h in hashes[:3]} == {"queued"}, [rows[h].message for h in hashes]
    assert [(rows[h].status, rows[h].tries) for h in hashes[3:]] == [("solved", 2)] * 2 + [("no_solution", 2)]
    assert "is a coins level, the task says 'sliding'" in worker.log()
    # The refused ones are sent again, as the database has them.
    with scheduler_loop(env, grace=1, interval=1):
        wait_for_run(sqlite_url, run_id, timeout=90)
    statuses = sorted(a.status for a in attempts(sqlite_url, run_id))
    assert statuses == sorted(["no_solution", "solved", "solved", "solved", "solved", "solved"])
    assert "Traceback" not in worker.log()


def test_a_finished_runs_signed_tasks_replayed_start_no_solver(
    tmp_path, any_broker, sqlite_url, start_worker, chaos_env
):
    """Item 13: the bodies a signed cluster sent, sent again once the run is finished, run nothing."""
    from packsolve.db import task_match

    started = tmp_path / "started.txt"
    keyed = {"PACKSOLVE_TASK_KEY": KEY}
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url, "PACKSOLVE_BROKER_URL": any_broker.url, **keyed}
    worker = start_worker(any_broker.url, sqlite_url, "w1@test", env={**keyed, "CHAOS_STARTED": str(started)})
    pack = str(write_chaos_pack(tmp_path, 6, ms=0))
    run_id = submit(env, pack, "--heuristic", "mark", "--chunk-size", "1")
    wait_for_run(sqlite_url, run_id, timeout=90)
    assert sorted(started.read_text().split()) == [str(i) for i in range(6)]  # each solved once: tiny ones
    time.sleep(task_match.KEPT_S + 0.5)  # the worker trusts its last read of the run this long
    for body in sent_bodies(sqlite_url, run_id, KEY):
        publish_json(any_broker.url, body)
    # A run sent after the replays: once it is finished, the worker has taken every replay before it.
    after = submit(env, str(write_chaos_pack(tmp_path / "after", 2, ms=0)), "--heuristic", "sleep")
    wait_for_run(sqlite_url, after, timeout=90)
    assert sorted(started.read_text().split()) == [str(i) for i in range(6)], "a replay started a solver"
    assert worker.log().count(f"run {run_id} level ") == 6  # one skip each
    assert "skip (already solved)" in worker.log()
    assert [(a.status, a.tries) for a in attempts(sqlite_url, run_id)] == [("solved", 1)] * 6
    assert "Traceback" not in worker.log()


# A redis-server of its own: the crafted entries would reach every scheduler on a shared one.
@pytest.mark.redis
def test_crafted_entries_in_redis_unacked_set_are_skipped_and_the_dead_workers_claims_taken_back(
    tmp_path, sqlite_url
):
    """Item 4: deeply nested JSON (RecursionError) and a tag that is no UTF-8 (UnicodeDecodeError)."""
    from packsolve.queue.brokerscan import UNACKED

    with private_redis() as (broker, _):
        env = {
            "PACKSOLVE_DATABASE_URL": sqlite_url,
            "PACKSOLVE_BROKER_URL": broker,
            "PACKSOLVE_QUEUE": "packsolve",
        }
        pack = tmp_path / "pack.jsonl"
        pack.write_text("".join(json.dumps(lv) + "\n" for lv in COINS))
        run_id = submit(env, str(pack), "--heuristic", "plain", "--chunk-size", "1")
        client = redis.Redis.from_url(broker)
        [raw, *_] = client.lrange("packsolve", 0, -1)
        client.delete("packsolve")  # its worker took them all, then died holding them
        engine = get_engine(sqlite_url)
        with session_scope(engine) as s:
            s.execute(
                update(Attempt)
                .where(Attempt.run_id == run_id)
                .values(status="running", holder="dead@test/1", worker="dead@test", tries=1, claims=1)
            )
        lease(engine, "dead@test/1", -5)  # its lease lapsed 5 s ago
        deep = "[" * 200_000 + "]" * 200_000
        client.hset(UNACKED, "deep", deep)
        client.hset(UNACKED, b"\xff\xfe-not-utf8", json.dumps([json.loads(raw), "packsolve", "packsolve"]))
        for _ in range(2):  # a scheduler started again meets them again
            res = run_cli("scheduler", "--once", env=env)
            assert res.returncode == 0, res.stderr
            assert "Traceback" not in res.stderr
        assert res.stderr.count("unreadable entry") == 2, res.stderr  # once each per scheduler
        assert {a.status for a in attempts(sqlite_url, run_id)} == {"queued"}
        assert {a.requeues for a in attempts(sqlite_url, run_id)} == {1}


def test_the_check_takes_the_kind_the_cap_and_the_state_from_the_database_never_the_task(db_url):
    """Items 6 and 13 without a broker: what Admission.matching returns for altered and replayed tasks."""
    from dataclasses import replace

    from packsolve.db.models import Run
    from packsolve.db.runs import RunOptions, create_run
    from packsolve.execution import AttemptSpec, Limits
    from packsolve.execution.spec import PendingAttempt
    from packsolve.levels import make_level
    from packsolve.planning import plan_levels
    from packsolve.queue.admission import Admission
    from packsolve.queue.protocol import Task, TaskKeys

    engine = get_engine(db_url)
    levels = [make_level(f"l{i}", lv) for i, lv in enumerate(COINS)]
    options = RunOptions(mode="distributed", heuristic="plain", time_limit=5.0, max_tries=3)
    with session_scope(engine) as s:
        run_id = create_run(s, plan_levels(levels, "plain").attempts, options)
    good = [PendingAttempt(lv.hash, AttemptSpec("coins", "plain", lv.data, Limits(5.0))) for lv in levels]

    def matching(items, max_tries: int = 5) -> Task:
        return Admission({}, TaskKeys(), engine).matching(engine, Task(run_id, max_tries, tuple(items), "d"))

    checked = matching(good, max_tries=1)
    assert [p.level_hash for p in checked.items] == [lv.hash for lv in levels]
    assert checked.max_tries == 3  # the run's cap, not the task's 1
    sliding = [replace(p, spec=replace(p.spec, kind="sliding")) for p in good[:2]]
    assert matching([*sliding, good[2]]).items == (good[2],)
    with session_scope(engine) as s:
        s.execute(update(Attempt).where(Attempt.level_hash == good[0].level_hash).values(status="solved"))
    assert [p.level_hash for p in matching(good).items] == [p.level_hash for p in good[1:]]
    with session_scope(engine) as s:
        s.execute(update(Attempt).where(Attempt.run_id == run_id).values(status="solved"))
        s.get(Run, run_id).finished_at = s.get(Run, run_id).created_at
    assert matching(good).items == ()
    engine.dispose()
