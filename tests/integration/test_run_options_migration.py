"""Migration 0012 on a database the release before it made: runs keep their options, pid and provenance.

tests/data/release_0011_rows.json holds the rows of a SQLite database made by the release
with schema 0011 (`solve` of a pack with an invalid file, `solve` with a declared program,
a `rerun`, an interrupted and resumed run, a `submit`). They are written into a 0011
database of each engine, which is then upgraded; resume and rerun of its runs still work.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import sqlalchemy as sa

from packsolve.db.migrate import (
    _sqlite_foreign_keys_off,
    alembic_config,
    current_revision,
    head_revision,
    upgrade,
)
from packsolve.db.models import Run
from packsolve.db.runs import Provenance
from packsolve.db.session import make_engine, session_scope
from tests.support.inprocess import invoke

ROWS = Path(__file__).parent.parent / "data" / "release_0011_rows.json"
# The program the release's run 2 declared (subset-py): it reads the level from the file named.
PROGRAM = """#!/usr/bin/env python3
import itertools, json, sys
level = json.load(open(sys.argv[1]))
for k in range(len(level["notes"]) + 1):
    for combo in itertools.combinations(level["notes"], k):
        if sum(combo) == level["target"]:
            print(json.dumps({"status": "solved", "solution": {"count": k, "notes": sorted(combo)}}))
            sys.exit(0)
print(json.dumps({"status": "no_solution"}))
"""


def release_rows(programs: Path) -> dict[str, list[dict]]:
    """Return the release's rows, the declared program's directory moved to programs."""
    return json.loads(ROWS.read_text().replace("{programs}", str(programs)))


def write_release_database(engine: sa.Engine, rows: dict[str, list[dict]]) -> None:
    """Build schema 0011 and write the release's rows into it as they were (timestamps in UTC)."""
    migrate_to(engine, "0011")
    with engine.begin() as conn:
        meta = sa.MetaData()
        for name in ("levels", "runs", "attempts", "run_programs"):
            table = sa.Table(name, meta, autoload_with=conn)
            stamps = {c.name for c in table.columns if isinstance(c.type, sa.DateTime)}
            conn.execute(
                table.insert(),
                [
                    {k: _stamp(v) if k in stamps and v is not None else v for k, v in row.items()}
                    for row in rows[name]
                ],
            )
        for name in ("runs", "attempts", "run_programs"):
            if engine.dialect.name == "postgresql":  # the ids were given: the sequences must move past them
                conn.execute(
                    sa.text(f"SELECT setval(pg_get_serial_sequence('{name}', 'id'), max(id)) FROM {name}")
                )


def migrate_to(engine: sa.Engine, revision: str, down: bool = False) -> None:
    """Bring the schema up (or down) to revision, SQLite's foreign keys off as `db upgrade` has them."""
    from alembic import command

    with engine.connect() as conn, _sqlite_foreign_keys_off(conn), conn.begin():
        cfg = alembic_config(engine)
        cfg.attributes["connection"] = conn
        (command.downgrade if down else command.upgrade)(cfg, revision)


def _stamp(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def test_a_release_database_upgrades_keeping_every_runs_options_pid_and_provenance(tmp_path, db_url):
    rows = release_rows(tmp_path)
    engine = make_engine(db_url)
    write_release_database(engine, rows)
    assert upgrade(engine) is True and current_revision(engine) == head_revision(engine)
    before = {r["id"]: json.loads(r["options"]) for r in rows["runs"]}
    with session_scope(engine) as s:
        runs = {r.id: r for r in s.scalars(sa.select(Run))}
        assert sorted(runs) == sorted(before)
        for run_id, old in before.items():
            run = runs[run_id]
            assert run.pid == old.get("pid")
            assert Provenance.of(run) == Provenance(old["kinds"], old["solvers"])
            assert run.options == {k: v for k, v in old.items() if k not in ("pid", "kinds", "solvers")}
    assert runs[2].options["resumed"] == [{"argv": ["resume", "2", "-q"], "levels": 2}]
    assert runs[4].options["broker"] == "redis://127.0.0.1:6379/15"
    assert set(Provenance.of(runs[2]).solvers) == {"subset-py"}
    engine.dispose()


def test_runs_of_an_upgraded_release_database_are_listed_resumed_and_rerun(tmp_path, db_url):
    (tmp_path / "correct.py").write_text(PROGRAM)
    (tmp_path / "correct.py").chmod(0o755)
    engine = make_engine(db_url)
    write_release_database(engine, release_rows(tmp_path))
    engine.dispose()
    env = {"PACKSOLVE_DATABASE_URL": db_url}

    listed = invoke("runs", "--format", "json", env=env, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    packs = {r["run"]: r["packs"] for r in json.loads(listed.stdout)}
    assert packs[1] == ["pack.jsonl", "broken.json"] and packs[3] == ["rerun of 1"]

    # Run 2 was interrupted with a level left: resumed, it runs that level with the program it declared.
    resumed = invoke("resume", "2", "-q", env=env, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    # Its levels the declared program decided are rerun with it: the declaration came through the upgrade.
    rerun = invoke("rerun", "2", "--status", "solved,no_solution", "-q", env=env, cwd=tmp_path)
    assert rerun.returncode == 0, rerun.stderr
    # A built-in heuristic's rerun of the first run.
    plain = invoke(
        "rerun", "1", "--status", "no_solution", "--heuristic", "plain", "-q", env=env, cwd=tmp_path
    )
    assert plain.returncode == 0, plain.stderr

    engine = make_engine(db_url)
    with session_scope(engine) as s:
        runs = {r.id: r for r in s.scalars(sa.select(Run))}
        assert len(runs) == 6
        two = runs[2]
        assert [r["argv"] for r in two.options["resumed"]] == [["resume", "2", "-q"], ["resume", "2", "-q"]]
        assert two.pid is not None and two.finished_at is not None
        child = max(runs.values(), key=lambda r: (r.parent_id == 2, r.id))
        assert child.parent_id == 2 and child.heuristic == "subset-py"
        assert set(Provenance.of(child).solvers) == {"subset-py"}
        assert child.options["rerun_of"] == 2 and child.options["statuses"] == ["solved", "no_solution"]
        statuses = s.scalars(sa.text("SELECT status FROM attempts WHERE run_id IN (2, :c)"), {"c": child.id})
        assert set(statuses) <= {"solved", "no_solution"}
    engine.dispose()


def test_migration_0012_goes_back_to_the_options_text_of_0011(tmp_path, db_url):
    rows = release_rows(tmp_path)
    engine = make_engine(db_url)
    write_release_database(engine, rows)
    assert upgrade(engine) is True
    migrate_to(engine, "0011", down=True)
    with engine.connect() as conn:
        back = dict(conn.execute(sa.text("SELECT id, options FROM runs")).all())
        assert "pid" not in {c["name"] for c in sa.inspect(conn).get_columns("runs")}
    assert {i: json.loads(t) for i, t in back.items()} == {
        r["id"]: json.loads(r["options"]) for r in rows["runs"]
    }
    engine.dispose()
