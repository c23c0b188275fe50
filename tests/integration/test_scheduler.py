"""`packsolve scheduler`, cancel and submit order, against real Redis, workers and databases."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from datetime import timedelta
from pathlib import Path

import pytest
import redis
from sqlalchemy import select, update

from packsolve.db.models import Attempt, Run, Worker, utcnow
from packsolve.db.session import get_engine, session_scope
from packsolve.runstate import ShownState
from tests.support.chaos_pack import write_pack
from tests.support.inprocess import invoke
from tests.support.services import child_env, packsolve_cmd, wait_for_run

pytestmark = pytest.mark.usefixtures("chaos_env")


def submit(env: dict[str, str], *args: str) -> int:
    res = invoke("submit", *args, env=env)
    assert res.returncode == 0, res.stderr
    return int(res.stdout.strip().splitlines()[-1])


def reconcile_once(env: dict[str, str], grace: float = 0) -> str:
    res = invoke("scheduler", "--once", "--grace", str(grace), env=env)
    assert res.returncode == 0, res.stderr
    return res.stderr


def attempts(db: str, run_id: int) -> list[Attempt]:
    with session_scope(get_engine(db)) as session:
        return list(session.scalars(select(Attempt).where(Attempt.run_id == run_id).order_by(Attempt.seq)))


def queue_name() -> str:
    return os.environ.get("PACKSOLVE_QUEUE") or "packsolve"


def queued_messages(broker: str) -> int:
    """Return how many attempts the tasks waiting in this test's queue carry."""
    return len(_queue_order(broker))


def forget_queue(broker: str) -> None:
    """Drop this test's queue, as a broker restarted without persistence does."""
    redis.Redis.from_url(broker).delete(queue_name())


def test_queued_attempts_whose_tasks_the_broker_lost_are_requeued_once_and_then_run(
    db_url, tmp_path, broker, start_worker
):
    env = {"PACKSOLVE_DATABASE_URL": db_url, "PACKSOLVE_BROKER_URL": broker}
    run_id = submit(env, str(write_pack(tmp_path, 6, ms=20)), "--time-limit", "5")
    assert "requeued 0" in reconcile_once(env)  # every task still sits in the queue: left alone
    assert queued_messages(broker) == 6
    forget_queue(broker)
    assert "requeued 6" in reconcile_once(env)
    assert "requeued 0" in reconcile_once(env)  # sent again, so live again: not sent twice
    start_worker(broker, db_url, "w1@test")
    wait_for_run(db_url, run_id, timeout=60)
    rows = attempts(db_url, run_id)
    assert [a.status for a in rows] == ["solved"] * 6
    assert all(a.requeues == 1 and a.tries == 1 for a in rows)
    with session_scope(get_engine(db_url)) as session:
        assert session.get(Run, run_id).state == "finished"


def test_a_running_attempt_past_its_deadline_is_requeued_and_past_the_cap_lost_with_the_reason(
    tmp_path, broker, pg_url
):
    env = {"PACKSOLVE_DATABASE_URL": pg_url, "PACKSOLVE_BROKER_URL": broker}
    run_id = submit(env, str(write_pack(tmp_path, 3, ms=20)), "--time-limit", "5", "--max-tries", "2")
    forget_queue(broker)
    past = utcnow() - timedelta(seconds=30)
    rows = attempts(pg_url, run_id)
    with session_scope(get_engine(pg_url)) as session:
        # As if workers had claimed them and died: one on its first try, one on its last.
        for a, tries in zip(rows[:2], (1, 2), strict=True):
            session.execute(
                update(Attempt)
                .where(Attempt.id == a.id)
                .values(status="running", tries=tries, deadline=past, started_at=past, worker="dead@host")
            )
        # The third is running on a live worker, inside its deadline: not touched.
        session.execute(
            update(Attempt)
            .where(Attempt.id == rows[2].id)
            .values(status="running", tries=1, deadline=utcnow() + timedelta(seconds=60), worker="alive@host")
        )
    out = reconcile_once(env, grace=1)
    assert "requeued 1, lost 1" in out
    first, second, third = attempts(pg_url, run_id)
    assert (first.status, first.requeues) == ("queued", 1)
    assert second.status == "lost" and "started 2 times (cap 2)" in second.message
    assert "dead@host" in second.message
    assert third.status == "running"
    assert queued_messages(broker) == 1


