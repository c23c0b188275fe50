"""Whoever can write to the broker runs nothing a worker's owner did not declare.

Real `packsolve worker` processes on real Redis (and RabbitMQ), a real Flower. Each attack tries to
make a worker run a shell command that touches a marker file: a task forged from scratch, a queued
task copied and tampered with, a task sent through Flower's REST API. A task names a program and
the hash of its declaration, never a command; the worker runs its own declaration or refuses the
task, and a signed cluster refuses what its key did not sign. A deleted run's leftover tasks never
solve the levels of a run created after it.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import pytest
import redis

from packsolve.db.session import get_engine, session_scope
from packsolve.db.workers import deployment_id
from packsolve.queue.protocol import TASK_NAME
from tests.support.forged import publish_json
from tests.support.inprocess import invoke
from tests.support.programs import toml_for, write_programs
from tests.support.services import free_port, rabbitmq_vhost, wait_for_run
from tests.support.waiting import wait_until

LEVELS = [{"kind": "coins", "notes": [9, 1, 6, 3], "target": t} for t in (10, 12, 15, 18, 19, 40)]
# What the declared `correct` program (and the built-in solvers) make of LEVELS.
EXPECTED = ["no_solution", "solved", "solved", "solved", "solved", "solved"]
KEY = "a-cluster-key-of-the-test"


def _queue() -> str:
    return os.environ.get("PACKSOLVE_QUEUE") or "packsolve"


def write_pack(directory: Path) -> Path:
    pack = directory / "pack.jsonl"
    pack.write_text("".join(json.dumps(lv) + "\n" for lv in LEVELS))
    return pack


def submit(env: dict[str, str], *args: str, cwd: Path | None = None) -> int:
    res = invoke("submit", *args, env=env, cwd=cwd)
    assert res.returncode == 0, res.stderr
    return int(res.stdout.strip().splitlines()[-1])


def statuses(env: dict[str, str], run_id: int) -> list[str]:
    res = invoke("export", str(run_id), env=env)
    assert res.returncode == 0, res.stderr
    return sorted(json.loads(line)["status"] for line in res.stdout.splitlines())


def evil_program(marker: Path) -> dict:
    """Return a program object as an attacker writes it: a command, and a hash field the new format reads."""
    shell = f'touch {marker}; echo \'{{"status": "no_solution"}}\''
    return {
        "name": "plain",
        "kind": "coins",
        "command": ["/bin/sh", "-c", shell],
        "stdin": False,
        "base": "/",
        "sha256": "0" * 64,
    }


def forged_payload(database: str, run_id: int, marker: Path) -> dict:
    """Return a task body naming a made-up level of a run, with the deployment id (read off any task)."""
    with session_scope(get_engine(database)) as session:
        deployment = deployment_id(session)
    spec = {
        "kind": "coins",
        "heuristic": "plain",
        "level": {"kind": "coins", "notes": [1], "target": 1},
        "time_limit": 5,
        "node_limit": None,
        "memory_limit_mb": None,
        "program": evil_program(marker),
    }
    items = [{"level": "f" * 64, "spec": spec}]
    return {"run": run_id, "max_tries": 5, "deployment": deployment, "items": items}


def warm_up(env: dict[str, str], database: str, tmp_path: Path) -> int:
    """Solve a pack with coins' `plain` (the old code then ran such levels unclaimed); return its id."""
    run_id = submit(env, str(write_pack(tmp_path)), "--heuristic", "plain", "--chunk-size", "1")
    wait_for_run(database, run_id, timeout=90)
    return run_id


def refused_and_nothing_ran(worker, marker: Path) -> None:
    assert wait_until(lambda: marker.exists() or "refused" in worker.log(), 30.0), worker.log()
    time.sleep(1.0)  # the command, had it started, has had time to touch the marker
    assert not marker.exists(), "the command travelling in the task was run"
    log = worker.log()
    assert "refused" in log and "Traceback" not in log, log
    assert worker.proc.poll() is None


@pytest.fixture(params=["redis", pytest.param("rabbitmq", marks=pytest.mark.rabbitmq)])
def any_broker(request, broker):
    """The Redis broker of this test (its own queue), or a RabbitMQ vhost of its own."""
    if request.param == "redis":
        yield broker
    else:
        with rabbitmq_vhost() as url:
            yield url


