"""Before and during the night, on SQLite and PostgreSQL: `check` reads a pack and creates nothing; solve
and submit print what they skipped by name; `--skip-solved` carries over what was settled; status fits 80
columns."""

from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy import func, select

from packsolve.db.models import Run
from packsolve.db.session import get_engine, session_scope
from tests.support.inprocess import invoke
from tests.support.report_runs import Planned, build_run, strip_level

EASY_SUDOKU = "003020600900305001001806400008102900700000008006708200002609500800203009005010300"


def runs_in(url: str) -> int:
    with session_scope(get_engine(url)) as session:
        return session.scalar(select(func.count()).select_from(Run)) or 0


def messy_pack(root: Path) -> Path:
    """A pack with a README, an empty file, a duplicate, an unreadable level, an oversized file, two kinds."""
    pack = root / "messy"
    pack.mkdir()
    (pack / "README.md").write_text("# about this pack\n")
    (pack / "empty.json").write_text("")
    (pack / "a.jsonl").write_text(
        json.dumps({"kind": "sudoku", "grid": EASY_SUDOKU})
        + "\n"
        + json.dumps({"kind": "onestroke", "grid": ["S..", "..."]})
        + "\n"
        + json.dumps({"kind": "sudoku", "grid": "12"})
        + "\n"
    )
    (pack / "b.json").write_text(json.dumps({"kind": "onestroke", "grid": ["S..", "..."]}))
    (pack / "c.json").write_text(
        json.dumps({"kind": "coins", "notes": [1, 2], "target": 3, "pad": "x" * 3000})
    )
    return pack


def test_check_says_what_solve_would_do_and_creates_nothing(tmp_path, db_url):
    pack = messy_pack(tmp_path)
    env = {"PACKSOLVE_DATABASE_URL": db_url}
    res = invoke(
        "check", str(pack), "--heuristic", "dlx", "--max-file-mb", "0.002", "--format", "json", env=env
    )
    assert res.returncode == 0, res.stderr
    c = json.loads(res.stdout)
    assert c["levels"] == 2
    assert c["kinds"] == {
        "onestroke": {"levels": 1, "heuristics": {"portfolio": 1}},
        "sudoku": {"levels": 1, "heuristics": {"dlx": 1}},
    }
    assert [(Path(s["path"]).name, s["reason"]) for s in c["skipped_files"]] == [
        ("README.md", "not a level file (.md)"),
        ("empty.json", "empty"),
    ]
    assert [(Path(d["level"]).name, Path(d["same_as"]).name) for d in c["duplicates"]] == [
        ("b.json", "a.jsonl:2")
    ]
    invalid = {Path(i["level"]).name: i["message"] for i in c["invalid"]}
    assert "81 cells" in invalid["a.jsonl:3"] and "--max-file-mb raises it" in invalid["c.json"]
    assert c["notes"] == ["onestroke has no heuristic 'dlx': its default 'portfolio' runs"]
    assert c["distributed"]["tasks"] >= 1 and c["distributed"]["problem"] is None
    text = invoke("check", str(pack), env=env).stdout
    for words in (
        "README.md: not a level file",
        "empty.json: empty",
        "same level as",
        "cannot be read",
        "submit:",
        "solve:",
    ):
        assert words in text, words
    if db_url.startswith("sqlite"):
        assert not Path(db_url.removeprefix("sqlite:///")).exists()  # no database was created
    else:
        assert runs_in(db_url) == 0


def test_check_refuses_what_solve_would_refuse_and_names_what_submit_would(tmp_path, db_url):
    env = {"PACKSOLVE_DATABASE_URL": db_url}
    res = invoke("check", str(tmp_path / "nope"), env=env)
    assert res.returncode == 2 and "does not exist" in res.stderr
    res = invoke("check", str(messy_pack(tmp_path)), "--time-limit", "-5", env=env)
    assert res.returncode == 2 and "--time-limit" in res.stderr
    res = invoke("check", str(tmp_path / "messy"), "--time-limit", "100000", "--format", "json", env=env)
    assert res.returncode == 0 and "visibility timeout" in json.loads(res.stdout)["distributed"]["problem"]


