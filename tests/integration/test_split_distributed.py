"""submit --split-after: a level expected to take longer runs as parts the workers' processes share.

Real workers on Redis and RabbitMQ, real SQLite and PostgreSQL. The process that claims a split level's
attempt leads it (queue.splits), the others help through calls for help on the queue; the level's one
result is the leader's, written under its claim's fencing token. Damage: a helper killed (kill -9) or
frozen past its lease while it holds a part, the leader killed while its parts run. Each time the level
ends once, solved, with the optimal length (best of all) or a verified tour (first found), and no part
of an earlier claim counts.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, select, text

from packsolve.db.models import Attempt, Part
from packsolve.db.session import get_engine, session_scope
from tests.support.fencing import scheduler_loop
from tests.support.inprocess import exported, invoke
from tests.support.services import private_redis, rabbitmq_vhost, wait_for_run
from tests.support.waiting import wait_for

pytestmark = pytest.mark.usefixtures("chaos_env")

# Korf's fifteen-puzzle #25 (52 moves optimal, ~0.5 s with linear-conflict), a 6x6 knight's tour from a
# corner (first found), and a level of the test kind `chaos`, which has no split.
SLIDING = {"kind": "sliding", "tiles": [[11, 4, 2, 7], [1, 0, 10, 15], [6, 9, 14, 8], [3, 13, 5, 12]]}
KNIGHTS = {"kind": "knights_tour", "size": 6, "start": [0, 0]}
CHAOS = {"kind": "chaos", "id": 1, "ms": 300}
# Korf's fifteen-puzzle #3 (59 moves optimal): several seconds of linear-conflict, long enough to damage
# the processes running its parts.
HARD = {"kind": "sliding", "tiles": [[14, 7, 8, 2], [13, 11, 10, 4], [9, 12, 5, 0], [3, 6, 1, 15]]}
HEURISTIC = "sliding=linear-conflict,knights_tour=plain,chaos=sleep"


def write_pack(path: Path, *levels: dict) -> Path:
    path.write_text("".join(json.dumps(level) + "\n" for level in levels))
    return path


def history(env: dict[str, str], pack: Path) -> dict[str, dict]:
    """Solve the pack locally once (the history --split-after reads); return its records by kind."""
    out = invoke("solve", str(pack), "--heuristic", HEURISTIC, "-j", "2", "-q", "--format", "json", env=env)
    assert out.returncode == 0, out.stderr
    run = json.loads(out.stdout)["run"]
    return {r["level_hash"]: r for r in exported(str(run), env)}


def submit(env: dict[str, str], pack: Path, *args: str) -> int:
    out = invoke(
        "submit", str(pack), "--heuristic", HEURISTIC, "--time-limit", "120", "--split-after", "0.001",
        *args, env=env,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    return int(out.stdout.strip().splitlines()[-1])


def parts_of(db: str, run_id: int) -> list[Part]:
    with session_scope(get_engine(db)) as session:
        return list(session.scalars(select(Part).where(Part.run_id == run_id).order_by(Part.id)))


def attempt_of(db: str, run_id: int, level_hash: str) -> Attempt:
    with session_scope(get_engine(db)) as session:
        return session.scalars(
            select(Attempt).where(Attempt.run_id == run_id, Attempt.level_hash == level_hash)
        ).one()


def test_workers_split_a_level_into_parts_and_write_its_one_result(
    tmp_path: Path, any_broker, db_url: str, start_worker
) -> None:
    env = {"PACKSOLVE_DATABASE_URL": db_url, "PACKSOLVE_BROKER_URL": any_broker.url}
    pack = write_pack(tmp_path / "pack.jsonl", SLIDING, KNIGHTS, CHAOS)
    whole = history(env, pack)
    start_worker(any_broker.url, db_url, "s1@test", concurrency=2)
    run_id = submit(env, pack)
    wait_for_run(db_url, run_id, timeout=120)
    after = {r["kind"]: r for r in exported(str(run_id), env)}
    assert {k: r["status"] for k, r in after.items()} == {
        "sliding": "solved",
        "knights_tour": "solved",
        "chaos": "solved",
    }
    assert after["sliding"]["length"] == 52 and "parts' answers (52)" in after["sliding"]["message"]
    assert after["knights_tour"]["length"] == 36 and "part " in after["knights_tour"]["message"]
    assert all(r["tries"] == 1 for r in after.values())
    parts = parts_of(db_url, run_id)
    by_level: dict[str, list[Part]] = {}
    for p in parts:
        by_level.setdefault(p.level_hash, []).append(p)
    assert set(by_level) == {after["sliding"]["level_hash"], after["knights_tour"]["level_hash"]}
    sliding = by_level[after["sliding"]["level_hash"]]
    token = attempt_of(db_url, run_id, after["sliding"]["level_hash"]).claims
    assert {p.token for p in sliding} == {token}  # every part handed out under the level's one claim
    assert all(p.status not in ("queued", "running") for p in sliding)
    assert max(p.round for p in sliding) > 1
    assert after["sliding"]["nodes"] < 2 * whole[after["sliding"]["level_hash"]]["nodes"]


def test_workers_split_a_level_without_history_once_its_first_attempt_runs_past_split_after(
    tmp_path: Path, any_broker, sqlite_url: str, start_worker
) -> None:
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url, "PACKSOLVE_BROKER_URL": any_broker.url}
    pack = write_pack(tmp_path / "pack.jsonl", SLIDING, KNIGHTS)  # never solved before: no history
    start_worker(any_broker.url, sqlite_url, "p1@test", concurrency=2)
    out = invoke(
        "submit", str(pack), "--heuristic", HEURISTIC, "--time-limit", "120", "--split-after", "0.1", env=env
    )
    assert out.returncode == 0, out.stderr
    run_id = int(out.stdout.strip().splitlines()[-1])
    wait_for_run(sqlite_url, run_id, timeout=120)
    after = {r["kind"]: r for r in exported(str(run_id), env)}
    sliding = after["sliding"]
    assert sliding["status"] == "solved" and sliding["length"] == 52, sliding
    assert "split after a first attempt of " in sliding["message"] and sliding["tries"] == 1
    assert after["knights_tour"]["status"] == "solved" and "split" not in (
        after["knights_tour"]["message"] or ""
    )
    parts = parts_of(sqlite_url, run_id)
    assert {p.level_hash for p in parts} == {sliding["level_hash"]}
    assert {p.token for p in parts} == {attempt_of(sqlite_url, run_id, sliding["level_hash"]).claims}


# Short leases: a process killed or frozen is given up on within seconds.
LEASE = {"PACKSOLVE_LEASE_TTL": "3"}


def running_part(db: str, run_id: int) -> Part | None:
    with session_scope(get_engine(db)) as session:
        return session.scalars(
            select(Part).where(Part.run_id == run_id, Part.status == "running").order_by(Part.id)
        ).first()


def still_held(db: str, part: Part) -> bool:
    with session_scope(get_engine(db)) as session:
        now = session.get(Part, part.id)
        return now is not None and now.status == "running" and now.holder == part.holder


def holder_host(holder: str) -> str:
    return holder.rsplit("/", 1)[0]


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["kill a helper", "freeze a helper", "kill the leader"])
def test_a_split_level_ends_once_and_right_when_a_process_running_its_parts_is_damaged(
    tmp_path: Path, any_broker, pg_url: str, start_worker, damage: str
) -> None:
    env = {"PACKSOLVE_DATABASE_URL": pg_url, "PACKSOLVE_BROKER_URL": any_broker.url, **LEASE}
    pack = write_pack(tmp_path / "hard.jsonl", HARD)
    history(env, pack)
    workers = {
        name: start_worker(any_broker.url, pg_url, name, concurrency=1, env=LEASE)
        for name in ("a@test", "b@test")
    }
    with scheduler_loop(env, grace=1):
        run_id = submit(env, pack)
        level_hash = attempt_of_run(pg_url, run_id).level_hash

        def leader() -> str | None:
            holder = attempt_of(pg_url, run_id, level_hash).holder
            return None if holder is None else holder_host(holder)

        def victim_part() -> Part | None:
            lead = leader()
            part = running_part(pg_url, run_id)
            if lead is None or part is None or part.holder is None:
                return None
            helping = holder_host(part.holder) != lead
            return part if helping == (damage != "kill the leader") else None

        # Frozen first, then checked: the part is still its own (not ended just before the signal).
        while True:
            part = wait_for(
                victim_part, timeout=60, every=0.02, what="a part running where it can be damaged"
            )
            victim = workers[holder_host(part.holder)]
            os.killpg(victim.proc.pid, signal.SIGSTOP)  # the worker, its pool process and its solver child
            if still_held(pg_url, part):
                break
            os.killpg(victim.proc.pid, signal.SIGCONT)
        first_token = part.token
        if damage == "freeze a helper":
            try:
                wait_for_run(pg_url, run_id, timeout=120)  # its part handed out again, run by the leader
            finally:
                os.killpg(victim.proc.pid, signal.SIGCONT)
            time.sleep(3)  # the thawed process writes its part's end, which is refused
        else:
            os.killpg(victim.proc.pid, signal.SIGKILL)
            victim.proc.wait(10)
            if damage == "kill the leader":  # started again: two processes share the parts again
                start_worker(any_broker.url, pg_url, victim.hostname, concurrency=1, env=LEASE)
            wait_for_run(pg_url, run_id, timeout=120)

    records = exported(str(run_id), env)
    assert len(records) == 1
    (record,) = records
    assert (record["status"], record["length"]) == ("solved", 59), (record["message"], record["tries"])
    final = attempt_of(pg_url, run_id, level_hash)
    parts = parts_of(pg_url, run_id)
    assert parts and {p.token for p in parts} == {final.claims}  # no part of an earlier claim counts
    assert all(p.status not in ("queued", "running") for p in parts)
    if damage == "kill the leader":
        assert final.tries == 2 and final.claims > first_token  # taken back, claimed again, split again
    else:
        assert final.tries == 1
        again = next(p for p in parts if p.id == part.id)
        assert again.holder != part.holder  # its part was handed out again, its late end refused
        assert again.status == "solved" or again.resume is not None or again.status == "no_solution"


def attempt_of_run(db: str, run_id: int) -> Attempt:
    with session_scope(get_engine(db)) as session:
        return session.scalars(select(Attempt).where(Attempt.run_id == run_id)).one()


@pytest.fixture(params=["redis", pytest.param("rabbitmq", marks=pytest.mark.rabbitmq)])
def restartable_broker(request, broker) -> Iterator[tuple[str, Callable[[], None]]]:
    """(URL, restart): a redis-server of this test's own, killed and started again empty after 2 s, or a
    RabbitMQ vhost of its own whose every connection the broker closes (what its clients see of a
    restart: each reconnects, and what it had not acknowledged is delivered again)."""
    if request.param == "redis":
        with private_redis() as (url, restart):
            yield url, lambda: restart(down_s=2)
    else:
        with rabbitmq_vhost() as url:
            vhost = url.rsplit("/", 1)[1]
            close = [
                "rabbitmqctl",
                "-q",
                "close_all_connections",
                "--vhost",
                vhost,
                "packsolve test: a restart",
            ]
            yield url, lambda: subprocess.run(close, check=True, capture_output=True, timeout=60) and None


def kill_connections(pg_url: str, seconds: float) -> int:
    """Terminate every connection to the test's database every 0.7 s for seconds; return how many."""
    killer = create_engine(pg_url.rsplit("/", 1)[0] + "/postgres", isolation_level="AUTOCOMMIT")
    dbname = pg_url.rsplit("/", 1)[1]
    terminated = 0
    try:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            with killer.connect() as conn:
                terminated += (
                    conn.execute(
                        text(
                            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                            "WHERE datname = :db AND pid <> pg_backend_pid()"
                        ),
                        {"db": dbname},
                    ).scalar()
                    or 0
                )
            time.sleep(0.7)
    finally:
        killer.dispose()
    return terminated


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["broker restart", "database connections killed"])
def test_a_split_level_ends_once_and_right_across_a_broker_restart_or_its_database_connections_killed(
    tmp_path: Path, restartable_broker, pg_url: str, start_worker, damage: str
) -> None:
    url, restart = restartable_broker
    env = {"PACKSOLVE_DATABASE_URL": pg_url, "PACKSOLVE_BROKER_URL": url, **LEASE}
    pack = write_pack(tmp_path / "hard.jsonl", HARD)
    history(env, pack)
    workers = [start_worker(url, pg_url, name, concurrency=1, env=LEASE) for name in ("a@test", "b@test")]
    with scheduler_loop(env, grace=1):
        run_id = submit(env, pack)
        wait_for(lambda: running_part(pg_url, run_id), timeout=60, every=0.02, what="a part running")
        if damage == "broker restart":
            restart()
        else:
            assert kill_connections(pg_url, 5) > 0
        wait_for_run(pg_url, run_id, timeout=120)
    assert all(w.proc.poll() is None for w in workers)
    records = exported(str(run_id), env)
    assert len(records) == 1
    (record,) = records
    parts = parts_of(pg_url, run_id)
    assert (record["status"], record["length"]) == ("solved", 59), (
        record["message"],
        record["tries"],
        [(p.token, p.round, p.part, p.status, p.message) for p in parts if p.status != "no_solution"],
    )
    level = attempt_of_run(pg_url, run_id)
    assert parts and {p.token for p in parts} == {level.claims}
    assert all(p.status not in ("queued", "running") for p in parts)


