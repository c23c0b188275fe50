"""A run of several heuristics side by side sent to workers (`submit --heuristic a,b,c`): each (level,
heuristic) is an attempt of its own everywhere a worker or the scheduler touches it (claims, fencing
tokens, results, leases, the check of a task against the database, reconcile), on both brokers."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest
from sqlalchemy import select

from packsolve.attempt import ClaimVerdict, Result
from packsolve.db import task_match
from packsolve.db.attempts import ClaimBy, claim_many, record, stale_of
from packsolve.db.models import Attempt
from packsolve.db.reconcile import stale_attempts, take_stale
from packsolve.db.runs import RunOptions, create_run, mark_sent
from packsolve.db.session import session_scope
from packsolve.db.task_match import KnownAttempts, mismatches
from packsolve.db.workers import db_now
from packsolve.levels import read_levels
from packsolve.outcome import Outcome, SearchStats, Status
from packsolve.planning import plan_levels
from tests.integration.test_matrix_run import MATRIX, NODE_LIMIT, SLIDING, SUDOKU, cells, pack, solve
from tests.support.chaos_pack import audit, write_pack
from tests.support.fencing import lease, scheduler_loop, submit
from tests.support.inprocess import exported, invoke
from tests.support.services import wait_for_run

DECIDED = {"solved", "no_solution"}


def test_a_submitted_matrix_gives_every_cell_what_solve_gives_and_reruns_its_failed_cells_on_workers(
    tmp_path: Path, any_broker, db_url: str, start_worker
) -> None:
    env = {"PACKSOLVE_DATABASE_URL": db_url, "PACKSOLVE_BROKER_URL": any_broker.url}
    levels = pack(tmp_path)
    solve(env, str(levels), "--heuristic", MATRIX, "--label", "local")
    local = cells(exported("local", env))
    start_worker(any_broker.url, db_url, "m1@test", concurrency=2)
    out = invoke(
        "submit", str(levels), "--heuristic", MATRIX, "--node-limit", NODE_LIMIT, "--label", "dist", env=env
    )
    assert out.returncode == 0, out.stderr
    run_id = int(out.stdout.strip().splitlines()[-1])
    distinct = len({h for h, _ in local})
    assert f"{len(local)} attempt(s) ({distinct} level(s))" in out.stderr
    wait_for_run(db_url, run_id, timeout=120)
    records = exported("dist", env)
    assert cells(records) == local and len(records) == len(local)
    assert all(r["tries"] == 1 and r["worker"] == "m1@test" for r in records)
    # Level by level, as solve orders them: each level's heuristics next to each other.
    for i in range(0, len(records), 3):
        group = records[i : i + 3]
        assert [r["heuristic"] for r in group] == list(SUDOKU if group[0]["kind"] == "sudoku" else SLIDING)
    failed = {k for k, (status, _) in local.items() if status == "timeout"}
    assert failed and len({h for h, _ in failed}) < distinct  # some cells failed, not whole levels

    # A distributed rerun of its failed cells: each with the heuristic it failed with, nothing else.
    out = invoke("rerun", "dist", "--status", "timeout", "--label", "again", "--format", "json", env=env)
    assert out.returncode == 0, out.stderr
    said = json.loads(out.stdout)
    assert said["attempts"] == len(failed) and said["levels"] == len({h for h, _ in failed})
    wait_for_run(db_url, said["run"], timeout=120)
    again = exported("again", env)
    assert cells(again) == {k: local[k] for k in failed}
    assert all(r["worker"] == "m1@test" for r in again)

    # --skip-solved sends only the cells not decided before with their heuristic.
    undecided = {k for k, (status, _) in local.items() if status not in DECIDED}
    args = ("--heuristic", MATRIX, "--node-limit", NODE_LIMIT, "--skip-solved", "--label", "skipping")
    out = invoke("submit", str(levels), *args, env=env)
    assert out.returncode == 0, out.stderr
    settled = set(local) - undecided
    assert f"{len(settled)} attempt(s) of {len({h for h, _ in settled})} level(s) carried over" in out.stderr
    wait_for_run(db_url, int(out.stdout.strip().splitlines()[-1]), timeout=120)
    assert cells(exported("skipping", env)) == {k: local[k] for k in undecided}


def matrix_run(
    engine, tmp_path: Path, heuristic: str = "sudoku=plain+dlx", count: int = 2
) -> tuple[int, list[str]]:
    """Create a distributed run trying count sudoku levels with each heuristic; return it and the hashes."""
    path = tmp_path / "grids.sdk"
    lines = (Path(__file__).resolve().parents[2] / "examples" / "packs" / "sudoku" / "hard.sdk").read_text()
    grids = [line for line in lines.splitlines() if line and not line.startswith("#")]
    path.write_text("\n".join(grids[:count]) + "\n")
    levels = list(read_levels([str(path)]))
    with session_scope(engine) as s:
        run_id = create_run(
            s, plan_levels(levels, heuristic).attempts, RunOptions("distributed", max_tries=3)
        )
        mark_sent(s, run_id)
    return run_id, [lv.hash for lv in levels]


def row(engine, run_id: int, h: str, heuristic: str) -> Attempt:
    with session_scope(engine) as s:
        return s.scalars(
            select(Attempt).where(
                Attempt.run_id == run_id, Attempt.level_hash == h, Attempt.heuristic == heuristic
            )
        ).one()


def solved(nodes: int) -> Outcome:
    return Outcome(Status.SOLVED, "1" * 81, SearchStats(nodes=nodes))


def test_a_stale_result_of_one_heuristic_is_refused_and_never_lands_on_another_heuristics_attempt(
    either_engine, tmp_path: Path
) -> None:
    """Both heuristics' attempts of a level hold claim 1: a stale token 1 of plain's never lands on dlx's."""
    engine = either_engine
    run_id, (h, _) = matrix_run(engine, tmp_path)
    lease(engine, "a@host/1", 30)
    lease(engine, "b@host/2", 30)
    with engine.begin() as c:
        first = claim_many(c, run_id, [(h, "plain"), (h, "dlx")], ClaimBy("a@host", 3, 20, "a@host/1"))
    assert first.verdicts == {(h, "plain"): ClaimVerdict.RUN, (h, "dlx"): ClaimVerdict.RUN}
    assert first.tokens == {(h, "plain"): 1, (h, "dlx"): 1}  # the same token value, two attempts
    lease(engine, "a@host/1", -1)  # a is frozen past its lease: both its claims are taken back
    with session_scope(engine) as s:
        now = db_now(s)
        taken = take_stale(s, stale_attempts(s, now, now), 3)
    assert sorted(t.key for t in taken) == [(h, "dlx"), (h, "plain")] and not any(t.lost for t in taken)
    with engine.begin() as c:  # b claims plain's attempt again (token 2); dlx's waits, queued
        again = claim_many(c, run_id, [(h, "plain")], ClaimBy("b@host", 3, 20, "b@host/2"))
    assert again.tokens == {(h, "plain"): 2}
    stale = Result(run_id, h, solved(7), 81, "a@host", token=1, heuristic="plain")  # a thaws and reports
    with engine.begin() as c:
        assert record(c, [stale]) == 0
        assert [why for _, why in stale_of(c, [stale])] == [
            "its claim (token 1) is stale: now running, claim 2 (b@host/2)"
        ]
    # dlx's attempt was claimed once too (claims 1), and is queued: the stale result left it alone.
    other = row(engine, run_id, h, "dlx")
    assert (other.status, other.claims, other.nodes) == ("queued", 1, None)
    with engine.begin() as c:  # a stale dlx result of a's claim is refused as well
        assert record(c, [Result(run_id, h, solved(9), 81, "a@host", token=1, heuristic="dlx")]) == 0
    with engine.begin() as c:
        assert record(c, [Result(run_id, h, solved(5), 81, "b@host", token=2, heuristic="plain")]) == 1
    mine, other = row(engine, run_id, h, "plain"), row(engine, run_id, h, "dlx")
    assert (mine.status, mine.nodes, mine.worker) == ("solved", 5, "b@host")
    assert (other.status, other.nodes) == ("queued", None)


