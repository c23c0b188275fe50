"""Many workers: two named workers on one PostgreSQL share a chunked pack; each attempt names its worker."""

from __future__ import annotations

import json
from collections import Counter

from sqlalchemy import func, select

from packsolve.db.models import Attempt
from packsolve.db.session import get_engine, session_scope
from packsolve.levels import read_levels
from packsolve.puzzles import get_kind
from tests.support.inprocess import invoke
from tests.support.services import wait_for_run
from tests.support.waiting import wait_until

# Distinct solved sudokus (digits relabelled): one node each, so the pipeline is all that is measured.
SOLUTION = "964532178187694235235817964629451783573986412841273596416728359352169847798345621"


def solved_sudokus(n: int) -> list[str]:
    import itertools

    perms = itertools.permutations("123456789")
    return ["".join(p[int(ch) - 1] for ch in SOLUTION) for p in itertools.islice(perms, n)]


def test_a_pack_of_small_levels_goes_through_two_named_workers_on_postgresql(
    tmp_path, broker, pg_url, start_worker
):
    pack = tmp_path / "small.sdk"
    pack.write_text("".join(g + "\n" for g in solved_sudokus(120)))
    env = {"PACKSOLVE_DATABASE_URL": pg_url, "PACKSOLVE_BROKER_URL": broker}
    start_worker(broker, pg_url, "alpha@test", concurrency=1)
    start_worker(broker, pg_url, "beta@test", concurrency=1)
    res = invoke("submit", str(pack), "--time-limit", "10", env=env)
    assert res.returncode == 0, res.stderr
    run_id = int(res.stdout.strip().splitlines()[-1])
    assert "18 task(s) of up to 7" in res.stderr  # automatic: 120 levels, at least 16 tasks
    wait_for_run(pg_url, run_id, timeout=120)

    res = invoke("export", str(run_id), env=env)
    records = [json.loads(line) for line in res.stdout.splitlines()]
    assert len(records) == 120 and {r["status"] for r in records} == {"solved"}
    kind = get_kind("sudoku")
    levels = {lv.hash: lv for lv in read_levels([pack])}
    for r in records:
        assert kind.verify(kind.parse(levels[r["level_hash"]].data), r["solution"]) is None
        assert r["tries"] == 1 and r["nodes"] >= 1
        assert r["started_at"] <= r["finished_at"]
    per_worker = Counter(r["worker"] for r in records)
    assert set(per_worker) == {"alpha@test", "beta@test"}, per_worker
    res = invoke("report", "summary", str(run_id), "--format", "json", env=env)
    assert json.loads(res.stdout)["state"] == "finished"


def test_worker_concurrency_defaults_to_the_number_of_cores(tmp_path, broker, sqlite_url):
    import os
    import subprocess
    import sys

    log = tmp_path / "w.log"
    env = {**os.environ, "PACKSOLVE_BROKER_URL": broker, "PACKSOLVE_DATABASE_URL": sqlite_url}
    env.pop("PACKSOLVE_CONCURRENCY", None)
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "packsolve", "worker", "--hostname", "cores@test"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_until(lambda: "concurrency:" in log.read_text(), 60)
        assert f"concurrency: {os.cpu_count()} (prefork)" in log.read_text()
    finally:
        import signal

        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(30)