def test_two_schedulers_at_once_requeue_every_lost_attempt_exactly_once(tmp_path, broker, pg_url):
    env = {"PACKSOLVE_DATABASE_URL": pg_url, "PACKSOLVE_BROKER_URL": broker}
    run_id = submit(env, str(write_pack(tmp_path, 300, ms=1)), "--time-limit", "5")
    forget_queue(broker)
    full_env = child_env(env)
    procs = [
        subprocess.Popen(
            packsolve_cmd("scheduler", "--once", "--grace", "0"),
            env=full_env,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=120)[1] for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    requeued = [int(o.split("requeued ")[1].split(",")[0]) for o in outs]
    assert sum(requeued) == 300, outs
    assert queued_messages(broker) == 300
    assert {a.requeues for a in attempts(pg_url, run_id)} == {1}


def test_scheduler_marks_a_run_finished_once_every_attempt_is_final(tmp_path, broker, sqlite_url):
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url, "PACKSOLVE_BROKER_URL": broker}
    run_id = submit(env, str(write_pack(tmp_path, 2, ms=1)), "--time-limit", "5")
    with session_scope(get_engine(sqlite_url)) as session:
        # Final rows written by something that did not stamp the run (a crash between the two).
        session.execute(update(Attempt).where(Attempt.run_id == run_id).values(status="solved"))
        assert session.get(Run, run_id).finished_at is None
    assert "runs finished 1" in reconcile_once(env, grace=60)
    with session_scope(get_engine(sqlite_url)) as session:
        run = session.get(Run, run_id)
        assert run.state == "finished" and run.finished_at is not None


def test_workers_skip_attempts_of_a_cancelled_run(tmp_path, broker, sqlite_url, start_worker):
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url, "PACKSOLVE_BROKER_URL": broker}
    run_id = submit(env, str(write_pack(tmp_path, 5, ms=20)), "--time-limit", "5")
    res = invoke("cancel", str(run_id), env=env)
    assert res.returncode == 0 and "5 queued attempt(s) cancelled" in res.stdout, res.stderr
    w = start_worker(broker, sqlite_url, "w1@test")
    other = submit(env, str(write_pack(tmp_path / "b", 1, ms=1, seed=9)), "--time-limit", "5")
    wait_for_run(sqlite_url, other, timeout=60)  # the worker drained the queue in order
    rows = attempts(sqlite_url, run_id)
    assert [a.status for a in rows] == ["cancelled"] * 5
    assert all(a.worker is None and a.tries == 0 for a in rows)
    assert w.log().count(": skip") == 5
    with session_scope(get_engine(sqlite_url)) as session:
        assert session.get(Run, run_id).state == "cancelled"


def test_submit_puts_known_hard_levels_first_and_unseen_ones_between_by_size(db_url, tmp_path, broker):
    """The history lookup reads every level in one statement per table (an array on PostgreSQL,
    json_each on SQLite); both must find the same history."""
    env = {"PACKSOLVE_DATABASE_URL": db_url, "PACKSOLVE_BROKER_URL": broker}
    # History that contradicts size: the small level (ms=5) took 10 s, the big one (ms=300) 0.1 s.
    first = submit(env, _pack(tmp_path / "a", [5, 300]))
    past = {5: 10.0, 300: 0.1}
    with session_scope(get_engine(db_url)) as session:
        for a in session.scalars(select(Attempt).where(Attempt.run_id == first)):
            a.status, a.wall_s = "solved", past[_size(session, a.level_hash)]
    forget_queue(broker)
    # Unseen 10 sits nearest the hard known 5, unseen 250 nearest the easy known 300.
    submit(env, _pack(tmp_path / "b", [250, 300, 5, 10]))
    assert _queue_order(broker) == [10, 5, 300, 250]


def test_lost_tasks_go_again_longest_first_a_long_level_in_a_task_of_its_own(db_url, tmp_path, broker):
    """Attempts taken back are sent as submit sends them: a lost level known to be long must not share a
    task, behind the others, with the short ones lost beside it."""
    env = {"PACKSOLVE_DATABASE_URL": db_url, "PACKSOLVE_BROKER_URL": broker}
    first = submit(env, _pack(tmp_path / "a", [5, 6, 7, 300, 8]))
    with session_scope(get_engine(db_url)) as session:
        for a in session.scalars(select(Attempt).where(Attempt.run_id == first)):
            a.status, a.wall_s = "solved", 10.0 if _size(session, a.level_hash) == 300 else 0.01
    forget_queue(broker)
    # The same levels again, all in one task, as a user's --chunk-size asks; the broker loses it.
    submit(env, _pack(tmp_path / "b", [5, 6, 7, 300, 8]), "--chunk-size", "5")
    assert len(_queued_tasks(broker)) == 1
    forget_queue(broker)
    assert "requeued 5" in reconcile_once(env)
    tasks = _queued_tasks(broker)
    assert tasks[0] == [300] and sorted(ms for task in tasks[1:] for ms in task) == [5, 6, 7, 8]