def test_a_forged_task_naming_a_made_up_level_runs_nothing_and_is_refused(
    tmp_path, any_broker, sqlite_url, start_worker
):
    """Attack (a): plain JSON on the queue, a made-up run and level, a program carrying a shell command."""
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url, "PACKSOLVE_BROKER_URL": any_broker}
    worker = start_worker(any_broker, sqlite_url, "w1@test")
    run_id = warm_up(env, sqlite_url, tmp_path)
    marker = tmp_path / "pwned-forged"
    publish_json(any_broker, forged_payload(sqlite_url, run_id, marker))
    refused_and_nothing_ran(worker, marker)
    assert "WARNING: no PACKSOLVE_TASK_KEY" in worker.log()  # said loudly at start


@pytest.mark.parametrize("key", [None, KEY], ids=["no-key", "signed"])
def test_a_queued_task_with_its_program_swapped_runs_the_workers_own_declaration_or_is_refused(
    key, tmp_path, broker, sqlite_url, start_worker
):
    """Attack (b): a task copied from the Redis list, its program's command swapped, pushed back at the head.

    Without a key the worker runs only its own declaration of the program (the command in the task
    is never read); with a key the tampered copy's signature fails and it is refused.
    """
    keyed = {"PACKSOLVE_TASK_KEY": key} if key else {}
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url, "PACKSOLVE_BROKER_URL": broker, **keyed}
    directory = write_programs(tmp_path / "programs")
    toml = toml_for(directory, ["correct.py"])
    run_id = submit(
        env,
        str(write_pack(tmp_path)),
        "--solvers",
        str(toml),
        "--heuristic",
        "correct",
        "--chunk-size",
        str(len(LEVELS)),
        "--time-limit",
        "10",
    )
    client = redis.Redis.from_url(broker)
    [raw] = client.lrange(_queue(), 0, -1)
    message = json.loads(raw)
    body = json.loads(base64.b64decode(message["body"]))
    marker = tmp_path / "pwned-tampered"
    for item in body[0][0]["items"]:
        item["spec"]["program"] = {**item["spec"]["program"], "command": evil_program(marker)["command"]}
    message["body"] = base64.b64encode(json.dumps(body).encode()).decode()
    message["properties"]["delivery_tag"] = str(uuid.uuid4())
    client.rpush(_queue(), json.dumps(message))  # BRPOP takes from the right: the copy goes first
    # The worker's own declaration: the packsolve.toml of the directory it runs in.
    worker = start_worker(broker, sqlite_url, "w1@test", env=keyed, cwd=directory)
    wait_for_run(sqlite_url, run_id, timeout=90)
    time.sleep(1.0)
    assert not marker.exists(), "the command swapped into the task was run"
    assert statuses(env, run_id) == EXPECTED
    if key:
        assert wait_until(lambda: "refused" in worker.log() and "signature" in worker.log(), 30.0), (
            worker.log()
        )
    assert "Traceback" not in worker.log()


@pytest.fixture
def flower(broker):
    """A real Flower on a free loopback port with basic auth, on this test's broker; yields (url, auth)."""
    port = free_port()
    secret = "admin:" + uuid.uuid4().hex
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "--broker",
            broker,
            "flower",
            "--address=127.0.0.1",
            f"--port={port}",
            f"--basic-auth={secret}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    header = "Basic " + base64.b64encode(secret.encode()).decode()
    auth = {"Authorization": header}

    def up() -> bool:
        try:
            urllib.request.urlopen(urllib.request.Request(f"{url}/api/workers", headers=auth))
        except OSError:
            return False
        return True

    try:
        assert wait_until(up, 60), "flower did not start"
        yield url, header
    finally:
        proc.terminate()
        proc.wait(20)


