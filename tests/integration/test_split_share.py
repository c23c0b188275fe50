"""--split-after share: a level expected to take longer than each process's share of the night is split.

The share is worked out when the run is made, from the history of the run's levels (their expected
times summed, over the local processes or the live worker processes), told in one line, and recorded
with the run. Real solver children and workers, real SQLite and PostgreSQL, Redis and RabbitMQ. The
history is made by a first run; the sliding level's time in it is then set to 100 s (the night it
would make is what this test needs, not a night that long), so the share is about 50 s on 2 processes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import select, update

from packsolve.db.models import Attempt, Part, Run
from packsolve.db.session import get_engine, session_scope
from packsolve.db.workers import live_workers
from tests.support.inprocess import exported, invoke
from tests.support.services import wait_for_run
from tests.support.waiting import wait_for

pytestmark = pytest.mark.usefixtures("chaos_env")

# Korf's fifteen-puzzle #25 (52 moves optimal, ~0.5 s with linear-conflict), a 6x6 knight's tour from a
# corner, and a level of the test kind `chaos` (no split).
SLIDING = {"kind": "sliding", "tiles": [[11, 4, 2, 7], [1, 0, 10, 15], [6, 9, 14, 8], [3, 13, 5, 12]]}
KNIGHTS = {"kind": "knights_tour", "size": 6, "start": [0, 0]}
CHAOS = {"kind": "chaos", "id": 1, "ms": 300}
HEURISTIC = "sliding=linear-conflict,knights_tour=plain,chaos=sleep"
# As history says: the sliding level took this long.
HARD_S = 100.0


def write_pack(tmp_path: Path) -> Path:
    pack = tmp_path / "pack.jsonl"
    pack.write_text("".join(json.dumps(level) + "\n" for level in (SLIDING, KNIGHTS, CHAOS)))
    return pack


def solve(env: dict[str, str], pack: Path, *args: str):
    return invoke("solve", str(pack), "--heuristic", HEURISTIC, "-j", "2", "--format", "json", *args, env=env)


def make_history(env: dict[str, str], db: str, pack: Path) -> dict[str, dict]:
    """Solve the pack once, then make its sliding level's attempt one of HARD_S; return the records."""
    out = solve(env, pack, "-q")
    assert out.returncode == 0, out.stderr
    records = {r["kind"]: r for r in exported(str(json.loads(out.stdout)["run"]), env)}
    with session_scope(get_engine(db)) as session:
        session.execute(
            update(Attempt)
            .where(Attempt.level_hash == records["sliding"]["level_hash"])
            .values(wall_s=HARD_S, cpu_s=HARD_S)
        )
    return records


def run_options(db: str, run_id: int) -> dict:
    with session_scope(get_engine(db)) as session:
        return dict(session.scalars(select(Run.options).where(Run.id == run_id)).one())


def split_levels(db: str, run_id: int) -> set[str]:
    with session_scope(get_engine(db)) as session:
        return set(session.scalars(select(Part.level_hash).where(Part.run_id == run_id)))


def live_processes(db: str) -> int:
    with session_scope(get_engine(db)) as session:
        return len(live_workers(session))


def expected_share(records: dict[str, dict]) -> float:
    """The share of each of 2 processes: the levels' expected times (their single past times) over 2."""
    return (HARD_S + records["knights_tour"]["wall_s"] + records["chaos"]["wall_s"]) / 2


def test_a_night_without_history_is_refused_in_one_line_naming_what_works(
    tmp_path: Path, db_url: str
) -> None:
    out = solve({"PACKSOLVE_DATABASE_URL": db_url}, write_pack(tmp_path), "--split-after", "share")
    assert out.returncode == 2, out.stderr
    [line] = out.stderr.strip().splitlines()
    assert "--split-after" in line and "none of its 3 attempt(s) has one" in line
    assert "give a duration (e.g. --split-after 10m)" in line and "Traceback" not in out.stderr
    with session_scope(get_engine(db_url)) as session:
        assert not list(session.scalars(select(Run.id)))  # no run was made


