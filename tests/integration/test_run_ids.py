"""Run ids are never reused: migration 0009 and the ids of runs made after a delete."""

from __future__ import annotations

import pytest
from sqlalchemy import func, inspect, select, text

from packsolve.db.catalog import delete_run
from packsolve.db.migrate import alembic_config, current_revision, head_revision, upgrade
from packsolve.db.models import Attempt, Run
from packsolve.db.runs import RunOptions, create_run
from packsolve.db.session import make_engine, session_scope
from packsolve.levels import make_level
from packsolve.planning import plan_levels

LEVELS = [make_level(f"l{i}", {"kind": "coins", "notes": [1, 2, 5], "target": i}) for i in range(1, 5)]


def new_run(engine, parent: int | None = None, label: str | None = None) -> int:
    with session_scope(engine) as s:
        options = RunOptions(mode="distributed", time_limit=5, parent_id=parent, label=label)
        return create_run(s, plan_levels(LEVELS, None).attempts, options)


def old_run(conn, label: str | None = None, parent: int | None = None) -> int:
    """Insert a run and its attempts as schema 0008's release wrote them (plain SQL: the models are newer)."""
    row = {"label": label, "parent": parent}
    run_id = conn.execute(
        text(
            "INSERT INTO runs (label, parent_id, mode, state, heuristic, total, host, version, options,"
            " created_at) VALUES (:label, :parent, 'distributed', 'finished', 'auto', 4, 'h', '0.1.0', '{}',"
            " CURRENT_TIMESTAMP) RETURNING id"
        ),
        row,
    ).scalar_one()
    for seq, level in enumerate(LEVELS):
        conn.execute(
            text(
                "INSERT INTO levels (hash, kind, data, size, name, created_at)"
                " VALUES (:h, 'coins', :d, 1, :n, CURRENT_TIMESTAMP) ON CONFLICT (hash) DO NOTHING"
            ),
            {"h": level.hash, "d": "{}", "n": level.name},
        )
        conn.execute(
            text(
                "INSERT INTO attempts (run_id, level_hash, seq, name, kind, heuristic, status, tries)"
                " VALUES (:r, :h, :s, :n, 'coins', 'auto', 'solved', 1)"
            ),
            {"r": run_id, "h": level.hash, "s": seq, "n": level.name},
        )
    return run_id


def test_a_0008_database_with_runs_upgrades_keeping_them_and_never_reuses_a_deleted_runs_id(db_url):
    from alembic import command

    engine = make_engine(db_url)
    cfg = alembic_config(engine)
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0008")  # the schema of the release before this one
    with engine.begin() as conn:
        first = old_run(conn, label="night")
        second = old_run(conn, parent=first)
        third = old_run(conn)
        conn.execute(text("DELETE FROM attempts WHERE run_id = :r"), {"r": third})
        conn.execute(text("DELETE FROM runs WHERE id = :r"), {"r": third})
    assert upgrade(engine) is True and current_revision(engine) == head_revision(engine)
    with session_scope(engine) as s:
        runs = {r.id: r for r in s.scalars(select(Run))}
        assert sorted(runs) == [first, second]
        assert runs[first].label == "night" and runs[second].parent_id == first
        counts = dict(s.execute(select(Attempt.run_id, func.count()).group_by(Attempt.run_id)).all())
        assert counts == {first: len(LEVELS), second: len(LEVELS)}
    assert "uq_runs_label" in {ix["name"] for ix in inspect(engine).get_indexes("runs")}
    fourth = new_run(engine)
    with session_scope(engine) as s:
        delete_run(s, fourth)
    fifth = new_run(engine)
    assert fifth > fourth, "the id of the newest run, deleted, was given to the next one"
    with session_scope(engine) as s:
        delete_run(s, first)  # attempts still cascade with their run after the rebuild
        counts = dict(s.execute(select(Attempt.run_id, func.count()).group_by(Attempt.run_id)).all())
        assert counts == {second: len(LEVELS), fifth: len(LEVELS)}
    engine.dispose()


@pytest.mark.postgres
def test_a_run_id_past_32_bits_is_no_such_run_in_one_line_on_the_cli_and_a_404_on_the_dashboard(
    pg_url, tmp_path
):
    from tests.support.dashboard import serving
    from tests.support.inprocess import invoke

    engine = make_engine(pg_url)
    upgrade(engine)
    new_run(engine)
    big = str(2**32)
    env = {"PACKSOLVE_DATABASE_URL": pg_url}
    for args in (
        ["status", big],
        ["report", "summary", big],
        ["cancel", big],
        ["runs", "delete", big, "--yes"],
        ["resume", big],
        ["rerun", big, "--local"],
    ):
        res = invoke(*args, env=env)
        lines = [line for line in res.stderr.splitlines() if line.strip()]
        assert res.returncode == 2 and len(lines) == 1, (args, res.stderr)
        assert f"no run with id {big}" in lines[0], (args, res.stderr)
    with serving(pg_url, log_dir=tmp_path) as served:
        for path in (f"runs/{big}", f"runs/{big}/failures", f"runs/{big}/live", f"hardest?run={big}"):
            code, body = served.get(path)
            assert code == 404 and f"no run with id {big}" in body, (path, code, body[:300])
    assert "Traceback" not in served.log.read_text()
