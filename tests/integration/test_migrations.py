"""The migrations build what the models declare, run no live packsolve code, and keep every row.

Real SQLite files and fresh PostgreSQL databases (one per test, dropped after). A run made at an old
revision and upgraded reports as the same run made at head: what a migration no longer computes
(a finished run's medians, failure groups, level vector) its first reader computes, and the first
that may write (the dashboard) keeps.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command

from packsolve.db.migrate import alembic_config, current_revision, drift, head_revision, upgrade
from packsolve.db.models import UNMODELLED, Base, Run
from packsolve.db.session import get_engine, make_engine, session_scope
from packsolve.figures import finished
from packsolve.report.compare import compare_runs
from packsolve.report.failures import failure_groups
from packsolve.report.summary import run_summary
from packsolve.settings import Settings
from packsolve.web import pages
from packsolve.web.app import create_app
from packsolve.web.security import Guard
from tests.integration.test_run_options_migration import migrate_to
from tests.support.dashboard import handled
from tests.support.inprocess import invoke
from tests.support.report_runs import strip_level
from tests.support.services import child_env, postgres_database

# What upgrading needs of packsolve: nothing else may be imported while the migrations run.
NEEDED = {
    "packsolve",
    "packsolve.db",
    "packsolve.db.migrate",
    "packsolve.db.models",
    "packsolve.outcome",
    "packsolve.runstate",
}
PACKAGE = Path(__file__).resolve().parents[2] / "src" / "packsolve"
T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def cli(url: str, *args: str) -> str:
    res = invoke(*args, env={"PACKSOLVE_DATABASE_URL": url})
    assert res.returncode == 0, (res.stdout, res.stderr)
    return res.stdout


def test_after_db_upgrade_the_models_are_the_schema(db_url: str) -> None:
    cli(db_url, "db", "upgrade")
    engine = make_engine(db_url)
    assert current_revision(engine) == head_revision(engine)
    assert drift(engine) == []
    # alembic check, through env.py, agrees.
    with engine.connect() as conn:
        cfg = alembic_config(engine)
        cfg.attributes["connection"] = conn
        command.check(cfg)


def _catalogue(conn: sa.Connection) -> set[tuple[str, str]]:
    """Return the (name, type) of every table, trigger, function and extension the database holds."""
    if conn.dialect.name == "sqlite":
        rows = conn.exec_driver_sql("SELECT name, type FROM sqlite_master WHERE type IN ('table', 'trigger')")
        return {(name, kind) for name, kind in rows if not name.startswith("sqlite_")}
    found = {(t, "table") for t in sa.inspect(conn).get_table_names()}
    triggers = "SELECT tgname FROM pg_trigger WHERE NOT tgisinternal"
    functions = "SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
    functions += " WHERE n.nspname = 'public' AND NOT EXISTS (SELECT 1 FROM pg_depend d"
    functions += " WHERE d.objid = p.oid AND d.deptype = 'e')"  # an extension's functions are the extension's
    extensions = "SELECT extname FROM pg_extension WHERE extname <> 'plpgsql'"
    for sql, kind in ((triggers, "trigger"), (functions, "function"), (extensions, "extension")):
        found |= {(name, kind) for (name,) in conn.exec_driver_sql(sql)}
    return found


def test_the_database_holds_what_the_models_declare_and_what_they_list_as_unmodelled(db_url: str) -> None:
    engine = make_engine(db_url)
    upgrade(engine)
    with engine.connect() as conn:
        dialect = conn.dialect.name
        held = _catalogue(conn)
    declared = {(t, "table") for t in Base.metadata.tables} | {("alembic_version", "table")}
    unmodelled = {(u.name, u.type) for u in UNMODELLED if u.dialect == dialect}
    assert held == declared | unmodelled


def test_drift_names_what_differs(sqlite_url: str) -> None:
    engine = make_engine(sqlite_url)
    migrate_to(engine, "0019")
    changed = {(d[0][0], d[0][2], d[0][3]) for d in drift(engine) if isinstance(d, list)}
    assert changed == {("modify_type", "runs", "heuristic"), ("modify_type", "runs", "options")}
    with engine.begin() as conn:
        conn.exec_driver_sql("DROP INDEX ix_attempts_holder")
    # An add_column entry carries the schema (None) second: only index entries are named here.
    assert "ix_attempts_holder" in {
        d[1].name for d in drift(engine) if isinstance(d, tuple) and d[0] == "add_index"
    }


def _rows(conn: sa.Connection) -> dict[str, list[tuple[Any, ...]]]:
    meta = sa.MetaData()
    out = {}
    for name in ("levels", "runs", "attempts", "run_figures", "run_programs", "refusals"):
        table = sa.Table(name, meta, autoload_with=conn)
        rows = conn.execute(sa.select(*(sa.cast(c, sa.Text) for c in table.columns))).all()
        out[name] = sorted(tuple(r) for r in rows)
    return out


def test_rows_survive_0020_and_its_downgrade_and_run_ids_are_still_never_reused(db_url: str) -> None:
    engine = make_engine(db_url)
    migrate_to(engine, "0019")
    levels = [strip_level(i) for i in range(4)]
    long_heuristic = ",".join(f"kind{i}=heuristic-with-a-long-name-{i}" for i in range(6))  # > 64 characters
    with engine.begin() as conn:
        _insert(conn, "levels", [_level(lv) for lv in levels])
        runs = [
            _run(
                1,
                finished=True,
                heuristic=long_heuristic,
                options={"argv": ["solve", "p"], "x": [1, {"y": None}]},
            ),
            _run(2, finished=False, parent=1),
            _run(3, finished=True),
        ]
        _insert(conn, "runs", runs)
        _insert(
            conn,
            "attempts",
            [_attempt(r["id"], lv, i, "solved", 0.5) for r in runs for i, lv in enumerate(levels)],
        )
        _insert(
            conn,
            "refusals",
            [
                {
                    "run_id": 2,
                    "level_hash": levels[0].hash,
                    "host": "h",
                    "reason": "no kind",
                    "authentic": True,
                    "count": 2,
                    "first_at": T0,
                    "last_at": T0,
                }
            ],
        )
        _sequences(conn)
        before = _rows(conn)
    migrate_to(engine, "0020")
    with engine.connect() as conn:
        assert _rows(conn) == before
    with session_scope(engine) as session:
        # The columns 0020 has, read through the model (whose later columns this database lacks yet).
        options, heuristic = session.execute(sa.select(Run.options, Run.heuristic).where(Run.id == 1)).one()
        assert options == {"argv": ["solve", "p"], "x": [1, {"y": None}]}
        assert heuristic == long_heuristic
    migrate_to(engine, "0019", down=True)
    with engine.begin() as conn:
        assert _rows(conn) == before
        # Deleting the newest run and making another never gives the new one the deleted run's id.
        conn.execute(sa.text("DELETE FROM attempts WHERE run_id = 3"))
        conn.execute(sa.text("DELETE FROM runs WHERE id = 3"))
        _insert(conn, "runs", [{k: v for k, v in _run(0, finished=False).items() if k != "id"}])
        assert conn.execute(sa.text("SELECT max(id) FROM runs")).scalar() == 4
    upgrade(engine)
    with engine.begin() as conn:
        conn.execute(sa.text("DELETE FROM runs WHERE id = 4"))
        _insert(conn, "runs", [{k: v for k, v in _run(0, finished=False).items() if k != "id"}])
        assert conn.execute(sa.text("SELECT max(id) FROM runs")).scalar() == 5
        if conn.dialect.name == "sqlite":
            assert conn.exec_driver_sql("PRAGMA foreign_key_check").fetchall() == []
    assert drift(engine) == []


# --- a run made at 0013 reports as the same run made at head -------------------------------------

UPGRADE_FROZEN = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    package, needed, url = Path(sys.argv[1]), set(sys.argv[2].split(",")), sys.argv[3]
    # Every packsolve module but the few upgrading needs is made unimportable: a migration that
    # imported live code (db.figures, db.failures, db.run_vectors, report, ...) fails here.
    for path in package.rglob("*.py"):
        parts = ("packsolve", *path.relative_to(package).with_suffix("").parts)
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if name not in needed and "migrations" not in parts:
            sys.modules[name] = None
    from sqlalchemy import create_engine
    from packsolve.db.migrate import upgrade
    assert upgrade(create_engine(url))
    leaked = sorted(m for m in sys.modules if m.startswith("packsolve") and sys.modules[m] is not None)
    assert set(leaked) <= needed, leaked
    """
)


