"""Level vectors (run snapshots, 0021): compare's figures from finished runs' level vectors equal SQL's.

Real SQLite and PostgreSQL databases; runs built through create_run + record (the workers' write),
stamped finished by finish_run_if_done, then packed by what the scheduler's pass makes (figures.finished).
"""

from __future__ import annotations

import random
from datetime import UTC, datetime
from typing import Any

import pytest
import sqlalchemy as sa

from packsolve.db.catalog import delete_run
from packsolve.db.migrate import current_revision, head_revision, upgrade
from packsolve.db.models import Attempt, Run, RunSnapshot
from packsolve.db.runs import finish_run_if_done
from packsolve.db.session import get_engine, make_engine, session_scope
from packsolve.figures import compare_pairs, run_vectors
from packsolve.figures.compare_pairs import Figures, read_figures
from packsolve.figures.finished import catch_up, make
from packsolve.figures.run_vectors import load_vectors, vector_cells
from packsolve.levels import make_level
from packsolve.report.compare import compare_runs
from tests.integration.test_run_options_migration import migrate_to
from tests.support.report_runs import Planned, build_run, strip_level

STATUSES = ["solved", "solved", "timeout", "no_solution", "error", "memout", "wrong"]
LEVELS = [strip_level(i) for i in range(40)] + [
    make_level(f"s{i}", {"kind": "sudoku", "grid": str(i % 9 + 1) + "." * 80}) for i in range(9)
]


def random_run(url: str, rng: random.Random, levels: list[Any], time_limit: float | None) -> int:
    """Build a finished run of the levels with random statuses and times, some wall and peak missing."""
    planned = [Planned(lv, rng.choice(STATUSES), rng.uniform(0.01, 12.0)) for lv in levels]
    run_id = build_run(url, planned, time_limit=time_limit)
    engine = get_engine(url)
    with session_scope(engine) as session:
        # Resumed, given other peaks (some never measured) and walls, and finished again: packed anew.
        session.execute(sa.update(Run).where(Run.id == run_id).values(finished_at=None))
        for lv in levels:
            peak = None if rng.random() < 0.2 else rng.uniform(1.0, 900.0)
            wall = None if rng.random() < 0.1 else rng.uniform(0.001, 30.0)
            session.execute(
                sa.update(Attempt)
                .where(Attempt.run_id == run_id, Attempt.level_hash == lv.hash)
                .values(peak_rss_mb=peak, wall_s=wall)
            )
    with session_scope(engine) as session:
        assert finish_run_if_done(session, run_id)
    with session_scope(engine) as session:
        make(session, run_id)  # as the scheduler's next pass does
    return run_id


def sql_figures(session: Any, runs: list[Run], monkeypatch: pytest.MonkeyPatch) -> dict[str, Figures]:
    """The figures of the SQL aggregate: read_figures with no vector found."""
    with monkeypatch.context() as m:
        m.setattr(compare_pairs, "vector_cells", lambda db, runs: None)
        return read_figures(session, runs)


def assert_close(got: dict[str, Figures], want: dict[str, Figures]) -> None:
    assert got.keys() == want.keys()
    for kind, figures in want.items():
        assert got[kind].keys() == figures.keys(), kind
        for name, value in figures.items():
            assert got[kind][name] == pytest.approx(value, rel=1e-9, abs=1e-12), (kind, name)


