"""solve/rerun --split-after: a level expected to take longer runs as parts the local pool's processes share.

Real solver children, real SQLite and PostgreSQL. A first run gives the levels a history; the second,
with --split-after below it, splits the levels whose kind can: the sliding puzzle (best of all, round by
round, the bound shared) ends with an answer of the optimal length, the knight's tour (first found)
with a tour, each verified as any answer is; every part's run is written (`show` lists them); the level
of a kind without split runs whole.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from sqlalchemy import func, select

from packsolve.db.models import Part
from packsolve.db.session import get_engine, session_scope
from packsolve.execution.spec import AttemptSpec, Limits
from packsolve.split_plans import parts_for, probe_expected, split_of
from tests.support.dashboard import serving
from tests.support.inprocess import exported, invoke
from tests.support.services import child_env, packsolve_cmd
from tests.support.waiting import wait_for

pytestmark = pytest.mark.usefixtures("chaos_env")

# Korf's fifteen-puzzle #25 (optimal 52 moves: about half a second with linear-conflict), a 6x6 knight's
# tour from a corner, and a level of the test kind `chaos`, which has no split.
SLIDING = {"kind": "sliding", "tiles": [[11, 4, 2, 7], [1, 0, 10, 15], [6, 9, 14, 8], [3, 13, 5, 12]]}
KNIGHTS = {"kind": "knights_tour", "size": 6, "start": [0, 0]}
CHAOS = {"kind": "chaos", "id": 1, "ms": 300}
HEURISTIC = "sliding=linear-conflict,knights_tour=plain,chaos=sleep"


def write_pack(tmp_path: Path) -> Path:
    pack = tmp_path / "pack.jsonl"
    pack.write_text("".join(json.dumps(level) + "\n" for level in (SLIDING, KNIGHTS, CHAOS)))
    return pack


def solve(env: dict[str, str], *args: str) -> dict:
    out = invoke("solve", *args, "--heuristic", HEURISTIC, "-j", "2", "-q", "--format", "json", env=env)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_split_levels_run_as_parts_and_end_as_their_whole_runs_did(tmp_path: Path, db_url: str) -> None:
    env = {"PACKSOLVE_DATABASE_URL": db_url}
    pack = write_pack(tmp_path)
    whole = {r["kind"]: r for r in exported(str(solve(env, str(pack), "--time-limit", "60")["run"]), env)}
    assert {r["status"] for r in whole.values()} == {"solved"} and whole["sliding"]["length"] == 52
    split_run = solve(env, str(pack), "--time-limit", "60", "--split-after", "0.001")["run"]
    after = {r["kind"]: r for r in exported(str(split_run), env)}
    assert {k: r["status"] for k, r in after.items()} == {k: "solved" for k in whole}
    assert after["sliding"]["length"] == 52  # optimal, as the whole search's
    assert "parts' answers (52)" in after["sliding"]["message"]
    assert "part " in after["knights_tour"]["message"] and after["knights_tour"]["length"] == 36
    assert after["chaos"]["worker"] != after["sliding"]["worker"]  # run whole, by a pool process

    with session_scope(get_engine(db_url)) as session:
        parts = list(session.scalars(select(Part).where(Part.run_id == split_run)))
    by_kind = {h: [p for p in parts if p.level_hash == after[k]["level_hash"]] for k, h in (
        ("sliding", "sliding"), ("knights_tour", "knights_tour"), ("chaos", "chaos"))}  # fmt: skip
    sliding, knights = by_kind["sliding"], by_kind["knights_tour"]
    assert not by_kind["chaos"]  # a kind without split is never split
    count = sliding[0].parts
    assert count >= 16 and {p.part for p in sliding} == set(range(count))  # at least 8 per process
    assert max(p.round for p in sliding) > 1
    assert all(
        p.window_lo is not None and p.window_hi is not None and p.window_lo <= p.window_hi for p in sliding
    )
    assert {p.round for p in knights} == {1}  # first found: one round
    # The level's figures are its parts': nodes summed (the split's own expansions besides), CPU summed.
    assert after["sliding"]["nodes"] >= sum(p.nodes or 0 for p in sliding)
    # (A part searching ahead of its round when the level was decided stops within a few thousand
    # nodes, after the level's result was written: its row has its CPU, the level's figures do not.)
    assert after["sliding"]["cpu_s"] == pytest.approx(sum(p.cpu_s or 0.0 for p in sliding), rel=0.05)
    # With the bound shared, the parts search about what the whole search did.
    assert after["sliding"]["nodes"] < 2 * whole["sliding"]["nodes"]

    shown = invoke("show", after["sliding"]["level_hash"], "--format", "json", env=env)
    assert shown.returncode == 0, shown.stderr
    history = {h["run"]: h for h in json.loads(shown.stdout)["history"]}
    assert history[split_run]["parts"] and len(history[split_run]["parts"]) == len(sliding)
    assert history[whole["sliding"]["run"]]["parts"] is None
    table = invoke("show", after["sliding"]["level_hash"], env={**env, "COLUMNS": "120"})
    assert f"run {split_run} linear-conflict: {count} parts" in table.stdout
    with serving(db_url, log_dir=tmp_path) as served:  # the level's page lists them too
        code, body = served.get(f"/levels/{after['sliding']['level_hash']}")
    assert code == 200 and "Split into parts" in body and f"{count} parts</h3>" in body
    assert body.count('<td class="status-no_solution">no_solution</td>') >= 1


def test_a_cancelled_split_level_stops_its_parts_and_resume_splits_it_again(
    tmp_path: Path, sqlite_url: str
) -> None:
    """Korf #7 (52 moves, about 4 s with linear-conflict) timed out at 0.3 s: its history says it takes
    longer than 0.1 s, so it is split; `cancel` stops the parts; `resume` splits it again and solves it."""
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url}
    pack = tmp_path / "hard.jsonl"
    level = {"kind": "sliding", "tiles": [[2, 11, 15, 5], [13, 4, 6, 7], [12, 8, 10, 1], [9, 3, 14, 0]]}
    pack.write_text(json.dumps(level) + "\n")
    args = ("--heuristic", "linear-conflict", "-j", "2", "-q")
    first = invoke("solve", str(pack), *args, "--time-limit", "0.3", "--format", "json", env=env)
    assert first.returncode == 0 and json.loads(first.stdout)["counts"] == {"timeout": 1}, first.stderr
    solving = subprocess.Popen(
        packsolve_cmd("solve", str(pack), *args, "--time-limit", "120", "--split-after", "0.1"),
        env=child_env(env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        engine = get_engine(sqlite_url)

        def parts_ran() -> bool:
            with session_scope(engine) as session:
                return session.scalar(select(func.count()).select_from(Part)) >= 4

        wait_for(parts_ran, 60, every=0.1, what="four parts of the split level run")
        assert invoke("cancel", "2", env=env).returncode == 0
        assert solving.wait(30) == 1, solving.stderr.read() if solving.stderr else ""
    finally:
        if solving.poll() is None:
            solving.kill()
            solving.wait(10)
    [cancelled] = exported("2", env)
    assert cancelled["status"] == "cancelled"
    resumed = invoke("resume", "2", "-q", env=env)
    assert resumed.returncode == 0, resumed.stderr
    [done] = exported("2", env)
    assert done["status"] == "solved" and done["length"] == 52 and "parts' answers (52)" in done["message"]


def test_split_after_is_refused_in_one_line_where_it_cannot_apply(tmp_path: Path, sqlite_url: str) -> None:
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url}
    pack = write_pack(tmp_path)
    parent = solve(env, str(pack), "--time-limit", "60")["run"]
    for args, said in (
        (("--split-after", "0"), "--split-after"),
        (("--split-after", "soon"), "--split-after"),
    ):
        out = invoke("rerun", str(parent), "--status", "solved", *args, env=env)
        assert out.returncode == 2 and said in out.stderr, out.stderr
        assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr


def test_a_level_without_history_is_split_once_its_first_attempt_runs_past_split_after(
    tmp_path: Path, sqlite_url: str
) -> None:
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url}
    pack = write_pack(tmp_path)  # never solved before: no history
    run = solve(env, str(pack), "--time-limit", "60", "--split-after", "0.1")["run"]
    after = {r["kind"]: r for r in exported(str(run), env)}
    assert {k: r["status"] for k, r in after.items()} == {
        "sliding": "solved",
        "knights_tour": "solved",
        "chaos": "solved",
    }
    sliding = after["sliding"]
    assert sliding["length"] == 52 and "split after a first attempt of " in sliding["message"]
    assert sliding["wall_s"] >= 0.1  # its first attempt's time counts
    assert "split after" not in (after["knights_tour"]["message"] or "")  # ended before: run whole
    with session_scope(get_engine(sqlite_url)) as session:
        parts = list(session.scalars(select(Part).where(Part.run_id == run)))
    assert {p.level_hash for p in parts} == {sliding["level_hash"]}
    assert sliding["nodes"] >= sum(p.nodes or 0 for p in parts)
    # Cut as a level expected to take several times --split-after, within its wall limit.
    cut = split_of(
        AttemptSpec("sliding", "linear-conflict", SLIDING, Limits(60.0)),
        parts_for(2, probe_expected(0.1, 60.0)),
    )
    assert cut is not None and {p.parts for p in parts} == {len(cut.parts)}