def test_a_task_sent_through_flowers_rest_api_runs_nothing_and_is_refused(
    tmp_path, broker, sqlite_url, start_worker, flower
):
    """Attack (c): Flower's /api/task/send-task with its credentials; the cluster signs its tasks."""
    url, header = flower
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url, "PACKSOLVE_BROKER_URL": broker, "PACKSOLVE_TASK_KEY": KEY}
    worker = start_worker(broker, sqlite_url, "w1@test", env={"PACKSOLVE_TASK_KEY": KEY})
    run_id = warm_up(env, sqlite_url, tmp_path)
    marker = tmp_path / "pwned-flower"
    request = urllib.request.Request(
        f"{url}/api/task/send-task/{TASK_NAME}",
        data=json.dumps({"args": [forged_payload(sqlite_url, run_id, marker)], "queue": _queue()}).encode(),
        headers={"Authorization": header, "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request) as response:
        assert response.status == 200
    refused_and_nothing_ran(worker, marker)
    assert "unsigned" in worker.log()


def test_a_deleted_runs_leftover_tasks_never_solve_the_levels_of_a_run_made_after_it(
    tmp_path, broker, sqlite_url, start_worker
):
    """Item 8: submit with a program, cancel, `runs delete`, submit again; only the new run's tasks solve it.

    The new run gets an id of its own (SQLite never reuses a deleted run's), and a task whose run,
    heuristic or limits are not those of the database's attempt is refused.
    """
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url, "PACKSOLVE_BROKER_URL": broker}
    directory = write_programs(tmp_path / "programs")
    toml = toml_for(directory, ["wrong.py"])
    pack = str(write_pack(tmp_path))
    old = submit(env, pack, "--solvers", str(toml), "--heuristic", "wrong", "--chunk-size", "1")
    for command in (("cancel", str(old)), ("runs", "delete", str(old), "--yes")):
        res = invoke(*command, env=env)
        assert res.returncode == 0, res.stderr
    new = submit(env, pack, "--heuristic", "dp", "--chunk-size", "1", "--time-limit", "10")
    assert new != old, "the deleted run's id was given to the new run"
    worker = start_worker(broker, sqlite_url, "w1@test", cwd=directory)
    wait_for_run(sqlite_url, new, timeout=90)
    res = invoke("export", str(new), env=env)
    records = [json.loads(line) for line in res.stdout.splitlines()]
    assert sorted(r["status"] for r in records) == EXPECTED, records
    assert {r["heuristic"] for r in records} == {"dp"}
    assert wait_until(lambda: client_len(broker) == 0, 30.0), "the leftover tasks were left on the queue"
    assert "Traceback" not in worker.log()


def client_len(broker: str) -> int:
    return int(redis.Redis.from_url(broker).llen(_queue()))


def test_while_the_key_rotates_tasks_signed_with_the_old_key_still_run_and_status_warns_without_one(
    tmp_path, broker, sqlite_url, start_worker
):
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url, "PACKSOLVE_BROKER_URL": broker}
    rotated = {"PACKSOLVE_TASK_KEY": "the-new-key", "PACKSOLVE_TASK_KEYS_OLD": "an-older-key," + KEY}
    worker = start_worker(broker, sqlite_url, "w1@test", env=rotated)
    run_id = submit({**env, "PACKSOLVE_TASK_KEY": KEY}, str(write_pack(tmp_path)), "--heuristic", "dp")
    wait_for_run(sqlite_url, run_id, timeout=90)
    assert statuses(env, run_id) == EXPECTED
    assert "no PACKSOLVE_TASK_KEY" not in worker.log() and "refused" not in worker.log()
    keyed = invoke("status", str(run_id), env={**env, "PACKSOLVE_TASK_KEY": KEY})
    keyless = invoke("status", str(run_id), env={**env, "PACKSOLVE_TASK_KEY": ""})
    assert keyed.returncode == keyless.returncode == 0
    assert "no PACKSOLVE_TASK_KEY" not in keyed.stderr
    assert "WARNING: no PACKSOLVE_TASK_KEY" in keyless.stderr


def test_admission_drops_what_no_worker_may_run_and_binds_a_program_to_the_workers_own_declaration(
    tmp_path, sqlite_url, monkeypatch
):
    """No deployment id or no task at all: dropped. A program declared otherwise: refused. Else bound."""
    from packsolve.execution import AttemptSpec, Limits
    from packsolve.execution.spec import PendingAttempt
    from packsolve.external.declaration import ExternalSolver
    from packsolve.queue.admission import Admission, Refused
    from packsolve.queue.protocol import TaskKeys, encode

    monkeypatch.setenv("PACKSOLVE_DATABASE_URL", sqlite_url)
    with session_scope(get_engine(sqlite_url)) as session:
        deployment = deployment_id(session)
    directory = write_programs(tmp_path / "programs")
    mine = ExternalSolver("correct", "coins", ("./correct.py", "{level}"), True, str(directory))
    spec = AttemptSpec("coins", "correct", LEVELS[0], Limits(5.0), mine)

    def verdict(payload, declared):
        try:
            admission = Admission(declared, TaskKeys(), get_engine(sqlite_url))
            return admission.admit(json.loads(json.dumps(payload)))
        except Refused as refused:
            return refused

    dropped = verdict(encode(1, [PendingAttempt("a" * 64, spec)], 5), {"correct": mine})
    assert isinstance(dropped, Refused) and not dropped.requeue and "names no deployment" in dropped.reason
    garbage = verdict({"run": "x", "items": 3}, {"correct": mine})
    assert isinstance(garbage, Refused) and not garbage.requeue and "not a packsolve task" in garbage.reason
    payload = encode(1, [PendingAttempt("a" * 64, spec)], 5, deployment)
    other = ExternalSolver("correct", "coins", ("./correct.py",), True, str(directory))  # no {level}
    refused = verdict(payload, {"correct": other})
    assert isinstance(refused, Refused) and refused.requeue and "declared differently" in refused.reason
    task = verdict(payload, {"correct": mine})
    assert not isinstance(task, Refused) and task.items[0].spec.program == mine


