"""Claims and tries with real workers on both brokers: a claim's answer lost, the database down past
the workers' patience mid-chunk, tries counted only for attempts that started, and a submit whose
database connection drops.

The database is reached through tests/support/pgproxy.py, a TCP proxy the test cuts.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest
from sqlalchemy import select

from packsolve.db.models import Run
from packsolve.db.session import get_engine, session_scope
from packsolve.runstate import ShownState
from tests.support.chaos_pack import export_records, write_pack
from tests.support.fencing import attempts, final_count, running_count, scheduler_loop, submit
from tests.support.pgproxy import PgProxy
from tests.support.services import child_env, packsolve_cmd, run_cli, wait_for_run
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.redis, pytest.mark.usefixtures("chaos_env")]


def test_a_claim_whose_answer_was_lost_is_run_by_its_retry(tmp_path, any_broker, pg_url, start_worker):
    """Item 9: the claim commits, the connection is cut before its answer; with no time limit the
    attempt used to stay `running` forever (its retry skipped its own live claim)."""
    with PgProxy(pg_url) as proxy:
        env = {"PACKSOLVE_DATABASE_URL": pg_url, "PACKSOLVE_BROKER_URL": any_broker.url}
        worker = start_worker(any_broker.url, proxy.url, "w1@test")
        proxy.lose_answer_after(b"UPDATE attempts", b"RETURNING")
        run_id = submit(env, str(write_pack(tmp_path, 1, ms=300)), "--time-limit", "0")
        assert wait_until(lambda: proxy.answers_lost == 1, 30)
        wait_for_run(pg_url, run_id, timeout=30)
        (a,) = attempts(pg_url, run_id)
        assert (a.status, a.tries) == ("solved", 1)
        assert "database call failed" in worker.log()  # the answer was lost, and the claim retried


def test_the_database_down_past_the_workers_patience_mid_chunk_strands_no_level(
    tmp_path, any_broker, pg_url, start_worker
):
    """Item 10: the task gives up after the worker's db_patience; the rest of its chunk, held by a process
    whose lease renews once the database is back, used to stay queued for good. Now that renewal gives it
    back. The worker's patience is a second here (default 120 s), the outage a few seconds past it."""
    patience = 1
    levels = 40
    with PgProxy(pg_url) as proxy:
        env = {"PACKSOLVE_DATABASE_URL": pg_url, "PACKSOLVE_BROKER_URL": any_broker.url}
        # A lease longer than the outage: the process is alive all along, as a worker whose database
        # was down is; only its renewals can tell what it no longer runs.
        proxied = {**env, "PACKSOLVE_DATABASE_URL": proxy.url, "PACKSOLVE_LEASE_TTL": "400"}
        worker_env = {"PACKSOLVE_LEASE_TTL": "400", "PACKSOLVE_DB_PATIENCE": str(patience)}
        worker = start_worker(any_broker.url, proxy.url, "w1@test", env=worker_env)
        # Short levels: their results are written from the buffer's thread, so the outage meets the
        # task in its next claim, which gives up after db_patience. Long enough (16 s in all) that the
        # chunk is still going when the outage starts, although the results seen in the database
        # lag the work by the buffer's flush.
        pack = write_pack(tmp_path, levels, ms=400)
        run_id = submit(env, str(pack), "--time-limit", "5", "--chunk-size", str(levels))
        with scheduler_loop(proxied):
            assert wait_until(lambda: final_count(pg_url, run_id) >= 5, 60, every=0.05)
            proxy.down()
            time.sleep(patience + 5)
            proxy.up()
            wait_for_run(pg_url, run_id, timeout=90)
    assert {(a.status) for a in attempts(pg_url, run_id)} == {"solved"}
    # The outage outlasted the worker's patience: a task gave up in it (what the test is about).
    assert "raised unexpected: OperationalError" in worker.log()