def test_solve_splits_the_level_past_the_nights_share_and_says_so(tmp_path: Path, db_url: str) -> None:
    env = {"PACKSOLVE_DATABASE_URL": db_url}
    pack = write_pack(tmp_path)
    records = make_history(env, db_url, pack)
    share = expected_share(records)
    out = solve(env, pack, "--split-after", "share", "--time-limit", "60")
    assert out.returncode == 0, out.stderr
    assert f"--split-after share: levels expected past {share:.1f} s are split" in out.stderr
    assert "over 2 process(es), from the history of 3 of its 3 attempt(s)" in out.stderr
    run_id = json.loads(out.stdout)["run"]
    options = run_options(db_url, run_id)
    assert options["split_after"] == pytest.approx(share, abs=0.01)
    assert options["split_share"]["processes"] == 2 and options["split_share"]["known"] == 3
    after = {r["kind"]: r for r in exported(str(run_id), env)}
    assert {r["status"] for r in after.values()} == {"solved"}
    # Only the level expected past the share is split; the others (a knight's tour its kind could
    # split, expected well under the share) run whole.
    assert split_levels(db_url, run_id) == {records["sliding"]["level_hash"]}
    assert after["sliding"]["length"] == 52 and "parts' answers (52)" in after["sliding"]["message"]
    assert "part " not in (after["knights_tour"]["message"] or "")


def test_a_short_night_splits_nothing_below_the_floor(tmp_path: Path, sqlite_url: str) -> None:
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url}
    pack = write_pack(tmp_path)
    assert solve(env, pack, "-q").returncode == 0  # a night of about a second: its share is the floor
    out = solve(env, pack, "--split-after", "share")
    assert out.returncode == 0, out.stderr
    assert "levels expected past 10.0 s (the least it splits at) are split" in out.stderr
    assert not split_levels(sqlite_url, json.loads(out.stdout)["run"])


def test_one_process_splits_nothing_and_says_so(tmp_path: Path, sqlite_url: str) -> None:
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url}
    for split_after in ("share", "1s"):  # share needs no history here: nothing would use it
        out = invoke(
            "solve", str(write_pack(tmp_path)), "--heuristic", HEURISTIC, "-j", "1", "--format", "json",
            "--split-after", split_after, env=env,
        )  # fmt: skip
        assert out.returncode == 0, out.stderr
        assert (
            "--split-after splits nothing on one process: a split level's parts need 2 or more" in out.stderr
        )
        run_id = json.loads(out.stdout)["run"]
        assert "split_after" not in run_options(sqlite_url, run_id)  # a resumed run splits nothing either
        assert not split_levels(sqlite_url, run_id)


def test_submit_shares_the_night_among_the_live_worker_processes(
    tmp_path: Path, any_broker, db_url: str, start_worker
) -> None:
    env = {"PACKSOLVE_DATABASE_URL": db_url, "PACKSOLVE_BROKER_URL": any_broker.url}
    pack = write_pack(tmp_path)
    records = make_history(env, db_url, pack)
    args = ("--heuristic", HEURISTIC, "--time-limit", "60", "--split-after", "share")
    refused = invoke("submit", str(pack), *args, env=env)  # no worker is live yet
    assert refused.returncode == 2, refused.stderr
    [line] = refused.stderr.strip().splitlines()
    assert "none is live: start the workers first, or give a duration" in line
    start_worker(any_broker.url, db_url, "share@test", concurrency=2)
    wait_for(lambda: live_processes(db_url) == 2, timeout=60)  # each process says it is live on its own
    out = invoke("submit", str(pack), *args, env=env)
    assert out.returncode == 0, out.stderr
    share = expected_share(records)
    assert f"levels expected past {share:.1f} s are split; the night's expected" in out.stderr
    run_id = int(out.stdout.strip().splitlines()[-1])
    wait_for_run(db_url, run_id, timeout=120)
    assert run_options(db_url, run_id)["split_after"] == pytest.approx(share, abs=0.01)
    after = {r["kind"]: r for r in exported(str(run_id), env)}
    assert {r["status"] for r in after.values()} == {"solved"}
    assert split_levels(db_url, run_id) == {records["sliding"]["level_hash"]}
    assert after["sliding"]["length"] == 52 and "parts' answers (52)" in after["sliding"]["message"]
