"""External solver programs through `packsolve solve` on SQLite and PostgreSQL, with their provenance.

The runs record the command and SHA-256 of the binary each worker ran and the kinds used
with their versions; reruns keep the declaration; compare warns when versions differ.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket

import pytest
from sqlalchemy import inspect, text

from tests.support.inprocess import invoke
from tests.support.plugins import flip_distribution
from tests.support.programs import toml_for, write_programs
from tests.support.services import run_cli

LEVELS = [
    {"kind": "coins", "notes": [9, 1, 6, 3], "target": 10},
    {"kind": "coins", "notes": [4, 6, 10, 20], "target": 33},
    {"kind": "coins", "notes": [5, 5, 2], "target": 12},
]


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    directory = write_programs(tmp_path_factory.mktemp("programs"))
    return directory, toml_for(directory)


def write_pack(tmp_path, levels=LEVELS):
    pack = tmp_path / "pack.jsonl"
    pack.write_text("".join(json.dumps(lv) + "\n" for lv in levels))
    return pack


def solve(env, *args, cwd=None):
    res = invoke("solve", *args, "-q", "--format", "json", env=env, cwd=cwd)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def export(env, run):
    res = invoke("export", str(run), env=env)
    assert res.returncode == 0, res.stderr
    return [json.loads(line) for line in res.stdout.splitlines()]


def test_a_pack_solved_by_a_declared_program_is_verified_and_records_the_binary_it_ran(
    tmp_path, programs, db_url
):
    directory, toml = programs
    env = {"PACKSOLVE_DATABASE_URL": db_url}
    summary = solve(
        env, str(write_pack(tmp_path)), "--solvers", str(toml), "--heuristic", "correct", "--time-limit", "10"
    )
    assert summary["counts"] == {"solved": 2, "no_solution": 1} and summary["heuristics"] == ["correct"]
    records = export(env, summary["run"])
    assert {r["heuristic"] for r in records} == {"correct"} and records[0]["solution"] == {
        "count": 2,
        "notes": [1, 9],
    }
    assert all(
        r["nodes"] > 0 and r["wall_s"] > 0 and r["peak_rss_mb"] > 0
        for r in records
        if r["status"] == "solved"
    )
    provenance = summary["provenance"]
    assert provenance["kinds"] == {"coins": {"source": "packsolve", "version": "0.1.0", "origin": "built-in"}}
    [program] = provenance["programs"]
    sha = hashlib.sha256((directory / "correct.py").read_bytes()).hexdigest()
    assert program == {
        "solver": "correct",
        "kind": "coins",
        "sha256": sha,
        "command": f"{directory / 'correct.py'} {{level}}",
        "workers": [f"local@{socket.gethostname()}"],
    }
    assert provenance["warnings"] == []
    table = invoke("report", "summary", str(summary["run"]), env={**env, "COLUMNS": "200"})
    assert "program correct" in table.stdout and sha[:16] in table.stdout


def test_a_wrong_program_is_wrong_and_a_crashing_one_an_error_the_run_goes_on(tmp_path, programs, sqlite_url):
    _, toml = programs
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url}
    wrong = solve(
        env, str(write_pack(tmp_path, LEVELS[:1])), "--solvers", str(toml), "--heuristic", "coins=wrong"
    )
    assert wrong["counts"] == {"wrong": 1}
    crash = solve(env, str(write_pack(tmp_path)), "--solvers", str(toml), "--heuristic", "segfault")
    assert crash["counts"] == {"error": 3}
    assert all("SIGSEGV" in r["message"] for r in export(env, crash["run"]))


def test_a_program_applies_to_its_kind_and_the_others_keep_their_default_with_a_note(
    tmp_path, programs, sqlite_url
):
    _, toml = programs
    levels = [*LEVELS[:1], {"kind": "euler", "edges": [[1, 2], [2, 3]]}]
    res = invoke(
        "solve",
        str(write_pack(tmp_path, levels)),
        "--solvers",
        str(toml),
        "--heuristic",
        "correct",
        "-q",
        "--format",
        "json",
        env={"PACKSOLVE_DATABASE_URL": sqlite_url},
    )
    assert res.returncode == 0, res.stderr
    assert "euler has no heuristic 'correct': its default 'hierholzer' runs" in res.stderr
    assert json.loads(res.stdout)["heuristics"] == ["correct", "hierholzer"]


def test_packsolve_toml_in_the_current_directory_declares_programs_without_an_option(
    tmp_path, programs, sqlite_url
):
    directory, _ = programs
    pack = write_pack(tmp_path, LEVELS[:1])
    summary = solve(
        {"PACKSOLVE_DATABASE_URL": sqlite_url}, str(pack), "--heuristic", "stdin-only", cwd=directory
    )
    assert summary["counts"] == {"solved": 1}


@pytest.mark.slow
def test_a_rerun_keeps_the_programs_declaration_from_its_parent(tmp_path, programs, sqlite_url):
    _, toml = programs
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url}
    parent = solve(
        env,
        str(write_pack(tmp_path)),
        "--solvers",
        str(toml),
        "--heuristic",
        "sleeper",
        "--time-limit",
        "0.5",
    )
    assert parent["counts"] == {"timeout": 3}
    res = invoke(
        "rerun", str(parent["run"]), "--status", "timeout", "--time-limit", "1", env=env, cwd=tmp_path
    )
    assert res.returncode == 0, res.stderr
    child = int(res.stdout.strip().splitlines()[-1])
    assert {r["status"] for r in export(env, child)} == {"timeout"}  # sleeper again, found without --solvers
    res = invoke(
        "rerun",
        str(parent["run"]),
        "--heuristic",
        "correct",
        "--solvers",
        str(toml),
        # The parent's 0.5 s would otherwise carry over: a Python program's start alone can take that
        # on a loaded machine, and this test is about the declaration, not the limit.
        "--time-limit",
        "30",
        env=env,
        cwd=tmp_path,
    )
    assert res.returncode == 0, res.stderr
    records = export(env, int(res.stdout.strip().splitlines()[-1]))
    assert sorted(r["status"] for r in records) == ["no_solution", "solved", "solved"]


def test_compare_warns_when_two_runs_used_different_versions_of_a_plugin_kind(tmp_path, sqlite_url):
    pack = tmp_path / "flip.jsonl"
    pack.write_text('{"kind": "flip", "coins": "HTT"}\n')
    runs = []
    for version in ("1.0", "2.0"):
        root = flip_distribution(tmp_path / f"site-{version}", version)
        # A fresh process: the plug-in is found on its PYTHONPATH, and this version only (before the
        # path the suite runs with: the packsolve under test is the one the process imports).
        path = os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH")) if p)
        env = {"PACKSOLVE_DATABASE_URL": sqlite_url, "PYTHONPATH": path}
        res = run_cli("solve", str(pack), "-q", "--format", "json", env=env)
        assert res.returncode == 0, res.stderr
        summary = json.loads(res.stdout)
        assert summary["provenance"]["kinds"]["flip"] == {
            "source": "packsolve-flip",
            "version": version,
            "origin": "plug-in",
        }
        runs.append(summary["run"])
    res = invoke(
        "report", "compare", *map(str, runs), "--format", "json", env={"PACKSOLVE_DATABASE_URL": sqlite_url}
    )
    assert res.returncode == 0, res.stderr
    assert (
        f"run {runs[1]} used kind flip from packsolve-flip 2.0, run {runs[0]} from packsolve-flip 1.0"
        in json.loads(res.stdout)["warnings"]
    )


def test_an_old_database_upgrades_to_the_program_provenance_table_and_keeps_its_runs(tmp_path, db_url):
    from alembic import command

    from packsolve.db.migrate import alembic_config, current_revision, head_revision, upgrade
    from packsolve.db.session import make_engine

    engine = make_engine(db_url)
    cfg = alembic_config(engine)
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0004")
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO runs (mode, state, heuristic, total, host, version, options, created_at) "
                "VALUES ('local', 'finished', 'default', 0, 'old', '0.0.9', '{}', CURRENT_TIMESTAMP)"
            )
        )
    assert "run_programs" not in inspect(engine).get_table_names()
    assert upgrade(engine) is True and current_revision(engine) == head_revision(engine)
    assert "run_programs" in inspect(engine).get_table_names()
    env = {"PACKSOLVE_DATABASE_URL": db_url}
    res = invoke("report", "summary", "1", "--format", "json", env=env)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["provenance"] == {
        "kinds": {},
        "programs": [],
        "measurement": [],
        "warnings": [],
    }
    engine.dispose()


def test_the_kinds_a_runs_pending_levels_need_that_no_worker_offers_are_named(tmp_path, sqlite_url):
    """The data side of `status`'s line about kinds no live worker offers (leases say what each offers)."""
    from packsolve.db.runs import RunOptions, create_run
    from packsolve.db.session import get_engine, session_scope
    from packsolve.levels import make_level
    from packsolve.planning import plan_levels
    from packsolve.puzzles import offered
    from packsolve.report.provenance import kinds_no_worker_offers

    levels = [make_level("a", LEVELS[0]), make_level("b", {"kind": "sudoku", "grid": "1" + "." * 80})]
    engine = get_engine(sqlite_url)
    with session_scope(engine) as session:
        run_id = create_run(session, plan_levels(levels, None).attempts, RunOptions(mode="distributed"))
    here = offered()
    assert here["coins"] == {"source": "packsolve", "version": "0.1.0", "origin": "built-in"}
    only_coins = {"coins": here["coins"]}
    with session_scope(engine) as session:
        assert kinds_no_worker_offers(session, run_id, [here]) == []
        assert kinds_no_worker_offers(session, run_id, [only_coins]) == ["sudoku"]
        assert kinds_no_worker_offers(session, run_id, []) == ["coins", "sudoku"]