def test_only_attempts_that_started_count_a_try_when_a_worker_dies_holding_a_group(
    tmp_path, any_broker, pg_url, start_worker
):
    """Item 12: with --max-tries 1, a worker killed mid-group used to leave every level of its group
    that never started `lost`, "started 1 times"."""
    started = tmp_path / "started"
    started.touch()
    levels = 300
    env = {
        "PACKSOLVE_DATABASE_URL": pg_url,
        "PACKSOLVE_BROKER_URL": any_broker.url,
        "PACKSOLVE_LEASE_TTL": "2",
        "CHAOS_STARTED": str(started),
    }
    victim = start_worker(any_broker.url, pg_url, "victim@test", env=env)
    # Tiny levels: a group is about 0.5 s of the pace measured, so even at a loaded machine's pace
    # (an attempt's start taking a few hundred ms) attempts are claimed many at a time.
    pack = write_pack(tmp_path, levels, ms=20)
    run_id = submit(
        env,
        str(pack),
        "--time-limit",
        "5",
        "--max-tries",
        "1",
        "--heuristic",
        "chaos=mark",
        "--chunk-size",
        str(levels),
    )
    # Groups form once the first attempt has set the pace: kill the worker in the middle of one.
    assert wait_until(lambda: final_count(pg_url, run_id) >= 4, 60, every=0.05)
    assert wait_until(lambda: running_count(pg_url, run_id) >= 2, 30, every=0.005)
    os.killpg(victim.proc.pid, signal.SIGKILL)
    victim.proc.wait(10)
    held = [a for a in attempts(pg_url, run_id) if a.status == "running"]
    assert len(held) >= 2, "the worker died holding no group: nothing to judge"
    with scheduler_loop(env):
        start_worker(any_broker.url, pg_url, "heir@test", env=env)
        wait_for_run(pg_url, run_id, timeout=90)
    ran = {int(line) for line in started.read_text().split()}
    # Running when the worker died: its child had started, so the try counts even if the solver had
    # not yet written its mark (a child's start takes a while on a loaded machine).
    running = {a.level_hash for a in held}
    records = export_records(pg_url, run_id)
    lost = [r for r in records if r["status"] == "lost"]
    never_started = [
        r["level"]
        for r in lost
        if int(r["level"].rsplit(":", 1)[1]) - 1 not in ran and r["level_hash"] not in running
    ]
    assert never_started == [], f"lost though never started: {never_started}"
    # Lost, and rightly: the attempt it died in and those whose results were still in its buffer
    # (written within result_flush, 0.25 s: about a dozen 20 ms attempts).
    assert len(lost) <= 20 and {r["status"] for r in records} <= {"solved", "lost"}


def test_a_database_connection_dropped_during_submit_leaves_an_unsent_run_to_resume(
    tmp_path, any_broker, pg_url
):
    """Item 15: the run used to stay `sending` forever, and the message named neither it nor `resume`."""
    with PgProxy(pg_url) as proxy:
        env = {"PACKSOLVE_DATABASE_URL": proxy.url, "PACKSOLVE_BROKER_URL": any_broker.url}
        pack = write_pack(tmp_path, 3000, ms=1)
        proc = subprocess.Popen(
            packsolve_cmd("submit", str(pack), "--chunk-size", "1", "--time-limit", "5"),
            env=child_env(env),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        # Cut the database while the tasks go out, for longer than the rest of them take to send even on
        # a loaded machine: the submit's last write (the run marked sent) meets the database down.
        assert wait_until(lambda: any_broker.depth() >= 1500, 120, every=0.02)
        proxy.down()
        time.sleep(8)
        proxy.up()
        out, err = proc.communicate(timeout=180)
    assert proc.returncode == 1, (out, err)
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    with session_scope(get_engine(pg_url)) as s:
        run = s.scalars(select(Run)).one()
    assert f"run {run.id}" in err and f"packsolve resume {run.id}" in err, err
    listing = run_cli("runs", env={**env, "PACKSOLVE_DATABASE_URL": pg_url})
    assert ShownState.UNSENT in listing.stdout and ShownState.SENDING not in listing.stdout, listing.stdout
    res = run_cli("resume", str(run.id), env={**env, "PACKSOLVE_DATABASE_URL": pg_url})
    assert res.returncode == 0, res.stderr