def test_check_plans_with_the_declared_solvers_as_solve_would(tmp_path, sqlite_url):
    pack = tmp_path / "coins.json"
    pack.write_text(json.dumps({"kind": "coins", "notes": [1, 2], "target": 3}))
    toml = tmp_path / "mine.toml"
    toml.write_text('[solvers.mine]\nkind = "coins"\ncommand = ["./bin/solver", "{level}"]\n')
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url}
    declared = ("--solvers", str(toml), "--heuristic", "mine")
    res = invoke("check", str(pack), *declared, "--format", "json", env=env)
    assert res.returncode == 0, res.stderr
    c = json.loads(res.stdout)
    assert c["kinds"] == {"coins": {"levels": 1, "heuristics": {"mine": 1}}}
    assert c["solvers"]["mine"]["command"] == ["./bin/solver", "{level}"]
    text = invoke("check", str(pack), *declared, env=env).stdout
    assert "mine: declared program `./bin/solver {level}` (coins)" in text
    # Without the declaration, check refuses the heuristic as solve would.
    res = invoke("check", str(pack), "--heuristic", "mine", env=env)
    assert res.returncode == 2 and "mine" in res.stderr
    res = invoke("check", str(pack), "--solvers", str(tmp_path / "none.toml"), env=env)
    assert res.returncode == 2 and "no such file" in res.stderr


def test_skip_solved_carries_over_levels_settled_with_the_same_heuristic(tmp_path, db_url):
    env = {"PACKSOLVE_DATABASE_URL": db_url}
    pack = tmp_path / "p.jsonl"
    lines = [json.dumps({"kind": "onestroke", "grid": ["S" + "." * n]}) for n in range(1, 4)]
    pack.write_text("\n".join(lines) + "\n")
    assert invoke("solve", str(pack), "-q", "--heuristic", "plain", env=env).returncode == 0
    res = invoke("solve", str(pack), "-q", "--heuristic", "plain", "--skip-solved", env=env)
    assert res.returncode == 0 and "all 3 level(s) were decided before" in res.stderr
    assert runs_in(db_url) == 1  # nothing to run: no run
    pack.write_text("\n".join([*lines, json.dumps({"kind": "onestroke", "grid": ["S....."]})]) + "\n")
    res = invoke(
        "solve", str(pack), "-q", "--heuristic", "plain", "--skip-solved", "--format", "json", env=env
    )
    assert res.returncode == 0, res.stderr
    assert "3 level(s) carried over: decided with the same heuristic in run(s) 1" in res.stderr
    assert json.loads(res.stdout)["total"] == 1
    res = invoke(
        "solve", str(pack), "-q", "--heuristic", "warnsdorff", "--skip-solved", "--format", "json", env=env
    )
    assert json.loads(res.stdout)["total"] == 4 and "carried over" not in res.stderr  # another heuristic


def test_submit_prints_the_same_skipped_and_duplicate_lines_as_solve(tmp_path, pg_url, broker):
    pack = messy_pack(tmp_path)
    env = {"PACKSOLVE_DATABASE_URL": pg_url, "PACKSOLVE_BROKER_URL": broker}
    submitted = invoke("submit", str(pack), env=env)
    assert submitted.returncode == 0, submitted.stderr
    solved = invoke("solve", str(pack), "-q", env=env)
    for line in solved.stderr.splitlines():
        if "skipped" in line:
            assert line in submitted.stderr
    assert "README.md (not a level file (.md))" in submitted.stderr
    assert "duplicate level(s) skipped" in submitted.stderr and "b.json (same level as" in submitted.stderr


def test_status_shows_rate_and_eta_within_80_columns(db_url):
    levels = [strip_level(i, name=f"/a/very/long/path/to/a/pack/level-{i}.json") for i in range(10)]
    run_id = build_run(
        db_url, [Planned(lv, "solved", 1.0) for lv in levels[:4]] + [Planned(lv, None) for lv in levels[4:]]
    )
    res = invoke("status", str(run_id), env={"PACKSOLVE_DATABASE_URL": db_url, "COLUMNS": "80"})
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    # The database's path or URL is printed whole (it is copied from there), the rest fits 80 columns.
    assert all(len(line) <= 80 for line in lines if not line.startswith("database ")), lines
    [line] = [x for x in lines if "levels/" in x]
    assert line.startswith("4/10 final (40%)") and "eta" in line


def test_check_names_a_declared_program_missing_on_this_machine(tmp_path, sqlite_url):
    pack = tmp_path / "coins.json"
    pack.write_text(json.dumps({"kind": "coins", "notes": [1, 2], "target": 3}))
    toml = tmp_path / "mine.toml"
    toml.write_text('[solvers.mine]\nkind = "coins"\ncommand = ["./bin/not-built-yet", "{level}"]\n')
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url}
    declared = ("--solvers", str(toml), "--heuristic", "mine")
    res = invoke("check", str(pack), *declared, "--format", "json", env=env)
    assert res.returncode == 0, res.stderr
    problem = json.loads(res.stdout)["solvers"]["mine"]["problem"]
    assert "no program at" in problem and "not-built-yet" in problem
    table = " ".join(invoke("check", str(pack), *declared, env=env).stdout.split())  # lines wrap at 80
    assert "no program at" in table and "every level it solves would be an error" in table
