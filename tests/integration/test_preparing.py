"""A heuristic's once-per-machine work (sliding pattern tables) is done before its attempts, outside their
limits: by `solve` before its pool starts, by a worker's pool process before it claims them."""

from __future__ import annotations

import json
import re
import signal
import subprocess

from tests.support.inprocess import invoke
from tests.support.services import child_env, packsolve_cmd, wait_for_run
from tests.support.waiting import wait_until

# Easy 15-puzzles (one or two moves from the goal): their search takes milliseconds, so an attempt
# that times out under --time-limit 3 could only have been building pdb-663's tables (~10 s of CPU).
EASY = [
    [[1, 0, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11], [12, 13, 14, 15]],
    [[1, 2, 0, 3], [4, 5, 6, 7], [8, 9, 10, 11], [12, 13, 14, 15]],
    [[4, 1, 2, 3], [5, 0, 6, 7], [8, 9, 10, 11], [12, 13, 14, 15]],
]
BUILT = re.compile(r"built the pdb-663 pattern tables for 4x4 in ([0-9.]+) s")


def easy_pack(tmp_path):
    pack = tmp_path / "easy.jsonl"
    pack.write_text("".join(json.dumps({"kind": "sliding", "tiles": t}) + "\n" for t in EASY))
    return pack


def export(env, run_id=1):
    res = invoke("export", str(run_id), env=env)
    assert res.returncode == 0, res.stderr
    return [json.loads(line) for line in res.stdout.splitlines()]


def test_solve_builds_pdb_663_tables_first_so_a_limit_shorter_than_the_build_solves(tmp_path, sqlite_url):
    cache = tmp_path / "cache"
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url, "PACKSOLVE_CACHE_DIR": str(cache)}
    pack = easy_pack(tmp_path)
    res = invoke("solve", str(pack), "--heuristic", "pdb-663", "--time-limit", "3", env=env)
    assert res.returncode == 0, res.stderr
    assert f"building the pdb-663 pattern tables for 4x4 once (about 10 s; kept in {cache})" in res.stderr
    built = BUILT.search(res.stderr)
    assert built, res.stderr
    records = export(env)
    assert [r["status"] for r in records] == ["solved"] * 3
    # The attempts' times are the search's alone: none of them carries the build.
    assert all(r["wall_s"] < float(built.group(1)) for r in records)
    assert sorted(p.name for p in cache.glob("*.bin")) == [
        "sliding-pdb-v1-4x4-1-2-3.bin",
        "sliding-pdb-v1-4x4-4-5-8-9-12-13.bin",
        "sliding-pdb-v1-4x4-6-7-10-11-14-15.bin",
    ]
    again = invoke("solve", str(pack), "--heuristic", "pdb-663", "--time-limit", "3", env=env)
    assert again.returncode == 0, again.stderr
    assert "building" not in again.stderr  # kept: nothing to build the second time
    assert [r["status"] for r in export(env, 2)] == ["solved"] * 3


def test_tables_that_cannot_be_kept_end_the_attempts_with_a_line_saying_what_would_work(tmp_path, sqlite_url):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url, "PACKSOLVE_CACHE_DIR": str(blocked)}
    res = invoke("solve", str(easy_pack(tmp_path)), "--heuristic", "pdb", "--time-limit", "3", env=env)
    assert res.returncode == 0, res.stderr  # the run was carried out: its attempts are errors, not timeouts
    assert f"could not prepare the pdb pattern tables for 4x4 ({blocked} could not be written)" in res.stderr
    records = export(env)
    assert [r["status"] for r in records] == ["error"] * 3
    for r in records:
        assert r["message"].startswith("could not prepare the pdb pattern tables for 4x4")
        assert "`packsolve kinds --prepare sliding pdb --size 4`" in r["message"]