def test_the_vectors_give_the_sql_aggregates_figures_for_overlapping_disjoint_and_partial_runs(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(26)
    shuffled = rng.sample(LEVELS, len(LEVELS))
    sets = {
        "all": shuffled,
        "half": shuffled[: len(shuffled) // 2],  # a part of "all"
        "other half": shuffled[len(shuffled) // 2 :],  # none of "half"
        "some": rng.sample(LEVELS, 17),  # a random overlap
        "empty": [],
    }
    limits = {"all": 10.0, "half": 10.0, "other half": 5.0, "some": None, "empty": 10.0}
    ids = {name: random_run(db_url, rng, levels, limits[name]) for name, levels in sets.items()}
    combos = [
        ("all", "half"),
        ("half", "all"),
        ("half", "other half"),
        ("some", "all"),
        ("all", "empty"),
        ("half", "some", "other half"),
        ("some", "all", "half"),
        ("empty", "some", "half"),
    ]
    with session_scope(get_engine(db_url)) as session:
        for combo in combos:
            runs = [session.get(Run, ids[name]) for name in combo]
            assert vector_cells(session, runs) is not None, combo  # the vectors' path is the one taken
            want = sql_figures(session, runs, monkeypatch)
            assert want, combo
            assert_close(read_figures(session, runs), want)


def _vectors(url: str) -> list[int]:
    with session_scope(get_engine(url)) as session:
        vectors = sa.select(RunSnapshot.run_id).where(
            RunSnapshot.name == "vector", RunSnapshot.data.is_not(None)
        )
        return list(session.scalars(vectors.order_by(RunSnapshot.run_id)))


def test_a_resumed_runs_vector_is_not_used_and_a_deleted_runs_goes(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(1)
    a = random_run(db_url, rng, LEVELS[:20], 10.0)
    b = random_run(db_url, rng, LEVELS[10:30], 10.0)
    assert _vectors(db_url) == [a, b]
    engine = get_engine(db_url)
    with session_scope(engine) as session:
        # Finished again at another time without being packed again: its vector no longer holds.
        later = datetime(2030, 1, 1, tzinfo=UTC)
        session.execute(sa.update(Run).where(Run.id == b).values(finished_at=later))
    with session_scope(engine) as session:
        runs = [session.get(Run, a), session.get(Run, b)]
        assert load_vectors(session, runs) is None
        assert_close(read_figures(session, runs), sql_figures(session, runs, monkeypatch))
        session.execute(sa.update(Run).where(Run.id == b).values(finished_at=None))
    with session_scope(engine) as session:
        assert finish_run_if_done(session, b)
    with session_scope(engine) as session:
        runs = [session.get(Run, a), session.get(Run, b)]
        assert load_vectors(session, runs) is None  # the finish packs nothing
        assert catch_up(session) == [b]  # the scheduler's pass packs it again, at its new finished_at
    with session_scope(engine) as session:
        runs = [session.get(Run, a), session.get(Run, b)]
        assert load_vectors(session, runs) is not None
        # More attempts than a compare may hold in memory: compared in SQL.
        monkeypatch.setattr(run_vectors, "MAX_ATTEMPTS", 39)
        assert load_vectors(session, runs) is None
        monkeypatch.setattr(run_vectors, "MAX_ATTEMPTS", 40)
        assert load_vectors(session, runs) is not None
        delete_run(session, b)
    assert _vectors(db_url) == [a]


def test_a_vector_that_cannot_be_made_leaves_the_finish_and_the_figures_as_they_were(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(rows: Any) -> None:
        raise MemoryError("no room for the arrays")

    monkeypatch.setattr(run_vectors, "pack", broken)
    a = build_run(db_url, [Planned(lv, "solved", 1.0) for lv in LEVELS[:10]])
    b = build_run(db_url, [Planned(lv, "timeout", 10.5) for lv in LEVELS[5:15]], parent=a)
    assert _vectors(db_url) == []
    with session_scope(get_engine(db_url)) as session:
        runs = [session.get(Run, a), session.get(Run, b)]
        assert all(r.finished_at is not None for r in runs)  # both stamped finished all the same
        footer = compare_runs(session, runs)["footer"]
        assert [f["levels"] for f in footer] == [10, 10] and footer[1]["common_levels"] == 5


def test_the_runs_finished_at_0017_are_packed_after_the_migration(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(7)
    a = random_run(db_url, rng, LEVELS[:30], 10.0)
    b = random_run(db_url, rng, LEVELS[20:], 10.0)
    going = build_run(db_url, [Planned(LEVELS[0], "solved", 1.0), Planned(LEVELS[1], None)])
    engine = make_engine(db_url)
    migrate_to(engine, "0017", down=True)
    with engine.begin() as conn:
        assert not sa.inspect(conn).has_table("run_vectors")
    assert upgrade(engine) is True and current_revision(engine) == head_revision(engine)
    assert _vectors(db_url) == []  # no backfill: the runs are packed lazily
    with session_scope(engine) as session:
        assert sorted(catch_up(session) + catch_up(session)) == [a, b]  # the next two passes, a run each
    assert _vectors(db_url) == [a, b]
    with session_scope(engine) as session:
        runs = [session.get(Run, a), session.get(Run, b)]
        assert vector_cells(session, runs) is not None
        assert_close(read_figures(session, runs), sql_figures(session, runs, monkeypatch))
        assert load_vectors(session, [session.get(Run, going), runs[0]]) is None