def test_a_task_naming_a_heuristic_the_run_does_not_try_a_level_with_is_refused_and_the_others_run(
    either_engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = either_engine
    run_id, (h1, h2) = matrix_run(engine, tmp_path)
    task = {(h1, "plain"): ("sudoku", None, None), (h1, "propagate"): ("sudoku", None, None)}
    with engine.connect() as c:
        verdict = mismatches(c, run_id, task, (None, None, None, None))
    assert verdict.whole is None and list(verdict.wrong) == [(h1, "propagate")]
    assert (
        f"level {h1[:12]} of run {run_id} is attempted with 'dlx', 'plain', the task says 'propagate'"
        == (verdict.wrong[h1, "propagate"])
    )
    # A worker's read-ahead (the attempts after a task's in pack order) that ends amid a level's
    # heuristics reads that level again, whole: its other heuristic is no mismatch.
    monkeypatch.setattr(task_match, "WINDOW", 3)  # (h1, plain), (h1, dlx), (h2, plain)
    known = KnownAttempts()
    with engine.connect() as c:
        assert known.mismatches(c, run_id, {(h1, "plain"): ("sudoku", None, None)}, (None,) * 4).wrong == {}
        late = known.mismatches(c, run_id, {(h2, "dlx"): ("sudoku", None, None)}, (None,) * 4)
    assert late.wrong == {} and late.final == {}


@pytest.mark.slow
@pytest.mark.usefixtures("chaos_env")
def test_kill_minus_9_of_a_worker_amid_a_matrix_run_leaves_one_result_per_level_and_heuristic(
    tmp_path: Path, any_broker, pg_url: str, start_worker
) -> None:
    broker = any_broker.url
    env = {"PACKSOLVE_DATABASE_URL": pg_url, "PACKSOLVE_BROKER_URL": broker}
    levels = 60
    path = write_pack(tmp_path, levels, ms=(30, 150), seed=3)
    start_worker(broker, pg_url, "steady@test", concurrency=2)
    victim = start_worker(broker, pg_url, "victim@test", concurrency=2)
    run_id = submit(env, str(path), "--heuristic", "sleep,cpus", "--time-limit", "3")
    with scheduler_loop(env, grace=1):
        for _ in range(3):
            time.sleep(2.0)
            os.killpg(victim.proc.pid, signal.SIGKILL)  # Celery's main process, its pool, the solvers
            victim.proc.wait(10)
            victim = start_worker(broker, pg_url, "victim@test", concurrency=2)
        wait_for_run(pg_url, run_id, timeout=150)
    records = exported(str(run_id), env)
    per_cell = {(r["level_hash"], r["heuristic"]) for r in records}
    assert len(records) == len(per_cell) == 2 * levels
    assert {h for _, h in per_cell} == {"sleep", "cpus"}
    figures = audit(records, 2 * levels)
    assert figures["final"] == 2 * levels and figures["statuses"] == {"solved": 2 * levels}, figures
    assert figures["max_tries"] >= 2  # the kills did interrupt attempts, which were run again
