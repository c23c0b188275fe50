"""The database layer on SQLite and PostgreSQL: migrations, rows from submit on, idempotent results."""

from __future__ import annotations

import pytest
from sqlalchemy import inspect, select

from packsolve.attempt import ClaimVerdict, Result
from packsolve.db.attempts import ClaimBy, record
from packsolve.db.migrate import current_revision, head_revision, upgrade
from packsolve.db.models import Attempt, Run
from packsolve.db.runs import RunOptions, create_run, status_counts
from packsolve.db.session import get_engine, make_engine, session_scope
from packsolve.levels import make_level
from packsolve.outcome import Outcome, SearchStats, Status
from packsolve.planning import plan_levels
from packsolve.puzzles import get_kind
from tests.support.fencing import claim_levels

LEVELS = [
    make_level("a", {"kind": "onestroke", "grid": ["S.."]}),
    make_level("b", {"kind": "onestroke", "grid": ["S.", ".."]}),
    make_level("bad", {"kind": "onestroke", "grid": ["S?"]}),
]


def test_migrations_create_the_schema_once(db_url):
    engine = make_engine(db_url)
    assert upgrade(engine) is True
    assert upgrade(engine) is False
    assert current_revision(engine) == head_revision(engine)
    assert {"levels", "runs", "attempts"} <= set(inspect(engine).get_table_names())


def test_every_attempt_row_exists_from_submit_on(db_url):
    engine = get_engine(db_url)
    with session_scope(engine) as s:
        run_id = create_run(
            s, plan_levels(LEVELS, None).attempts, RunOptions(mode="distributed", time_limit=5)
        )
    with session_scope(engine) as s:
        assert status_counts(s, run_id) == {"queued": 2, "invalid": 1}
        run = s.get(Run, run_id)
        assert run.total == 3 and run.host and run.version and run.finished_at is None
        heuristics = {a.name: a.heuristic for a in s.scalars(select(Attempt).where(Attempt.run_id == run_id))}
        assert heuristics["a"] == get_kind("onestroke").default


def test_results_are_idempotent_and_a_late_duplicate_never_overwrites(db_url):
    engine = get_engine(db_url)
    with session_scope(engine) as s:
        run_id = create_run(s, plan_levels(LEVELS[:2], None).attempts, RunOptions(mode="distributed"))
    a, b = LEVELS[0].hash, LEVELS[1].hash
    with session_scope(engine) as s:
        assert claim_levels(s.connection(), run_id, [a], ClaimBy("w1", max_tries=3)).verdicts == {
            a: ClaimVerdict.RUN
        }
        first = Outcome(Status.SOLVED, [[0, 0], [0, 1], [0, 2]], SearchStats(3, 0.1, 0.1, 10))
        assert record(s, [Result(run_id, a, first, 3, "w1")]) == 1
    with session_scope(engine) as s:
        late = Outcome(Status.TIMEOUT, None, SearchStats(99, 9, 9, 9), "late duplicate")
        assert record(s, [Result(run_id, a, late, None, "w2")]) == 0
        assert claim_levels(s.connection(), run_id, [a], ClaimBy("w2", max_tries=3)).verdicts == {
            a: ClaimVerdict.SKIP
        }
        row = s.scalars(select(Attempt).where(Attempt.run_id == run_id, Attempt.level_hash == a)).one()
        assert (row.status, row.worker, row.nodes) == ("solved", "w1", 3)
        assert s.get(Run, run_id).finished_at is None  # b still queued
    with session_scope(engine) as s:
        record(s, [Result(run_id, b, Outcome(Status.NO_SOLUTION), None, "w1")])
    with session_scope(engine) as s:
        run = s.get(Run, run_id)
        assert run.finished_at is not None and run.state == "finished"


def test_a_task_delivered_too_often_becomes_lost(db_url):
    engine = get_engine(db_url)
    with session_scope(engine) as s:
        run_id = create_run(s, plan_levels(LEVELS[:1], None).attempts, RunOptions(mode="distributed"))
    h = LEVELS[0].hash
    with session_scope(engine) as s:
        verdicts = [
            claim_levels(s.connection(), run_id, [h], ClaimBy(f"w{i}", max_tries=2)).verdicts[h]
            for i in range(3)
        ]
        assert verdicts == [ClaimVerdict.RUN, ClaimVerdict.RUN, ClaimVerdict.LOST]
        row = s.scalars(select(Attempt).where(Attempt.run_id == run_id)).one()
        assert row.status == "lost" and row.tries == 2 and "started 2 times" in row.message
        assert s.get(Run, run_id).finished_at is not None


def test_same_level_in_two_runs_is_one_level_with_two_attempts(db_url):
    engine = get_engine(db_url)
    with session_scope(engine) as s:
        r1 = create_run(s, plan_levels(LEVELS, None).attempts, RunOptions(mode="local"))
        r2 = create_run(s, plan_levels(LEVELS, "plain").attempts, RunOptions(mode="local", heuristic="plain"))
    from packsolve.db.models import LevelRow

    with session_scope(engine) as s:
        assert len(s.scalars(select(LevelRow)).all()) == 3
        n = s.scalars(select(Attempt).where(Attempt.level_hash == LEVELS[0].hash)).all()
        assert {a.run_id for a in n} == {r1, r2}


def test_processes_creating_a_new_sqlite_schema_at_once_do_not_collide(tmp_path):
    """Several `solve` processes started together on a new file all find one schema."""
    import subprocess
    import sys

    url = f"sqlite:///{tmp_path / 'fresh.db'}"
    code = "import sys; from packsolve.db.session import get_engine; get_engine(sys.argv[1])"
    procs = [subprocess.Popen([sys.executable, "-c", code, url], stderr=subprocess.PIPE) for _ in range(6)]
    errors = [p.communicate(timeout=120)[1].decode() for p in procs]
    assert [p.returncode for p in procs] == [0] * 6, errors
    assert current_revision(make_engine(url)) == head_revision(make_engine(url))


def test_modes_states_and_statuses_are_stored_as_the_same_strings_and_read_back_as_enums(db_url):
    from sqlalchemy import text
    from sqlalchemy.exc import StatementError

    from packsolve.runstate import RunMode, RunState

    engine = get_engine(db_url)
    with session_scope(engine) as s:
        run_id = create_run(s, plan_levels(LEVELS, None).attempts, RunOptions(mode=RunMode.LOCAL))
    with engine.connect() as conn:
        stored = conn.execute(text("SELECT mode, state FROM runs WHERE id = :r"), {"r": run_id}).one()
        statuses = set(conn.scalars(text("SELECT status FROM attempts WHERE run_id = :r"), {"r": run_id}))
    assert tuple(stored) == ("local", "running") and statuses == {"queued", "invalid"}
    assert all(type(v) is str for v in [*stored, *statuses])
    with session_scope(engine) as s:
        run = s.get(Run, run_id)
        assert (run.mode, run.state) == (RunMode.LOCAL, RunState.RUNNING) and type(run.mode) is RunMode
        read = {a.status for a in s.scalars(select(Attempt).where(Attempt.run_id == run_id))}
        assert read == {Status.QUEUED, Status.INVALID} and all(type(v) is Status for v in read)
        run.state = "finished"  # a plain string that is a value is written as it is
    with (
        pytest.raises(StatementError, match="'sleeping' is not a valid RunState"),
        session_scope(engine) as s,
    ):
        s.get(Run, run_id).state = "sleeping"  # no state: refused when written, never stored
    with engine.connect() as conn:
        assert conn.scalar(text("SELECT state FROM runs WHERE id = :r"), {"r": run_id}) == "finished"
