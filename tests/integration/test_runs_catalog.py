"""`packsolve runs`: listing, unique labels (and the migration that makes old ones unique), deleting a run."""

from __future__ import annotations

import csv
import io
import json

import pytest
from alembic import command
from sqlalchemy import select, text

from packsolve.db.migrate import alembic_config, upgrade
from packsolve.db.models import Attempt, LevelRow, Run
from packsolve.db.session import get_engine, make_engine, session_scope
from tests.support.inprocess import invoke
from tests.support.report_runs import Planned, build_run, strip_level


def cli(url: str, *args: str, code: int = 0) -> str:
    """Run the CLI on url; assert its exit code; return what it printed (stdout, then stderr)."""
    res = invoke(*args, env={"PACKSOLVE_DATABASE_URL": url})
    assert res.returncode == code, (res.returncode, res.stdout, res.stderr)
    return res.stdout + res.stderr


def cli_json(url: str, *args: str) -> object:
    """Run the CLI on url with --format json; return the JSON it printed on stdout."""
    res = invoke(*args, "--format", "json", env={"PACKSOLVE_DATABASE_URL": url})
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def test_runs_lists_every_run_newest_first_with_what_it_ran_as_table_json_and_csv(db_url, tmp_path):
    levels = [strip_level(i) for i in range(4)]
    a = build_run(
        db_url,
        [Planned(lv, "solved", 0.1) for lv in levels[:3]] + [Planned(levels[3], "timeout", 1)],
        label="monday",
    )
    b = build_run(
        db_url, [Planned(levels[0], "solved", 0.1), Planned(levels[1], None)], heuristic="warnsdorff"
    )
    rows = cli_json(db_url, "runs")
    assert [r["run"] for r in rows] == [b, a]
    assert rows[1] | {"created_at": None, "finished_at": None, "duration_s": None} == {
        "run": a,
        "label": "monday",
        "state": "finished",
        "mode": "local",
        "parent": None,
        "packs": [],
        "heuristic": "plain",
        "heuristics": ["plain"],
        "solved": 3,
        "decided": 3,
        "done": 4,
        "total": 4,
        "created_at": None,
        "finished_at": None,
        "duration_s": None,
    }
    assert (rows[0]["state"], rows[0]["done"], rows[0]["finished_at"]) == ("running", 1, None)
    table = cli(db_url, "runs")
    assert "monday" in table and "warnsdorff" in table and "3/4" in table and "1/2" in table
    assert all(len(line) <= 80 for line in table.splitlines())  # rich's default width off a terminal
    listed = list(csv.DictReader(io.StringIO(cli(db_url, "runs", "--format", "csv", "--limit", "1"))))
    assert [r["run"] for r in listed] == [str(b)] and json.loads(listed[0]["heuristics"]) == ["warnsdorff"]


def test_a_label_names_one_run_reusing_it_is_an_error_unless_moved_and_digits_are_refused(db_url, tmp_path):
    pack = tmp_path / "p.jsonl"
    pack.write_text(json.dumps({"kind": "onestroke", "grid": ["S.."]}) + "\n")
    cli(db_url, "solve", str(pack), "-q", "--label", "monday")
    out = cli(db_url, "solve", str(pack), "-q", "--label", "monday", code=2)
    assert "'monday' already names run 1" in out and "--move-label" in out
    out = cli(db_url, "solve", str(pack), "-q", "--label", "42", code=2)
    assert "would read as a run id" in out
    out = cli(db_url, "solve", str(pack), "-q", "--label", "monday", "--move-label")
    assert "label moved from run 1 to run 2" in out
    assert cli_json(db_url, "report", "summary", "monday")["run"] == 2
    assert "run 1: label 'sunday'" in cli(db_url, "runs", "label", "1", "sunday")
    assert "already names run 2" in cli(db_url, "runs", "label", "1", "monday", code=2)
    assert "taken from run 2" in cli(db_url, "runs", "label", "1", "monday", "--move-label")
    assert "run 2: no label" in cli(db_url, "runs", "label", "2", "-")
    out = cli(db_url, "rerun", "monday", "--status", "solved", "--label", "monday", code=2)
    assert "already names run 1" in out
    with session_scope(get_engine(db_url)) as session:
        assert [(r.id, r.label) for r in session.scalars(select(Run).order_by(Run.id))] == [
            (1, "monday"),
            (2, None),
        ]


def test_runs_delete_asks_first_and_removes_a_run_but_no_level_history_of_other_runs(db_url):
    shared, own = strip_level(1), strip_level(2)
    a = build_run(db_url, [Planned(shared, "solved", 0.1), Planned(own, "timeout", 1.0)], label="old")
    b = build_run(db_url, [Planned(shared, "solved", 0.2)], heuristic="warnsdorff")
    with session_scope(get_engine(db_url)) as session:
        session.get(Run, b).parent_id = a  # b is a rerun of a
    cli(db_url, "report", "hardest", "--all")  # folds both runs into level_stats
    out = cli(db_url, "runs", "delete", "old", code=2)  # no terminal to ask on: refused without --yes
    assert "add --yes" in out
    assert "deleted run 1 (old) and its 2 attempt(s)" in cli(db_url, "runs", "delete", "old", "--yes")
    with session_scope(get_engine(db_url)) as session:
        assert [r.id for r in session.scalars(select(Run))] == [b]
        assert session.get(Run, b).parent_id is None
        assert {a.run_id for a in session.scalars(select(Attempt))} == {b}
        assert session.get(LevelRow, own.hash) is not None  # levels stay
    shown = cli_json(db_url, "show", shared.hash)
    assert [h["run"] for h in shown["history"]] == [b]
    overall = cli_json(db_url, "report", "hardest", "--all")
    assert {r["level_hash"]: r["attempts"] for r in overall} == {shared.hash: 1}  # rebuilt without run 1
    assert "no run with id 1" in cli(db_url, "runs", "delete", "1", "--yes", code=2)


def test_a_run_still_going_is_not_deleted(db_url):
    run_id = build_run(db_url, [Planned(strip_level(1), None)])
    out = cli(db_url, "runs", "delete", str(run_id), "--yes", code=2)
    assert "still going" in out and f"packsolve cancel {run_id}" in out


def test_the_migration_renames_duplicate_and_all_digit_labels_then_labels_are_unique(db_url):
    engine = make_engine(db_url)
    cfg = alembic_config(engine)
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0004")
    with engine.begin() as conn:
        for run_id, label in [
            (1, "monday"),
            (2, "monday"),
            (3, "7"),
            (4, "monday"),
            (5, None),
            (6, None),
            (7, "monday-2"),
        ]:
            conn.execute(
                text(
                    "INSERT INTO runs (id, label, mode, state, heuristic, total, host, version, options, "
                    "created_at) VALUES (:i, :l, 'local', 'finished', 'default', 0, 'h', 'v', '{}', "
                    "CURRENT_TIMESTAMP)"
                ),
                {"i": run_id, "l": label},
            )
    assert upgrade(engine) is True
    with engine.connect() as conn:
        labels = dict(conn.execute(text("SELECT id, label FROM runs ORDER BY id")).all())
    # The newest run keeps a label used twice (the one `monday` named before); the others get their id.
    assert labels == {
        1: "monday-1",
        2: "monday-2-2",
        3: "run-7",
        4: "monday",
        5: None,
        6: None,
        7: "monday-2",
    }
    from sqlalchemy.exc import IntegrityError

    with pytest.raises(IntegrityError), engine.begin() as conn:
        conn.execute(text("UPDATE runs SET label = 'monday' WHERE id = 1"))
    engine.dispose()