def test_kinds_lists_the_declared_programs_under_their_kind(programs):
    directory, toml = programs
    res = invoke("kinds", "--solvers", str(toml), "--format", "json")
    assert res.returncode == 0, res.stderr
    rows = {r["kind"]: r for r in json.loads(res.stdout)}
    assert "correct" in rows["coins"]["programs"] and rows["sudoku"]["programs"] == []
    here = invoke("kinds", "--format", "json", cwd=directory)  # ./packsolve.toml by default
    assert "stdin-only" in {r["kind"]: r for r in json.loads(here.stdout)}["coins"]["programs"]


def interrupt(url: str, run: int, names: list[str]) -> None:
    """Leave run as a Ctrl-C leaves it: names cancelled before they ran, the run finished cancelled."""
    from packsolve.db.models import Attempt, Run
    from packsolve.db.session import get_engine, session_scope

    with session_scope(get_engine(url)) as session:
        for a in session.query(Attempt).filter(Attempt.run_id == run, Attempt.name.in_(names)):
            a.status, a.wall_s, a.solution = "cancelled", None, None
            a.message = "cancelled: the local run was interrupted before it ran"
        session.get(Run, run).state = "cancelled"


def test_resume_runs_a_declared_programs_levels_with_the_declaration_the_run_recorded(
    tmp_path, programs, sqlite_url
):
    """Found without --solvers (recorded), and with --solvers or ./packsolve.toml declaring it again."""
    directory, toml = programs
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url}
    first = solve(env, str(write_pack(tmp_path)), "--solvers", str(toml), "--heuristic", "correct")
    assert first["counts"] == {"no_solution": 1, "solved": 2}
    names = [r["level"] for r in export(env, first["run"])]
    for args, cwd in [((), tmp_path), (("--solvers", str(toml)), tmp_path), ((), directory)]:
        interrupt(sqlite_url, first["run"], names[1:])
        res = invoke("resume", str(first["run"]), "-q", "--format", "json", *args, env=env, cwd=cwd)
        assert res.returncode == 0, res.stderr
        assert json.loads(res.stdout)["counts"] == {"no_solution": 1, "solved": 2}, args
        assert {r["heuristic"] for r in export(env, first["run"])} == {"correct"}