def upgrade_frozen(url: str) -> None:
    """Upgrade url's database to head in a process where no packsolve module beyond NEEDED imports."""
    res = subprocess.run(
        [sys.executable, "-c", UPGRADE_FROZEN, str(PACKAGE), ",".join(sorted(NEEDED)), url],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr


def _insert(conn: sa.Connection, name: str, rows: list[dict[str, Any]]) -> None:
    """Insert rows into the table as the database has it now (options as text where it is text)."""
    table = sa.Table(name, sa.MetaData(), autoload_with=conn)
    if "options" in table.c and not isinstance(table.c.options.type, sa.JSON):
        rows = [{**r, "options": json.dumps(r["options"], sort_keys=True)} for r in rows]
    conn.execute(table.insert(), rows)


def _sequences(conn: sa.Connection) -> None:
    if conn.dialect.name == "postgresql":  # the ids were given: the sequences must move past them
        for name in ("runs", "attempts"):
            conn.execute(
                sa.text(f"SELECT setval(pg_get_serial_sequence('{name}', 'id'), max(id)) FROM {name}")
            )


def _level(lv: Any) -> dict[str, Any]:
    return {
        "hash": lv.hash,
        "kind": lv.kind,
        "data": json.dumps(dict(lv.data)),
        "size": lv.size,
        "name": lv.name,
        "created_at": T0,
    }


def _run(
    run_id: int,
    finished: bool,
    heuristic: str = "plain",
    parent: int | None = None,
    options: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "id": run_id,
        "label": None,
        "parent_id": parent,
        "mode": "local",
        "state": "finished" if finished else "running",
        "heuristic": heuristic,
        "kind": None,
        "time_limit": 10.0,
        "node_limit": None,
        "memory_limit_mb": None,
        "concurrency": 2,
        "total": 0,
        "host": "hostA",
        "version": "0.1.0",
        "options": options or {"argv": ["solve", "pack"]},
        "created_at": T0,
        "finished_at": T0 + timedelta(minutes=10) if finished else None,
        "max_tries": 3,
        "sent_at": None,
        "send_error": None,
        "pid": None,
        "kinds": {},
        "solvers": {},
    }


def _attempt(
    run_id: int, lv: Any, seq: int, status: str, wall: float | None, message: str | None = None
) -> dict[str, Any]:
    # Times in eighths of a second: sums are exact whatever order a database adds them in.
    return {
        "run_id": run_id,
        "level_hash": lv.hash,
        "seq": seq,
        "name": lv.name,
        "kind": lv.kind,
        "heuristic": "plain",
        "status": status,
        "solution": None,
        "length": None,
        "nodes": 100 * seq + run_id,
        "wall_s": wall,
        "cpu_s": None if wall is None else wall / 2,
        "peak_rss_mb": None if seq % 5 == 0 else 8.0 + seq % 7 + run_id,
        "worker": "w1@hostA",
        "tries": 1,
        "queued_at": T0,
        "started_at": T0 + timedelta(seconds=seq),
        "finished_at": T0 + timedelta(seconds=seq + 1),
        "message": message,
        "deadline": None,
        "requeues": 0,
        "holder": None,
        "claims": 1,
    }


OUTCOMES = [
    ("solved", 0.125, None),
    ("solved", 0.5, None),
    ("timeout", 10.25, "time limit 10 s reached"),
    ("timeout", 10.125, "time limit 10 s reached after 1234 nodes"),
    ("error", 0.25, "solver crashed with code 3"),
    ("error", 0.375, "solver crashed with code 11"),
    ("no_solution", 1.5, None),
    ("memout", 2.75, "memory limit 64 MB reached"),
    ("wrong", 0.625, "strip-7: the path misses cell (0, 3)"),
    ("solved", None, None),
]


def _made_rows() -> dict[str, list[dict[str, Any]]]:
    """Two finished runs (the second a rerun of the first, on part of its levels) and their attempts."""
    levels = [strip_level(i) for i in range(30)]
    first = [_attempt(1, lv, i, *OUTCOMES[(i * 7) % len(OUTCOMES)]) for i, lv in enumerate(levels[:24])]
    second = [_attempt(2, lv, i, *OUTCOMES[(i * 3) % len(OUTCOMES)]) for i, lv in enumerate(levels[12:])]
    runs = [_run(1, finished=True), _run(2, finished=True, parent=1)]
    runs[0]["total"], runs[1]["total"] = len(first), len(second)
    runs[1]["finished_at"] += timedelta(minutes=5)
    return {"levels": [_level(lv) for lv in levels], "runs": runs, "attempts": first + second}


def _write(engine: sa.Engine, rows: dict[str, list[dict[str, Any]]]) -> None:
    with engine.begin() as conn:
        for name in ("levels", "runs", "attempts"):
            _insert(conn, name, rows[name])
        _sequences(conn)


def _kept(engine: sa.Engine) -> dict[str, list[int]]:
    """The runs with each of a run's own snapshots (run_snapshots), by name."""
    query = sa.text("SELECT DISTINCT run_id FROM run_snapshots WHERE name = :name ORDER BY run_id")
    with engine.connect() as conn:
        return {
            name: conn.execute(query, {"name": name}).scalars().all()
            for name in ("final", "failures", "vector")
        }


def _read(engine: sa.Engine) -> dict[str, Any]:
    """What the reports give of the two runs, through engine (read-only, as the CLI's, or not)."""
    with session_scope(engine) as session:
        runs = [session.get(Run, 1), session.get(Run, 2)]
        return {
            "summary": [run_summary(session, r) for r in runs],  # type: ignore[arg-type]
            "failures": [failure_groups(session, r) for r in runs],  # type: ignore[arg-type]
            "compare": compare_runs(session, runs),  # type: ignore[arg-type]
        }


@pytest.fixture
def head_url(db_url: str, tmp_path: Path) -> Iterator[str]:
    """Another database of url's dialect: an SQLite file, or a fresh PostgreSQL database dropped after."""
    if db_url.startswith("sqlite"):
        yield f"sqlite:///{tmp_path / 'head.db'}"
        return
    with postgres_database() as other:
        yield other


def test_runs_made_at_0013_report_as_the_same_runs_made_at_head(db_url: str, head_url: str) -> None:
    rows = _made_rows()
    old = make_engine(db_url)
    migrate_to(old, "0013")
    _write(old, rows)
    upgrade_frozen(db_url)
    assert current_revision(old) == head_revision(old)
    assert _kept(old) == {"final": [], "failures": [], "vector": []}  # computed by no migration

    # The same runs made at head, with the snapshots a scheduler pass or a local solve makes of them.
    made = head_url
    new = get_engine(made)
    _write(new, rows)
    with session_scope(new) as session:
        for run_id in (1, 2):
            finished.make(session, run_id)
    assert _kept(new) == {"final": [1, 2], "failures": [1, 2], "vector": [1, 2]}

    # A read-only reader of the upgraded database (the CLI's reports) gets the same reports, keeping nothing.
    expected = _read(get_engine(made, read_only=True))
    assert _read(get_engine(db_url, read_only=True)) == expected
    report = ("report", "summary", "2", "--format", "json")
    assert json.loads(cli(db_url, *report)) == json.loads(cli(made, *report))
    assert _kept(old) == {"final": [], "failures": [], "vector": []}
    # The dashboard, the first reader that may write, keeps what a scheduler pass would have kept.
    _dashboard(get_engine(db_url))
    assert _kept(old) == {"final": [1, 2], "failures": [1, 2], "vector": [1, 2]}
    # And the same reports after, from what it kept.
    assert _read(get_engine(db_url, read_only=True)) == expected
    assert _read(get_engine(db_url)) == _read(new) == expected


def _dashboard(engine: sa.Engine) -> None:
    """Show the two runs' pages, failures pages and compare page on the dashboard (its caches empty)."""
    url = engine.url.render_as_string(hide_password=False)
    app = create_app(Settings(database_url=url), Guard(), engine=engine)  # a new app: its caches empty

    for run in (1, 2):
        assert handled(app, pages.run_page, f"/runs/{run}", run=str(run)).status_code == 200
        assert handled(app, pages.failures_page, f"/runs/{run}/failures", run=str(run)).status_code == 200
    assert handled(app, pages.compare_page, "/compare", b"runs=1,2").status_code == 200


def test_0028_lets_a_run_try_a_level_once_per_heuristic_and_keeps_rows_indexes_and_triggers(
    db_url: str,
) -> None:
    engine = make_engine(db_url)
    migrate_to(engine, "0027")
    levels = [strip_level(i) for i in range(3)]
    with engine.begin() as conn:
        _insert(conn, "levels", [_level(lv) for lv in levels])
        _insert(conn, "runs", [_run(1, finished=False)])
        _insert(
            conn, "attempts", [_attempt(1, lv, i, "solved", 0.5, f"said {i}") for i, lv in enumerate(levels)]
        )
        _sequences(conn)
        before = _rows(conn)
        indexes = _indexes(conn)
    migrate_to(engine, "0028")
    second = {**_attempt(1, levels[0], 3, "solved", 0.25, "matrix cell"), "heuristic": "dlx"}
    with engine.begin() as conn:
        assert _rows(conn) == before
        assert _indexes(conn) == indexes
        _insert(conn, "attempts", [second])
        # The triggers were made again: run_figures counts the new row; on SQLite the FTS index finds it.
        solved = "SELECT sum(attempts) FROM run_figures WHERE run_id = 1 AND heuristic = 'dlx'"
        assert conn.exec_driver_sql(solved).scalar() == 1
        if conn.dialect.name == "sqlite":
            found = "SELECT rowid FROM attempts_text WHERE attempts_text MATCH '\"matrix cell\"'"
            assert len(conn.exec_driver_sql(found).all()) == 1
            assert conn.exec_driver_sql("PRAGMA foreign_key_check").fetchall() == []
    with pytest.raises(sa.exc.IntegrityError), engine.begin() as conn:
        _insert(conn, "attempts", [{**second, "seq": 4}])  # the same level with the same heuristic
    migrate_to(engine, "head")  # the models are the newest schema's
    assert drift(engine) == []
    migrate_to(engine, "0028", down=True)
    with engine.begin() as conn:
        conn.exec_driver_sql("DELETE FROM attempts WHERE heuristic = 'dlx'")
    migrate_to(engine, "0027", down=True)
    with engine.begin() as conn:
        after = _rows(conn)
        # On PostgreSQL run_figures holds signed rows until folded: the added and deleted row cancel out.
        assert _folded(after.pop("run_figures")) == _folded(before["run_figures"])
        assert after == {k: v for k, v in before.items() if k != "run_figures"}
    with pytest.raises(sa.exc.IntegrityError), engine.begin() as conn:
        _insert(conn, "attempts", [second])  # at 0027 a level is once per run


def test_0029_keeps_refusals_with_their_attempts_heuristic_and_lets_one_level_be_refused_per_heuristic(
    db_url: str,
) -> None:
    engine = make_engine(db_url)
    migrate_to(engine, "0028")
    levels = [strip_level(i) for i in range(2)]
    at = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)
    refusal = {"reason": "unknown kind", "authentic": True, "count": 2, "first_at": at, "last_at": at}
    with engine.begin() as conn:
        _insert(conn, "levels", [_level(lv) for lv in levels])
        _insert(conn, "runs", [_run(1, finished=False)])
        attempts = [_attempt(1, lv, i, "queued", None, None) for i, lv in enumerate(levels)]
        _insert(
            conn,
            "attempts",
            [{**a, "heuristic": h} for a, h in zip(attempts, ("prune", "plain"), strict=True)],
        )
        _insert(
            conn,
            "refusals",
            [{"run_id": 1, "level_hash": a["level_hash"], "host": "w@a", **refusal} for a in attempts],
        )
        _sequences(conn)
    migrate_to(engine, "0029")
    read = "SELECT level_hash, heuristic, host, count FROM refusals ORDER BY heuristic"
    with engine.begin() as conn:
        kept = [tuple(r) for r in conn.exec_driver_sql(read)]
        assert kept == [
            (attempts[1]["level_hash"], "plain", "w@a", 2),
            (attempts[0]["level_hash"], "prune", "w@a", 2),
        ]
        # The same level and host, another heuristic: a row of its own.
        _insert(
            conn,
            "refusals",
            [
                {
                    "run_id": 1,
                    "level_hash": attempts[0]["level_hash"],
                    "heuristic": "plain",
                    "host": "w@a",
                    **refusal,
                }
            ],
        )
    migrate_to(engine, "head")  # the models are the newest schema's
    assert drift(engine) == []
    migrate_to(engine, "0028", down=True)
    with engine.begin() as conn:
        # One row per (run, level, host) again: of a level refused twice, the latest (a tie here: one kept).
        assert sorted(r[0] for r in conn.exec_driver_sql("SELECT level_hash FROM refusals")) == sorted(
            a["level_hash"] for a in attempts
        )


def _folded(rows: list[tuple[Any, ...]]) -> dict[tuple[Any, ...], tuple[float, ...]]:
    """Return run_figures' rows (as _rows reads them) summed per group, leaving out groups summing to 0."""
    sums: dict[tuple[Any, ...], list[float]] = {}
    for row in rows:
        group = sums.setdefault(row[:4], [0.0] * (len(row) - 4))
        for i, value in enumerate(row[4:]):
            group[i] += float(value)
    return {k: tuple(v) for k, v in sums.items() if any(v)}


def _indexes(conn: sa.Connection) -> set[str]:
    """Return the names of the attempts table's indexes, not those PostgreSQL makes for constraints."""
    return {i["name"] for i in sa.inspect(conn).get_indexes("attempts") if not i["name"].startswith("uq_")}