def _pack(directory: Path, sizes: list[int]) -> str:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "p.jsonl"
    path.write_text("".join(json.dumps({"kind": "chaos", "id": 7, "ms": m}) + "\n" for m in sizes))
    return str(path)


def _size(session, level_hash: str) -> int:
    from packsolve.db.models import LevelRow

    return session.get(LevelRow, level_hash).size


def _queue_order(broker: str) -> list[int]:
    """Return the ms of each queued attempt in the order workers will take them."""
    return [ms for task in _queued_tasks(broker) for ms in task]


def _queued_tasks(broker: str) -> list[list[int]]:
    """Return the ms of each queued task's attempts, tasks in the order workers will take them (kombu
    pops the right end)."""
    import base64

    raw = redis.Redis.from_url(broker).lrange(queue_name(), 0, -1)
    out = []
    for item in reversed(raw):
        body = json.loads(base64.b64decode(json.loads(item)["body"]))
        out.append([i["spec"]["level"]["ms"] for i in body[0][0]["items"]])
    return out


def test_a_lapsed_lease_gives_back_all_its_holder_held_whatever_the_deadlines(tmp_path, broker, pg_url):
    """A dead worker's claims come back by its lease, not by their deadlines.

    Its running attempts (one without any time limit, so without a deadline) and
    the queued rest of its chunk are requeued on the first pass after its lease
    lapsed; a live worker's claim is left alone until its deadline plus the grace
    (the solver is killed at the hard limit: past that, the worker is stuck).
    """
    env = {"PACKSOLVE_DATABASE_URL": pg_url, "PACKSOLVE_BROKER_URL": broker}
    run_id = submit(env, str(write_pack(tmp_path, 5, ms=20)), "--time-limit", "5")
    forget_queue(broker)
    now = utcnow()
    rows = attempts(pg_url, run_id)
    with session_scope(get_engine(pg_url)) as session:
        session.add(Worker(name="dead@host/1", host="dead@host", lease_until=now - timedelta(seconds=1)))
        session.add(Worker(name="alive@host/2", host="alive@host", lease_until=now + timedelta(seconds=60)))
        for a, deadline in zip(rows[:2], [now + timedelta(hours=1), None], strict=True):
            session.execute(
                update(Attempt)
                .where(Attempt.id == a.id)
                .values(
                    status="running",
                    tries=1,
                    worker="dead@host",
                    holder="dead@host/1",
                    started_at=now,
                    deadline=deadline,
                )
            )
        session.execute(update(Attempt).where(Attempt.id == rows[2].id).values(holder="dead@host/1"))
        for a, deadline in zip(
            rows[3:], [now + timedelta(minutes=5), now - timedelta(minutes=5)], strict=True
        ):
            session.execute(
                update(Attempt)
                .where(Attempt.id == a.id)
                .values(
                    status="running",
                    tries=1,
                    worker="alive@host",
                    holder="alive@host/2",
                    started_at=now,
                    deadline=deadline,
                )
            )
    assert "requeued 4, lost 0" in reconcile_once(env, grace=2)
    after = attempts(pg_url, run_id)
    assert [a.status for a in after] == ["queued"] * 3 + ["running", "queued"]
    assert [a.holder for a in after[:3]] == [None] * 3 and [a.requeues for a in after[:3]] == [1] * 3