def test_only_attempts_matching_the_databases_run_level_heuristic_and_limits_are_returned_to_run(db_url):
    from dataclasses import replace

    from packsolve.db.runs import RunOptions, create_run
    from packsolve.execution import AttemptSpec, Limits
    from packsolve.execution.spec import PendingAttempt
    from packsolve.levels import make_level
    from packsolve.planning import plan_levels
    from packsolve.queue.admission import Admission
    from packsolve.queue.protocol import Task, TaskKeys

    engine = get_engine(db_url)
    levels = [make_level(f"l{i}", lv) for i, lv in enumerate(LEVELS)]
    planned = plan_levels(levels, "dp").attempts
    with session_scope(engine) as s:
        run_id = create_run(s, planned, RunOptions(mode="distributed", heuristic="dp", time_limit=5.0))
        local = create_run(s, planned, RunOptions(mode="local", heuristic="dp", time_limit=5.0))
    limits = Limits(5.0)
    good = [PendingAttempt(lv.hash, AttemptSpec("coins", "dp", lv.data, limits)) for lv in levels]
    first, second, third = good[:3]
    # Its content no longer its hash's.
    altered = replace(second, spec=replace(second.spec, level={**second.spec.level, "target": 99}))
    other_heuristic = replace(third, spec=replace(third.spec, heuristic="plain"))
    unknown = PendingAttempt("e" * 64, first.spec)

    def run(task_run: int, items) -> list:
        admission = Admission({}, TaskKeys(), engine)
        return [p.level_hash for p in admission.matching(engine, Task(task_run, 5, tuple(items), "d")).items]

    assert run(run_id, good) == [p.level_hash for p in good]
    assert run(run_id, [first, altered, other_heuristic, unknown]) == [first.level_hash]
    assert run(run_id, [replace(p, spec=replace(p.spec, limits=Limits(50.0))) for p in good]) == []
    assert run(run_id + 1000, good) == [] and run(local, good) == []
    engine.dispose()


def test_tasks_of_one_level_in_pack_order_are_checked_from_one_read_until_it_is_too_old(db_url, monkeypatch):
    """The first one-level task reads the run's next attempts along; the next ones cost no statement,
    are refused alike when they do not match, and once the read is older than KEPT_S a deleted
    run's tasks are dropped again."""
    from dataclasses import replace

    from sqlalchemy import event

    from packsolve.db import task_match
    from packsolve.db.runs import RunOptions, create_run
    from packsolve.execution import AttemptSpec, Limits
    from packsolve.execution.spec import PendingAttempt
    from packsolve.levels import make_level
    from packsolve.planning import plan_levels
    from packsolve.queue.admission import Admission
    from packsolve.queue.protocol import Task, TaskKeys

    engine = get_engine(db_url)
    levels = [make_level(f"l{i}", lv) for i, lv in enumerate(LEVELS)]
    with session_scope(engine) as s:
        run_id = create_run(
            s,
            plan_levels(levels, "dp").attempts,
            RunOptions(mode="distributed", heuristic="dp", time_limit=5.0),
        )
    good = [PendingAttempt(lv.hash, AttemptSpec("coins", "dp", lv.data, Limits(5.0))) for lv in levels]
    admission = Admission({}, TaskKeys(), engine)
    statements: list[str] = []
    event.listen(engine, "before_cursor_execute", lambda *a: statements.append(a[2]))

    def run(item) -> list:
        return [p.level_hash for p in admission.matching(engine, Task(run_id, 5, (item,), "d")).items]

    assert [run(item) for item in good] == [[p.level_hash] for p in good]
    assert len(statements) == 1, statements
    h1, s1 = good[1].level_hash, good[1].spec
    assert run(PendingAttempt(h1, replace(s1, heuristic="plain"))) == []
    assert run(PendingAttempt(h1, replace(s1, limits=Limits(50.0)))) == []
    assert len(statements) == 1, statements
    for command in (("cancel", str(run_id)), ("runs", "delete", str(run_id), "--yes")):
        res = invoke(*command, env={"PACKSOLVE_DATABASE_URL": db_url})
        assert res.returncode == 0, res.stderr
    monkeypatch.setattr(task_match, "KEPT_S", 0.0)
    assert run(good[2]) == []
    engine.dispose()
