"""`packsolve rerun`: a child run of the parent's failures, locally and on real workers."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from packsolve.db.models import Run
from packsolve.db.session import get_engine, session_scope
from tests.support.inprocess import invoke
from tests.support.report_runs import overlapping_failures
from tests.support.services import wait_for_run

pytestmark = pytest.mark.usefixtures("chaos_env")


def pack_with_two_slow(directory: Path) -> Path:
    """Three quick levels and two that need 1.5 s: under a 0.5 s limit those two time out."""
    path = directory / "pack.jsonl"
    ms = [10, 1500, 10, 1500, 10]
    path.write_text("".join(json.dumps({"kind": "chaos", "id": i, "ms": m}) + "\n" for i, m in enumerate(ms)))
    return path


# Project Euler 96's first grid: plain depth-first search solves it in moments.
EASY_SUDOKU = "003020600900305001001806400008102900700000008006708200002609500800203009005010300"


def last_int(text: str) -> int:
    return int(text.strip().splitlines()[-1])


def statuses(env: dict[str, str], run_id: int) -> list[str]:
    res = invoke("export", str(run_id), env=env)
    assert res.returncode == 0, res.stderr
    return [json.loads(line)["status"] for line in res.stdout.splitlines()]


@pytest.mark.slow
def test_local_rerun_of_timeouts_with_more_time_solves_them_in_a_linked_child_run(tmp_path, sqlite_url):
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url}
    res = invoke("solve", str(pack_with_two_slow(tmp_path)), "--time-limit", "0.5", "-j", "2", "-q", env=env)
    assert res.returncode == 0, res.stderr
    parent = last_int(invoke("status", "--format", "json", env=env).stdout.split('"run": ')[1].split(",")[0])
    assert sorted(statuses(env, parent)) == ["solved"] * 3 + ["timeout"] * 2
    res = invoke("rerun", str(parent), "--local", "--time-limit", "5", "-j", "2", "--format", "json", env=env)
    assert res.returncode == 0, res.stderr
    child = json.loads(res.stdout)["run"]  # the child's summary, the one document on stdout
    assert statuses(env, child) == ["solved", "solved"]
    with session_scope(get_engine(sqlite_url)) as session:
        run = session.get(Run, child)
        assert (run.parent_id, run.mode, run.time_limit, run.total) == (parent, "local", 5.0, 2)
    # Another heuristic on the parent's solved levels: the choice of levels and solver both hold.
    res = invoke(
        "rerun", str(parent), "--status", "solved", "--heuristic", "deaf", "--time-limit", "0.3", env=env
    )
    assert res.returncode == 0, res.stderr
    assert statuses(env, last_int(res.stdout)) == ["timeout"] * 3


def test_rerun_refuses_unknown_statuses_and_empty_selections(tmp_path, sqlite_url):
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url}
    assert (
        invoke("solve", str(pack_with_two_slow(tmp_path)), "--time-limit", "5", "-q", env=env).returncode == 0
    )
    res = invoke("rerun", "latest", "--status", "timeout,bogus", env=env)
    assert res.returncode != 0 and "bogus" in res.stderr
    res = invoke("rerun", "latest", "--local", env=env)  # nothing failed
    assert res.returncode != 0 and "has no attempt with status" in res.stderr
    res = invoke("rerun", "latest", "--status", "solved", "--kind", "sudoku", env=env)
    assert res.returncode != 0 and "of kind sudoku" in res.stderr


def test_distributed_rerun_goes_to_the_workers_and_links_the_child(tmp_path, broker, pg_url, start_worker):
    env = {"PACKSOLVE_DATABASE_URL": pg_url, "PACKSOLVE_BROKER_URL": broker}
    start_worker(broker, pg_url, "w1@test", concurrency=2)
    res = invoke("submit", str(pack_with_two_slow(tmp_path)), "--time-limit", "0.5", env=env)
    assert res.returncode == 0, res.stderr
    parent = last_int(res.stdout)
    wait_for_run(pg_url, parent, timeout=60)
    res = invoke(
        "rerun", str(parent), "--status", "timeout", "--time-limit", "5", "--label", "more-time", env=env
    )
    assert res.returncode == 0, res.stderr
    child = last_int(res.stdout)
    wait_for_run(pg_url, child, timeout=60)
    assert statuses(env, child) == ["solved", "solved"]
    with session_scope(get_engine(pg_url)) as session:
        run = session.get(Run, child)
        assert (run.parent_id, run.mode, run.label, run.state) == (
            parent,
            "distributed",
            "more-time",
            "finished",
        )


def test_rerun_with_a_heuristic_of_one_kind_leaves_the_other_kinds_on_their_default(tmp_path, sqlite_url):
    """`rerun --heuristic dlx` on sudoku and sliding levels: never an error for the sliding ones."""
    pack = tmp_path / "mixed.jsonl"
    pack.write_text(
        json.dumps({"kind": "sudoku", "grid": EASY_SUDOKU})
        + "\n"
        + json.dumps({"kind": "sliding", "tiles": [[1, 3], [0, 2]]})
        + "\n"
    )
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url}
    res = invoke("solve", str(pack), "--time-limit", "10", "-j", "1", "-q", env=env)
    assert res.returncode == 0, res.stderr
    parent = last_int(invoke("status", "--format", "json", env=env).stdout.split('"run": ')[1].split(",")[0])
    res = invoke("rerun", str(parent), "--status", "solved", "--heuristic", "dlx", "--local", env=env)
    assert res.returncode == 0, res.stderr
    assert "note: sliding has no heuristic 'dlx': its default 'pdb' runs" in res.stderr
    records = [
        json.loads(line) for line in invoke("export", res.stdout.split()[-1], env=env).stdout.splitlines()
    ]
    assert sorted((r["kind"], r["heuristic"], r["status"]) for r in records) == [
        ("sliding", "pdb", "solved"),
        ("sudoku", "dlx", "solved"),
    ]
    res = invoke(
        "rerun", str(parent), "--status", "solved", "--heuristic", "sudoku=plain,sliding=astar", env=env
    )
    assert res.returncode == 0, res.stderr
    records = [
        json.loads(line) for line in invoke("export", res.stdout.split()[-1], env=env).stdout.splitlines()
    ]
    assert sorted((r["heuristic"], r["status"]) for r in records) == [
        ("astar", "solved"),
        ("plain", "solved"),
    ]


def test_the_rerun_report_failures_suggests_takes_exactly_its_group(sqlite_url):
    """Each group's command (rerun --group KEY) makes a child of exactly the group's levels, no more."""
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url}
    parent = overlapping_failures(sqlite_url)
    res = invoke("report", "failures", str(parent), "--format", "json", env=env)
    assert res.returncode == 0, res.stderr
    groups = json.loads(res.stdout)["groups"]
    assert sorted(g["count"] for g in groups) == [1, 2, 3]
    for g in groups:
        words = shlex.split(g["rerun"])
        assert words[:2] == ["packsolve", "rerun"]
        res = invoke(*words[1:], "-j", "1", "--format", "json", env=env)
        assert res.returncode == 0, res.stderr
        child = json.loads(res.stdout)["run"]
        with session_scope(get_engine(sqlite_url)) as session:
            assert session.get(Run, child).total == g["count"], g  # type: ignore[union-attr]
    # A key that is not one, or one of no group of this run: one line each, usage errors exit 2.
    res = invoke("rerun", str(parent), "--group", "time limit", env=env)
    assert res.returncode == 2 and "not a failure group's key" in res.stderr and "Traceback" not in res.stderr
    res = invoke("rerun", str(parent), "--group", "timeout:00000000", env=env)
    assert res.returncode != 0 and "in failure group timeout:00000000" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
