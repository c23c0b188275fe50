"""Distributed `status` tells results a worker computed and has not written yet from attempts running."""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta

from sqlalchemy import update

from packsolve.db.models import Attempt, Run, Worker, utcnow
from packsolve.db.session import get_engine, session_scope
from packsolve.db.workers import Doing, renew
from packsolve.report.progress import run_progress
from tests.integration.test_distributed import submit
from tests.support.dashboard import serving
from tests.support.inprocess import invoke
from tests.support.packs import make_pack
from tests.support.report_runs import Planned, build_run, strip_level
from tests.support.services import wait_for_run
from tests.support.waiting import wait_for


def status(env: dict[str, str], run_id: int) -> dict:
    res = invoke("status", str(run_id), "--format", "json", env=env)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def wait_until_nothing_runs(env: dict[str, str], run_id: int, timeout: float = 60) -> dict:
    """Return the first status in which no attempt is queued, claimed or running (all done or buffered)."""

    def idle() -> dict | None:
        s = status(env, run_id)
        return s if s["queued"] == s["claimed"] == s["running"] == 0 else None

    return wait_for(idle, timeout, every=0.3, what=f"run {run_id} with nothing queued, claimed or running")


def test_status_shows_results_in_a_workers_write_buffer_as_buffered_not_running(
    db_url, tmp_path, broker, start_worker
):
    env = {"PACKSOLVE_DATABASE_URL": db_url, "PACKSOLVE_BROKER_URL": broker}
    pack = make_pack(tmp_path)  # 6 levels, one of them invalid; every other one solves in microseconds
    # The worker keeps its results a minute before writing them, and renews its lease every half second.
    worker = start_worker(
        broker, db_url, "w1@test", env={"PACKSOLVE_RESULT_FLUSH": "60", "PACKSOLVE_LEASE_TTL": "2"}
    )
    run_id = submit(pack, env, "--time-limit", "10")
    s = wait_until_nothing_runs(env, run_id)
    assert not s["finished"] and s["total"] == 6 and s["done"] == 1  # the invalid level alone is written
    assert s["buffered"] == 5 and s["buffered_by_worker"] == {"w1@test": 5}
    assert (s["queued"], s["claimed"], s["running"]) == (0, 0, 0)
    assert s["eta_s"] == 0  # nothing is left to run: the results only wait to be written
    # The database still shows them pending (running if claimed, queued if run before their claim).
    assert s["counts"].get("running", 0) + s["counts"].get("queued", 0) == 5
    row = next(csv.DictReader(io.StringIO(invoke("status", str(run_id), "--format", "csv", env=env).stdout)))
    assert (row["buffered"], row["claimed"], row["running"]) == ("5", "0", "0")
    table = invoke("status", str(run_id), env=env).stdout
    assert "0 running on a solver · 5 done, not yet written" in table
    assert "waiting in write buffers: w1@test 5" in table
    with serving(db_url, log_dir=tmp_path) as served:  # the dashboard's run page says the same
        code, body = served.get(f"/runs/{run_id}")
    assert code == 200 and "0 running, " in body and ">5 done, not yet written</span>" in body, body
    worker.stop()  # a worker stopping writes what it holds
    wait_for_run(db_url, run_id, timeout=30)
    s = status(env, run_id)
    assert s["finished"] and s["done"] == 6
    assert (s["buffered"], s["buffered_by_worker"], s["claimed"], s["running"]) == (0, {}, 0, 0)


def test_status_counts_a_published_result_only_while_its_attempt_waits_for_it(sqlite_url):
    """A published result counts while its attempt waits for it: not once written, taken over, or lapsed."""
    levels = [strip_level(i) for i in range(6)]
    run_id = build_run(sqlite_url, [Planned(levels[0], "solved")] + [Planned(lv, None) for lv in levels[1:]])
    h = [lv.hash for lv in levels]
    now = utcnow()
    engine = get_engine(sqlite_url)
    with engine.begin() as connection:
        # h0 was written since (final), h1 waits under a's claim, h2 ran before its claim (queued),
        # h3 was claimed again by b meanwhile: only h1 and h2 are a's buffered results.
        renew(connection, "a@h/1", "a@h", 60.0, {}, Doing(set(), {run_id: [(x, None) for x in h[:4]]}))
        renew(connection, "c@h/3", "c@h", 60.0, {}, Doing(set(), {run_id: [(h[5], "plain")]}))
    with session_scope(engine) as session:
        session.execute(update(Run).where(Run.id == run_id).values(mode="distributed", sent_at=now))
        session.execute(update(Worker).where(Worker.name == "c@h/3").values(lease_until=now - timedelta(1)))
        for i, holder, started in [
            (1, "a@h/1", now),
            (3, "b@h/2", now),
            (4, "a@h/1", None),
            (5, "a@h/1", now),
        ]:
            session.execute(
                update(Attempt)
                .where(Attempt.run_id == run_id, Attempt.level_hash == h[i])
                .values(status="running", worker=holder.split("/")[0], holder=holder, started_at=started)
            )
    with session_scope(engine) as session:
        p = run_progress(session, session.get(Run, run_id))
    assert p["buffered"] == 2 and p["buffered_by_worker"] == {"a@h": 2}
    assert p["claimed"] == 1  # h4: claimed, waiting its turn in a's group
    assert p["running"] == 2  # h3 under b, h5 under a (c's lapsed lease publishes nothing)
    assert p["queued"] == 0 and p["done"] == 1 and p["total"] == 6
    assert p["counts"] == {"solved": 1, "queued": 1, "running": 4}


def test_a_buffered_result_counts_once_for_its_own_heuristic_in_a_matrix_run(sqlite_url):
    """Two heuristics of each level pending; a worker holds one result of `plain` and one of an earlier
    worker's (no heuristic named): each counts once, against its own attempt, not the level's two."""
    levels = [strip_level(i) for i in range(2)]
    tried = [Planned(lv, None, heuristic=h) for lv in levels for h in ("plain", "prune")]
    run_id = build_run(sqlite_url, tried, heuristic="plain,prune", mode="distributed")
    h = [lv.hash for lv in levels]
    engine = get_engine(sqlite_url)
    with engine.begin() as connection:
        renew(connection, "a@h/1", "a@h", 60.0, {}, Doing(set(), {run_id: [(h[0], "plain"), (h[1], None)]}))
    with session_scope(engine) as session:
        session.execute(update(Run).where(Run.id == run_id).values(sent_at=utcnow()))
        session.execute(  # h0's prune runs under b's claim: not a's result
            update(Attempt)
            .where(Attempt.run_id == run_id, Attempt.level_hash == h[0], Attempt.heuristic == "prune")
            .values(status="running", worker="b@h", holder="b@h/2", started_at=utcnow())
        )
    with session_scope(engine) as session:
        p = run_progress(session, session.get(Run, run_id))
    assert p["buffered"] == 2 and p["buffered_by_worker"] == {"a@h": 2}
    assert p["queued"] == 1 and p["running"] == 1 and p["total"] == 4
