"""`packsolve solve` end to end on the local process pool with SQLite, as a new user runs it."""

from __future__ import annotations

import json

from packsolve.puzzles import get_kind
from tests.support.inprocess import invoke
from tests.support.packs import make_pack


def test_solve_then_export_gives_one_verified_record_per_level(tmp_path):
    pack = make_pack(tmp_path)
    env = {"PACKSOLVE_DATABASE_URL": f"sqlite:///{tmp_path / 'r.db'}"}
    res = invoke("solve", str(pack), "--time-limit", "10", "--jobs", "2", env=env, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "solved" in res.stdout and "4 of 6" in res.stdout
    assert "1 duplicate" in res.stderr

    res = invoke("export", "latest", "--format", "jsonl", env=env, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    records = [json.loads(line) for line in res.stdout.splitlines()]
    by_status: dict[str, list] = {}
    for r in records:
        by_status.setdefault(r["status"], []).append(r)
    assert {k: len(v) for k, v in by_status.items()} == {"solved": 4, "no_solution": 1, "invalid": 1}
    kind = get_kind("onestroke")
    from packsolve.levels import read_levels

    levels = {lv.hash: lv for lv in read_levels([pack])}
    for r in by_status["solved"]:
        level = kind.parse(levels[r["level_hash"]].data)
        assert kind.verify(level, r["solution"]) is None
        assert r["length"] == len(r["solution"])
        assert r["nodes"] >= r["length"] and r["wall_s"] > 0 and r["peak_rss_mb"] > 0
        assert r["worker"].startswith("local@") and r["finished_at"].endswith("+00:00")
    [bad] = by_status["invalid"]
    assert "unknown character" in bad["message"] and bad["level"].endswith("levels.json:1[3]")
    assert set(records[0]) == {
        "run",
        "level",
        "level_hash",
        "kind",
        "heuristic",
        "status",
        "solution",
        "length",
        "nodes",
        "wall_s",
        "cpu_s",
        "peak_rss_mb",
        "worker",
        "tries",
        "started_at",
        "finished_at",
        "message",
    }


def test_csv_export_has_the_same_columns_and_json_solutions(tmp_path):
    pack = make_pack(tmp_path)
    env = {"PACKSOLVE_DATABASE_URL": f"sqlite:///{tmp_path / 'r.db'}"}
    assert invoke("solve", str(pack), "-q", env=env, cwd=tmp_path).returncode == 0
    res = invoke("export", "1", "--format", "csv", env=env, cwd=tmp_path)
    import csv
    import io

    rows = list(csv.DictReader(io.StringIO(res.stdout)))
    assert len(rows) == 6
    solved = [r for r in rows if r["status"] == "solved"]
    assert all(json.loads(r["solution"])[0] for r in solved)


def test_solve_defaults_to_an_sqlite_file_in_the_current_directory(tmp_path):
    pack = make_pack(tmp_path)
    res = invoke(
        "solve", str(pack), "-q", "--format", "json", cwd=tmp_path, env={"PACKSOLVE_DATABASE_URL": ""}
    )
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "packsolve.db").exists()
    summary = json.loads(res.stdout)
    assert summary["solved"] == 4 and summary["total"] == 6 and summary["state"] == "finished"


def test_usage_errors_exit_2_with_a_message(tmp_path):
    env = {"PACKSOLVE_DATABASE_URL": f"sqlite:///{tmp_path / 'r.db'}"}
    res = invoke("solve", str(tmp_path / "empty-dir-that-does-not-exist"), env=env, cwd=tmp_path)
    # a missing path is a usage error naming it, and no run is made
    assert res.returncode == 2 and "empty-dir-that-does-not-exist does not exist" in res.stderr
    (tmp_path / "empty").mkdir()
    res = invoke("solve", str(tmp_path / "empty"), env=env, cwd=tmp_path)
    assert res.returncode == 2 and "no level files found" in res.stderr
    pack = make_pack(tmp_path)
    res = invoke("solve", str(pack), "--heuristic", "magic", env=env, cwd=tmp_path)
    assert res.returncode == 2 and "magic" in res.stderr and "warnsdorff" in res.stderr


def test_a_level_plain_cannot_finish_times_out_and_the_rest_still_runs(tmp_path):
    pack = tmp_path / "p"
    pack.mkdir()
    (pack / "a_hard.json").write_text(
        json.dumps({"kind": "onestroke", "grid": ["S.#" + "." * 11] + ["." * 14] * 13})
    )
    (pack / "b_easy.json").write_text(json.dumps({"kind": "onestroke", "grid": ["S...", "...."]}))
    env = {"PACKSOLVE_DATABASE_URL": f"sqlite:///{tmp_path / 'r.db'}"}
    res = invoke(
        "solve",
        str(pack),
        "--heuristic",
        "plain",
        "--time-limit",
        "1",
        "--jobs",
        "1",
        "-q",
        env=env,
        cwd=tmp_path,
    )
    assert res.returncode == 0, res.stderr
    recs = [json.loads(x) for x in invoke("export", env=env, cwd=tmp_path).stdout.splitlines()]
    assert [r["status"] for r in recs] == ["timeout", "solved"]
    assert 1.0 <= recs[0]["wall_s"] < 3.0
