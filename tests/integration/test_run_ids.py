"""Run ids are never reused (issue 23, item 8): migration 0009 and the ids of runs made after a delete."""

from __future__ import annotations

import pytest
from sqlalchemy import func, inspect, select

from packsolve.db.catalog import delete_run
from packsolve.db.migrate import alembic_config, current_revision, head_revision, upgrade
from packsolve.db.models import Attempt, Run
from packsolve.db.runs import RunOptions, create_run
from packsolve.db.session import make_engine, session_scope
from packsolve.levels import make_level
from packsolve.planning import plan_levels

LEVELS = [make_level(f"l{i}", {"kind": "coins", "notes": [1, 2, 5], "target": i}) for i in range(1, 5)]


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request):
    return request.getfixturevalue("sqlite_url" if request.param == "sqlite" else "pg_url")


def new_run(engine, parent: int | None = None, label: str | None = None) -> int:
    with session_scope(engine) as s:
        options = RunOptions(mode="distributed", time_limit=5, parent_id=parent, label=label)
        return create_run(s, plan_levels(LEVELS, None).attempts, options)


def test_a_0008_database_with_runs_upgrades_keeping_them_and_never_reuses_a_deleted_runs_id(db_url):
    from alembic import command

    engine = make_engine(db_url)
    cfg = alembic_config(engine)
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0008")  # the schema of the release before this one
    first = new_run(engine, label="night")
    second = new_run(engine, parent=first)
    third = new_run(engine)
    with session_scope(engine) as s:
        delete_run(s, third)
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