def test_kinds_prepare_builds_the_tables_ahead_then_has_nothing_left_to_do(tmp_path):
    cache = tmp_path / "cache"
    env = {"PACKSOLVE_CACHE_DIR": str(cache)}
    pack = easy_pack(tmp_path)

    def check_says():
        res = invoke("check", str(pack), "--format", "json", cwd=tmp_path, env=env)
        assert res.returncode == 0, res.stderr
        return [(p["what"], p["ready"]) for p in json.loads(res.stdout)["prepare"]]

    assert check_says() == [("the pdb pattern tables for 4x4", False)]
    res = invoke("kinds", "--prepare", "sliding", "pdb", "--size", "4", env=env)
    assert res.returncode == 0, res.stderr
    assert "building the pdb pattern tables for 4x4 once (about a second" in res.stderr
    assert len(list(cache.glob("*.bin"))) == 3
    assert check_says() == [("the pdb pattern tables for 4x4", True)]
    again = invoke("kinds", "--prepare", "sliding", "pdb", "--size", "4x4", env=env)
    assert again.returncode == 0 and "building" not in again.stderr
    assert f"the pdb pattern tables for 4x4: ready ({cache})" in again.stderr
    nothing = invoke("kinds", "--prepare", "sliding", "plain", "--size", "4", env=env)
    assert nothing.returncode == 0 and "sliding plain: nothing to prepare" in nothing.stderr
    no_size = invoke("kinds", "--prepare", "sliding", "pdb-6666", env=env)
    assert no_size.returncode == 2 and "give the size of the levels to prepare for" in no_size.stderr
    assert "Traceback" not in no_size.stderr


def test_a_worker_builds_pdb_663_tables_before_claiming_so_a_short_limit_solves(
    tmp_path, sqlite_url, broker, start_worker
):
    cache = tmp_path / "cache"
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url, "PACKSOLVE_BROKER_URL": broker}
    worker = start_worker(broker, sqlite_url, "w1@test", env={"PACKSOLVE_CACHE_DIR": str(cache)})
    res = invoke("submit", str(easy_pack(tmp_path)), "--heuristic", "pdb-663", "--time-limit", "3", env=env)
    assert res.returncode == 0, res.stderr
    run_id = int(res.stdout.strip().splitlines()[-1])
    wait_for_run(sqlite_url, run_id, timeout=240)
    records = export(env, run_id)
    assert [r["status"] for r in records] == ["solved"] * 3
    assert all(r["tries"] == 1 and r["worker"] == "w1@test" for r in records)
    assert wait_until(lambda: BUILT.search(worker.log()), timeout=10), worker.log()
    assert "building the pdb-663 pattern tables for 4x4 once" in worker.log()
    assert all(r["wall_s"] < float(BUILT.search(worker.log()).group(1)) for r in records)
    # The build releases the GIL: the lease thread kept renewing, and saw no freeze, meanwhile.
    assert "had lapsed" not in worker.log() and "was frozen" not in worker.log()


def test_ctrl_c_while_the_tables_build_cancels_the_run_as_a_ctrl_c_while_solving_does(tmp_path, sqlite_url):
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url, "PACKSOLVE_CACHE_DIR": str(tmp_path / "cache")}
    err = tmp_path / "stderr"
    with open(err, "w") as out:
        solve = subprocess.Popen(
            packsolve_cmd("solve", str(easy_pack(tmp_path)), "--heuristic", "pdb-663", "--time-limit", "3"),
            env=child_env(env),
            stdout=subprocess.DEVNULL,
            stderr=out,
        )
        try:
            assert wait_until(lambda: "building the pdb-663" in err.read_text(), timeout=60), err.read_text()
            solve.send_signal(signal.SIGINT)
            assert solve.wait(60) == 130, err.read_text()
        finally:
            if solve.poll() is None:
                solve.kill()
    assert "Traceback" not in err.read_text()
    assert "run 1 interrupted: 3 level(s) have no result" in err.read_text()
    records = export(env)
    assert [r["status"] for r in records] == ["cancelled"] * 3
    assert {r["message"] for r in records} == {"cancelled: the local run was interrupted before it ran"}
