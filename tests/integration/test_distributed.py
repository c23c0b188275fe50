"""`packsolve submit` + real `packsolve worker` processes on real Redis, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import time

import pytest

from packsolve.levels import read_levels
from packsolve.puzzles import get_kind
from tests.support.inprocess import invoke
from tests.support.packs import make_pack
from tests.support.services import wait_for_run
from tests.support.waiting import stretched


def submit(pack, env, *args):
    res = invoke("submit", str(pack), *args, env=env)
    assert res.returncode == 0, res.stderr
    return int(res.stdout.strip().splitlines()[-1])


def export(env, run_id):
    res = invoke("export", str(run_id), env=env)
    assert res.returncode == 0, res.stderr
    return [json.loads(line) for line in res.stdout.splitlines()]


def check_records(pack, records):
    kind = get_kind("onestroke")
    levels = {lv.hash: lv for lv in read_levels([pack])}
    statuses = sorted(r["status"] for r in records)
    assert statuses == ["invalid", "no_solution", "solved", "solved", "solved", "solved"]
    for r in records:
        if r["status"] == "solved":
            assert kind.verify(kind.parse(levels[r["level_hash"]].data), r["solution"]) is None
        if r["status"] != "invalid":
            assert r["tries"] == 1 and r["worker"] in ("w1@test", "w2@test")


def test_submit_to_two_workers_end_to_end(db_url, tmp_path, broker, start_worker):
    env = {"PACKSOLVE_DATABASE_URL": db_url, "PACKSOLVE_BROKER_URL": broker}
    pack = make_pack(tmp_path)
    start_worker(broker, db_url, "w1@test")
    start_worker(broker, db_url, "w2@test")
    run_id = submit(pack, env, "--time-limit", "10")
    wait_for_run(db_url, run_id, timeout=60)
    check_records(pack, export(env, run_id))
    res = invoke("report", "summary", str(run_id), "--format", "json", env=env)
    summary = json.loads(res.stdout)
    assert summary["solved"] == 4 and summary["state"] == "finished" and summary["mode"] == "distributed"


def test_timeout_under_a_one_second_limit_then_the_same_worker_solves_the_next(
    tmp_path, broker, sqlite_url, start_worker
):
    pack = tmp_path / "p"
    pack.mkdir()
    (pack / "a_hard.json").write_text(
        json.dumps({"kind": "onestroke", "grid": ["S.#" + "." * 11] + ["." * 14] * 13})
    )
    (pack / "b_easy.json").write_text(json.dumps({"kind": "onestroke", "grid": ["S...", "...."]}))
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url, "PACKSOLVE_BROKER_URL": broker}
    w = start_worker(broker, sqlite_url, "solo@test", concurrency=1)
    start = time.monotonic()
    run_id = submit(pack, env, "--heuristic", "plain", "--time-limit", "1")
    wait_for_run(sqlite_url, run_id, timeout=30)
    hard, easy = export(env, run_id)
    assert hard["status"] == "timeout" and 1.0 <= hard["wall_s"] < 3.0
    assert easy["status"] == "solved"
    assert hard["worker"] == easy["worker"] == "solo@test"
    assert time.monotonic() - start < stretched(15)
    assert w.proc.poll() is None  # the worker lives on


def test_submit_fails_clearly_when_the_broker_is_unreachable(tmp_path, sqlite_url):
    pack = make_pack(tmp_path)
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url, "PACKSOLVE_BROKER_URL": "redis://127.0.0.1:1/0"}
    res = invoke("submit", str(pack), env=env)
    assert res.returncode != 0 and "cannot reach the broker" in res.stderr


@pytest.mark.usefixtures("chaos_env")
def test_a_worker_that_lacks_a_kind_leaves_its_levels_queued_for_a_worker_that_has_it(
    tmp_path, broker, sqlite_url, start_worker
):
    """Refused without acknowledging: never an `error` for a kind this worker was not given."""
    from packsolve.db.runs import status_counts
    from packsolve.db.session import get_engine, session_scope
    from tests.support.chaos_pack import write_pack

    env = {"PACKSOLVE_DATABASE_URL": sqlite_url, "PACKSOLVE_BROKER_URL": broker}
    run_id = submit(write_pack(tmp_path, 3, ms=5), env, "--time-limit", "5", "--chunk-size", "1")
    lacking = start_worker(broker, sqlite_url, "lacking@test", env={"PACKSOLVE_EXTRA_KINDS": ""})
    time.sleep(4)
    with session_scope(get_engine(sqlite_url)) as session:
        assert status_counts(session, run_id) == {"queued": 3}
    assert "refused, sent back to the queue" in lacking.log() and "unknown kind 'chaos'" in lacking.log()
    start_worker(broker, sqlite_url, "able@test")
    wait_for_run(sqlite_url, run_id, timeout=60)
    records = export(env, run_id)
    assert [(r["status"], r["worker"]) for r in records] == [("solved", "able@test")] * 3