def test_one_level_per_task_then_a_redelivery_of_every_task_changes_nothing(
    tmp_path, broker, pg_url, start_worker
):
    """Tiny levels one per task: once the worker knows they are tiny, each is solved at once and
    claimed by its result's write, which counts its one try. Every task delivered again (a
    duplicate message) is solved again but its result refused: the row is final, and the stored
    result, its try count included, stays as it was."""
    import os
    import subprocess
    import sys
    import time

    import redis

    n = 40
    pack = tmp_path / "tiny.sdk"
    pack.write_text("".join(g + "\n" for g in solved_sudokus(n)))
    env = {"PACKSOLVE_DATABASE_URL": pg_url, "PACKSOLVE_BROKER_URL": broker}
    worker = start_worker(broker, pg_url, "solo@test", concurrency=1)
    res = invoke("submit", str(pack), "--time-limit", "10", "--chunk-size", "1", env=env)
    assert res.returncode == 0, res.stderr
    run_id = int(res.stdout.strip().splitlines()[-1])
    wait_for_run(pg_url, run_id, timeout=120)
    before = invoke("export", str(run_id), env=env).stdout
    records = [json.loads(line) for line in before.splitlines()]
    assert len(records) == n and {(r["status"], r["tries"]) for r in records} == {("solved", 1)}
    assert {r["worker"] for r in records} == {"solo@test"}
    # Only the first attempt, of a kind this worker had not yet timed, was claimed (a claim sets
    # the deadline); the tiny ones after it were not: their result's write made the claim.
    with session_scope(get_engine(pg_url)) as session:
        claimed = session.scalar(
            select(func.count()).where(Attempt.run_id == run_id, Attempt.deadline.is_not(None))
        )
    assert 1 <= claimed <= 3

    # Sent from a fresh process: this one's packsolve.worker may hold an earlier test's queue name.
    resend = (
        "import sys\n"
        "from packsolve.execution import Limits\n"
        "from packsolve.planning import plan_run\n"
        "from packsolve.queue.app import Cluster\n"
        "specs = plan_run([sys.argv[1]]).pending(Limits(10.0))\n"
        "print(Cluster.of(broker=sys.argv[2]).send(int(sys.argv[3]), specs, max_tries=5, chunk_size=1))\n"
    )
    sent = subprocess.run(
        [sys.executable, "-c", resend, str(pack), broker, str(run_id)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
    )
    assert sent.returncode == 0 and sent.stdout.strip() == str(n), sent.stderr
    r = redis.Redis.from_url(broker)
    queue = (os.environ.get("PACKSOLVE_QUEUE") or "packsolve").encode()
    drained = wait_until(
        lambda: not (r.llen(queue) or any(queue in m for m in r.hvals("unacked"))), 60, every=0.1
    )
    assert drained, worker.log()[-3000:]
    time.sleep(1.0)  # the last results' buffer (the result_flush setting) has been written
    assert invoke("export", str(run_id), env=env).stdout == before


def test_a_task_redis_delivers_again_is_claimed_before_it_runs(tmp_path, broker, pg_url, start_worker):
    """A message Redis delivers again (its worker died, Celery requeued it) carries the redelivered
    flag: even a tiny attempt is then claimed first, so its try is counted before it runs. Here
    the flag is set on some queued messages as kombu's restore sets it."""
    import base64
    import os

    import redis

    n = 10
    pack = tmp_path / "tiny.sdk"
    pack.write_text("".join(g + "\n" for g in solved_sudokus(n)))
    env = {"PACKSOLVE_DATABASE_URL": pg_url, "PACKSOLVE_BROKER_URL": broker}
    res = invoke("submit", str(pack), "--time-limit", "10", "--chunk-size", "1", env=env)
    assert res.returncode == 0, res.stderr
    run_id = int(res.stdout.strip().splitlines()[-1])
    r = redis.Redis.from_url(broker)
    queue = os.environ.get("PACKSOLVE_QUEUE") or "packsolve"
    messages = [json.loads(m) for m in r.lrange(queue, 0, -1)]
    assert len(messages) == n
    # The worker pops from the right: the last messages of the list are run first.
    again = set()
    for m in messages[: n // 2]:
        m["properties"]["delivery_info"]["redelivered"] = True
        m["headers"]["redelivered"] = True
        (item,) = json.loads(base64.b64decode(m["body"]))[0][0]["items"]
        again.add(item["level"])
    with r.pipeline() as pipe:
        pipe.delete(queue)
        pipe.rpush(queue, *(json.dumps(m) for m in messages))
        pipe.execute()
    start_worker(broker, pg_url, "solo@test", concurrency=1)
    wait_for_run(pg_url, run_id, timeout=120)
    with session_scope(get_engine(pg_url)) as session:
        rows = session.execute(
            select(Attempt.level_hash, Attempt.status, Attempt.tries, Attempt.deadline).where(
                Attempt.run_id == run_id
            )
        ).all()
    assert {(status, tries) for _, status, tries, _ in rows} == {("solved", 1)}
    claimed = {h for h, _, _, deadline in rows if deadline is not None}
    # The first task run, of a kind not yet timed, is claimed too; the other tiny ones are not.
    assert again < claimed and len(claimed) == len(again) + 1