def test_part_statements_retried_after_a_lost_commit_neither_add_rows_twice_nor_leave_a_part_held_unrun(
    either_engine,
) -> None:
    """A statement of the part queue is retried whole when its connection dies (db.retry), though its
    commit may have gone through: handing the same parts out again adds none, and a taker that asks
    again gets the part its first call took, not a second one."""
    from packsolve.db import part_queue
    from packsolve.db.attempts import ClaimBy
    from packsolve.levels import make_level
    from tests.support.fencing import claim_levels, lease, level_keys, sent_run_of

    level = make_level("hard", HARD)
    run_id, [h] = sent_run_of(either_engine, [level])
    lease(either_engine, "w/1", 60)
    with either_engine.begin() as c:
        token = claim_levels(c, run_id, [h], ClaimBy("w", 3, None, "w/1")).tokens[h]
        [key] = level_keys(c, run_id, [h])
    handed = [part_queue.Handed(i, 1, (0, 0), None) for i in range(3)]
    where = {"run_id": run_id, "key": key, "token": token}
    for _ in range(2):
        with either_engine.begin() as c:
            assert part_queue.hand_out(c, split=(4, 3), handed=handed, **where) == 3
    with session_scope(either_engine) as session:
        assert session.query(Part).filter(Part.run_id == run_id).count() == 3
    with either_engine.begin() as c:
        first = part_queue.take(c, holder="w/1", **where)
        again = part_queue.take(c, holder="w/1", **where)  # its first call's commit was lost to it
        other = part_queue.take(c, holder="w/2", **where)
    assert first is not None and again is not None and other is not None
    assert again.id == first.id and other.id != first.id
    assert (first.index, first.of, first.parts, first.window) == (0, 4, 3, (0, 0))