@pytest.mark.slow
def test_sent_tasks_lost_by_the_broker_are_resent_within_seconds_even_with_the_default_grace(
    tmp_path, broker, sqlite_url
):
    """After a Redis restart, `scheduler --once` repairs it, and a run not sent in full waits for its user."""
    from packsolve.db.runs import RunOptions, create_run
    from packsolve.planning import plan_run

    env = {"PACKSOLVE_DATABASE_URL": sqlite_url, "PACKSOLVE_BROKER_URL": broker}
    sent = submit(env, str(write_pack(tmp_path / "a", 3, ms=5)), "--time-limit", "5")
    with session_scope(get_engine(sqlite_url)) as session:  # a submit that died before sending
        unsent = create_run(
            session,
            plan_run([write_pack(tmp_path / "b", 2, ms=6, seed=4)]).attempts,
            RunOptions("distributed"),
        )
    forget_queue(broker)
    time.sleep(1.5)  # past the scheduler's send_settle, a second here (default 5 s)
    res = invoke("scheduler", "--once", env={**env, "PACKSOLVE_SEND_SETTLE": "1"})  # default grace: 60 s
    assert res.returncode == 0 and "requeued 3," in res.stderr, res.stderr
    assert {a.status for a in attempts(sqlite_url, unsent)} == {"queued"}
    assert all(a.requeues == 0 for a in attempts(sqlite_url, unsent))
    assert all(a.requeues == 1 for a in attempts(sqlite_url, sent))
    # A run whose submit never finished sending is the user's to resume or
    # delete; the scheduler never sends it (a slow submit would get its pack queued twice).
    assert "requeued 0," in reconcile_once(env, grace=0)
    assert invoke("runs", env=env).stdout.count(ShownState.SENDING) == 1
    res = invoke("resume", str(unsent), env=env)
    assert res.returncode == 0 and "sent" in res.stderr, res.stderr
    with session_scope(get_engine(sqlite_url)) as session:
        assert session.get(Run, unsent).sent_at is not None
    assert redis.Redis.from_url(broker).llen(queue_name()) >= 1  # its tasks went to the broker


def test_a_result_still_in_a_workers_buffer_is_not_taken_for_a_lost_task(tmp_path, broker, sqlite_url):
    """A tiny attempt's task is acknowledged before its buffered result is written: for a moment
    the attempt is queued with no task in the broker. reconcile waits result_settle before
    taking such attempts, so a result that lands meanwhile is not sent to be run again."""
    import threading

    from packsolve.attempt import Result
    from packsolve.db.attempts import record
    from packsolve.outcome import Outcome, SearchStats, Status
    from packsolve.queue.app import Cluster
    from packsolve.scheduler import reconcile

    env = {"PACKSOLVE_DATABASE_URL": sqlite_url, "PACKSOLVE_BROKER_URL": broker}
    run_id = submit(env, str(write_pack(tmp_path, 1, ms=1)), "--time-limit", "5")
    (row,) = attempts(sqlite_url, run_id)
    forget_queue(broker)  # its task is gone, as once a worker has acknowledged it
    engine = get_engine(sqlite_url)
    solved = Outcome(Status.SOLVED, [1], SearchStats(1, 0.001, 0.001, 1.0))
    result = Result(run_id, row.level_hash, solved, 1, "w@test", claimed=False)

    def write() -> None:  # the worker's buffer, flushed while reconcile looks
        with session_scope(engine) as session:
            record(session, [result])

    cluster = Cluster.of(broker=broker)
    late = threading.Timer(cluster.settings.result_settle / 3, write)
    late.start()
    done = reconcile(engine, cluster, grace_s=0)
    late.join()
    assert done.requeued == 0 and done.lost == 0
    (row,) = attempts(sqlite_url, run_id)
    assert (row.status, row.tries, row.requeues, row.worker) == ("solved", 1, 0, "w@test")


@pytest.mark.redis
def test_the_scheduler_says_at_start_which_database_broker_and_interval_it_uses(
    tmp_path, any_broker, sqlite_url
):
    """Before any repair: one line naming the database, the broker (no password) and the interval."""
    url = (
        any_broker.url.replace("://", "://packsolve:s3cret@", 1)
        if "@" not in any_broker.url
        else any_broker.url
    )
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url, "PACKSOLVE_BROKER_URL": url}
    proc = subprocess.Popen(
        packsolve_cmd("scheduler", "--interval", "7"),
        env=child_env(env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    # A scheduler that says nothing would block readline: stop it after a minute, whatever happens.
    stopper = threading.Timer(60, proc.kill)
    stopper.start()
    try:
        first = proc.stderr.readline() if proc.stderr else ""
    finally:
        stopper.cancel()
        proc.terminate()
        proc.wait(30)
    assert first.startswith("scheduler: database ") and sqlite_url.removeprefix("sqlite:///") in first, first
    assert "a pass every 7 s" in first and "s3cret" not in first
    assert url.split("@", 1)[1].split("/", 1)[0] in first  # the broker's host and port
