"""External solver programs through real workers: each worker runs its own declaration, resolved there.

Real Redis, real `packsolve worker` processes, SQLite and PostgreSQL. A task names the program
and its declaration's digest; a worker that does not declare it leaves the levels queued for
one that does; every worker records the binary it ran and the summary warns when two ran
different ones; a requeued task still names the program; a battery of misbehaving programs
ends in the right statuses and the worker goes on.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from pathlib import Path

import pytest

from packsolve.db.runs import status_counts
from packsolve.db.session import get_engine, session_scope
from packsolve.execution import cgroups
from packsolve.masking import mask_url
from tests.support.fencing import attempts, scheduler_loop
from tests.support.inprocess import invoke
from tests.support.programs import PROGRAMS, alive, toml_for, write_programs
from tests.support.services import wait_for_run
from tests.support.waiting import wait_until

LEVELS = [
    {"kind": "coins", "notes": [9, 1, 6, 3], "target": 10},
    {"kind": "coins", "notes": [4, 6, 10, 20], "target": 33},
    {"kind": "coins", "notes": [5, 5, 2], "target": 12},
]


def write_pack(tmp_path, levels, name="pack.jsonl"):
    pack = tmp_path / name
    pack.write_text("".join(json.dumps(lv) + "\n" for lv in levels))
    return pack


def submit(env, *args):
    res = invoke("submit", *args, env=env)
    assert res.returncode == 0, res.stderr
    return int(res.stdout.strip().splitlines()[-1])


def summary(env, run_id):
    res = invoke("report", "summary", str(run_id), "--format", "json", env=env)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def export(env, run_id):
    res = invoke("export", str(run_id), env=env)
    assert res.returncode == 0, res.stderr
    return [json.loads(line) for line in res.stdout.splitlines()]


DECLARATION = '[solvers.mine]\nkind = "coins"\ncommand = ["./bin/solver", "{level}"]\n'


def elsewhere(tmp_path, program="correct.py"):
    """Declare bin/solver in a directory that then disappears, as on the machine that submitted."""
    submitter = tmp_path / "submitter"
    (submitter / "bin").mkdir(parents=True)
    toml = submitter / "packsolve.toml"
    toml.write_text(DECLARATION)
    return submitter, toml


def machine(tmp_path, name, program="correct.py", comment=""):
    """Return a directory standing for a worker machine: its own build of bin/solver, declared alike."""
    home = tmp_path / name
    (home / "bin").mkdir(parents=True)
    (home / "packsolve.toml").write_text(DECLARATION)
    solver = home / "bin" / "solver"
    solver.write_text(PROGRAMS[program] + comment)
    solver.chmod(0o755)
    return home


def test_a_submitted_run_is_solved_by_a_declared_program_on_a_worker(db_url, tmp_path, broker, start_worker):
    env = {"PACKSOLVE_DATABASE_URL": db_url, "PACKSOLVE_BROKER_URL": broker}
    directory = write_programs(tmp_path / "programs")
    toml = toml_for(directory)
    worker = start_worker(broker, db_url, "w1@test", args=["--solvers", str(toml)])
    # Its start says where its results go and where its tasks come from, passwords hidden.
    assert f"this worker writes to {mask_url(db_url)} (environment), takes tasks from" in worker.log()
    run_id = submit(
        env,
        str(write_pack(tmp_path, LEVELS)),
        "--solvers",
        str(toml),
        "--heuristic",
        "correct",
        "--time-limit",
        "10",
        "--cpu-limit",
        "5",  # carried by the tasks: a worker runs only a task whose limits are its run's
    )
    wait_for_run(db_url, run_id, timeout=90)
    records = export(env, run_id)
    assert sorted(r["status"] for r in records) == ["no_solution", "solved", "solved"]
    assert {r["worker"] for r in records} == {"w1@test"} and {r["heuristic"] for r in records} == {"correct"}
    told = summary(env, run_id)
    # The worker runs here, as this test does: it measures as this process would.
    assert told["cpu_limit"] == 5.0 and told["provenance"]["measurement"] == [cgroups.mode()]
    [program] = told["provenance"]["programs"]
    assert program["workers"] == ["w1@test"]
    assert program["sha256"] == hashlib.sha256((directory / "correct.py").read_bytes()).hexdigest()


@pytest.mark.slow
def test_a_worker_without_the_program_leaves_the_levels_queued_for_one_that_has_it(
    tmp_path, broker, sqlite_url, start_worker
):
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url, "PACKSOLVE_BROKER_URL": broker}
    submitter, toml = elsewhere(tmp_path)
    run_id = submit(
        env,
        str(write_pack(tmp_path, LEVELS)),
        "--solvers",
        str(toml),
        "--heuristic",
        "mine",
        "--chunk-size",
        "1",
    )
    shutil.rmtree(submitter)  # the submitting machine's directory does not exist where the workers run
    empty = tmp_path / "bare-machine"
    empty.mkdir()
    lacking = start_worker(broker, sqlite_url, "lacking@test", cwd=empty)
    wait_until(lambda: "refused, sent back to the queue" in lacking.log(), 30)
    time.sleep(2)
    with session_scope(get_engine(sqlite_url)) as session:
        assert status_counts(session, run_id) == {"queued": 3}
    assert "program 'mine' is not declared on this worker" in lacking.log()
    able = machine(tmp_path, "able-machine")
    start_worker(broker, sqlite_url, "able@test", cwd=able)
    wait_for_run(sqlite_url, run_id, timeout=90)
    records = export(env, run_id)
    assert sorted(r["status"] for r in records) == ["no_solution", "solved", "solved"]
    assert {r["worker"] for r in records} == {"able@test"}
    [program] = summary(env, run_id)["provenance"]["programs"]
    assert (
        program["workers"] == ["able@test"] and program["command"] == f"{able / 'bin' / 'solver'} {{level}}"
    )


def test_the_summary_warns_when_workers_ran_different_binaries_of_a_program(
    tmp_path, broker, pg_url, start_worker
):
    env = {"PACKSOLVE_DATABASE_URL": pg_url, "PACKSOLVE_BROKER_URL": broker}
    submitter, toml = elsewhere(tmp_path)
    one = machine(tmp_path, "one")
    two = machine(tmp_path, "two", comment="# rebuilt on the second machine\n")
    start_worker(broker, pg_url, "one@test", cwd=one)
    start_worker(broker, pg_url, "two@test", cwd=two)
    pack = write_pack(tmp_path, [{**LEVELS[0], "target": 10 + i % 3} for i in range(12)])
    run_id = submit(env, str(pack), "--solvers", str(toml), "--heuristic", "mine", "--chunk-size", "1")
    shutil.rmtree(submitter)
    wait_for_run(pg_url, run_id, timeout=120)
    records = export(env, run_id)
    assert {r["worker"] for r in records} == {"one@test", "two@test"}, "both workers must have run some"
    provenance = summary(env, run_id)["provenance"]
    shas = {p["sha256"][:12] for p in provenance["programs"]}
    assert len(shas) == 2
    [warning] = provenance["warnings"]
    assert warning.startswith("workers ran different binaries of solver 'mine': ")
    assert all(sha in warning for sha in shas) and "one@test" in warning and "two@test" in warning
    table = invoke("report", "summary", str(run_id), env={**env, "COLUMNS": "250"})
    assert "workers ran different binaries" in table.stdout


def test_a_requeued_task_still_names_the_program_the_worker_declares(
    tmp_path, broker, sqlite_url, start_worker
):
    """The scheduler rebuilds lost tasks from the declaration recorded with the run: the same digest."""
    import os

    import redis

    env = {"PACKSOLVE_DATABASE_URL": sqlite_url, "PACKSOLVE_BROKER_URL": broker}
    directory = write_programs(tmp_path / "programs")
    toml = toml_for(directory)
    run_id = submit(env, str(write_pack(tmp_path, LEVELS)), "--solvers", str(toml), "--heuristic", "correct")
    redis.Redis.from_url(broker).delete(os.environ["PACKSOLVE_QUEUE"])  # the broker lost every task
    res = invoke("scheduler", "--once", "--grace", "0", env=env)
    assert res.returncode == 0 and "requeued 3" in res.stderr, res.stderr
    start_worker(broker, sqlite_url, "w1@test", args=["--solvers", str(toml)])
    wait_for_run(sqlite_url, run_id, timeout=90)
    assert sorted(r["status"] for r in export(env, run_id)) == ["no_solution", "solved", "solved"]


@pytest.mark.slow
def test_misbehaving_programs_end_in_the_right_status_on_a_worker_that_goes_on(
    tmp_path, broker, pg_url, start_worker
):
    env = {"PACKSOLVE_DATABASE_URL": pg_url, "PACKSOLVE_BROKER_URL": broker}
    directory = write_programs(tmp_path / "programs")
    toml = str(toml_for(directory))
    worker = start_worker(broker, pg_url, "w1@test", args=["--solvers", toml])
    pack = str(write_pack(tmp_path, LEVELS[:1]))
    expected = {
        "correct": "solved",
        "wrong": "wrong",
        "sleeper": "timeout",
        "hog": "memout",
        "segfault": "error",
        "garbage": "error",
        "forker": "solved",
        "escaper": "timeout",
        "stdin-only": "solved",
    }
    runs = {
        name: submit(
            env, pack, "--solvers", toml, "--heuristic", name, "--time-limit", "1", "--memory-limit", "64"
        )
        for name in expected
    }
    for name, run_id in runs.items():
        wait_for_run(pg_url, run_id, timeout=120)
        [record] = export(env, run_id)
        assert record["status"] == expected[name], (name, record["message"])
    assert worker.proc.poll() is None
    for leftover in ("forker.pid", "escaper.pid"):
        pid = int((directory / leftover).read_text())
        try:
            with open(f"/proc/{pid}/stat") as f:
                assert f.read().split(")")[-1].split()[0] == "Z", f"{leftover}: process {pid} still runs"
        except FileNotFoundError:
            pass


def test_a_program_that_kills_its_solver_process_on_a_worker_dies_with_its_attempt(
    tmp_path, broker, sqlite_url, start_worker
):
    """kill -9 $PPID in a worker: the pool process ends the program and removes its level directory."""
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url, "PACKSOLVE_BROKER_URL": broker}
    directory = write_programs(tmp_path / "programs")
    toml = str(toml_for(directory))
    worker = start_worker(broker, sqlite_url, "w1@test", cwd=directory)
    pack = str(write_pack(tmp_path, LEVELS[:1]))
    run_id = submit(env, pack, "--solvers", toml, "--heuristic", "parricide", "--time-limit", "60")
    wait_for_run(sqlite_url, run_id, timeout=60)  # well before the time limit: nothing waits for it
    [record] = export(env, run_id)
    assert record["status"] == "error" and "SIGKILL" in record["message"], record
    left = [int(p) for p in (directory / "parricide.pid").read_text().split()]
    assert wait_until(lambda: not any(alive(p) for p in left), 10, every=0.1), (
        f"processes {left} outlived their attempt"
    )
    level_dir = (directory / "parricide.level").read_text().strip().rsplit("/", 1)[0]
    assert not Path(level_dir).exists(), f"{level_dir} was left behind"
    # The worker goes on: the next run is solved.
    again = submit(env, pack, "--solvers", toml, "--heuristic", "correct", "--time-limit", "10")
    wait_for_run(sqlite_url, again, timeout=60)
    assert [r["status"] for r in export(env, again)] == ["solved"] and worker.proc.poll() is None


@pytest.mark.slow
def test_a_heuristic_no_worker_can_run_is_given_up_alone_in_a_matrix_run(
    tmp_path, any_broker, sqlite_url, start_worker
):
    """`mine,dp` on workers none of which declares `mine`: its attempts are given up saying why, and
    each level's `dp` attempt (in tasks of its own, though sent in chunks) is solved."""
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url, "PACKSOLVE_BROKER_URL": any_broker.url}
    submitter, toml = elsewhere(tmp_path)
    pack = write_pack(tmp_path, LEVELS)
    run_id = submit(env, str(pack), "--solvers", str(toml), "--heuristic", "mine,dp", "--chunk-size", "6")
    shutil.rmtree(submitter)
    empty = tmp_path / "bare-machine"
    empty.mkdir()
    start_worker(any_broker.url, sqlite_url, "lacking@test", cwd=empty)
    with scheduler_loop(env, grace=1, interval=1):
        wait_for_run(sqlite_url, run_id, timeout=120)
    rows = attempts(sqlite_url, run_id)
    assert sorted((a.heuristic, a.status) for a in rows) == [
        ("dp", "no_solution"),  # 33 of even notes
        ("dp", "solved"),
        ("dp", "solved"),
        *[("mine", "error")] * 3,
    ]
    for a in rows:
        if a.heuristic == "mine":
            assert "given up: refused by every live worker (lacking@test)" in a.message
            assert "program 'mine' is not declared on this worker" in a.message
        else:
            assert a.worker == "lacking@test"
