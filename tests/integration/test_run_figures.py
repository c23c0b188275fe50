"""run_figures (0014) and finished runs' snapshots (0021) stay equal to a recount of attempts, whoever writes.

Each test drives the real commands (local solve, a distributed run on a real worker, resume,
rerun, delete) over a real SQLite or PostgreSQL database, then recounts every run's attempts
with a GROUP BY and compares: counts and node sums exactly, time sums to rounding.
"""

from __future__ import annotations

import json
import math

import pytest
import sqlalchemy as sa

from packsolve.db.migrate import current_revision, head_revision, upgrade
from packsolve.db.models import Attempt, Run
from packsolve.db.session import get_engine, make_engine, session_scope
from packsolve.figures.failures import KEPT_EXAMPLES, failure_groups_of, kept_groups, read_groups
from packsolve.figures.run_figures import WHOLE, final_of, finished_final, groups, kept_final
from tests.integration.test_run_options_migration import migrate_to
from tests.support.chaos_pack import write_pack
from tests.support.inprocess import invoke
from tests.support.report_runs import Planned, build_run, strip_level
from tests.support.services import run_cli, wait_for_run

pytestmark = pytest.mark.usefixtures("chaos_env")


def recount(session, run_id: int) -> dict[tuple[str, str, str], tuple]:
    """Return {(kind, heuristic, status): (count, walls, wall sum, cpus, cpu sum, nodes sum)} recounted."""
    a = Attempt
    rows = session.execute(
        sa.select(
            a.kind,
            a.heuristic,
            a.status,
            sa.func.count(),
            sa.func.count(a.wall_s),
            sa.func.coalesce(sa.func.sum(a.wall_s), 0.0),
            sa.func.count(a.cpu_s),
            sa.func.coalesce(sa.func.sum(a.cpu_s), 0.0),
            sa.func.coalesce(sa.func.sum(a.nodes), 0),
        )
        .where(a.run_id == run_id)
        .group_by(a.kind, a.heuristic, a.status)
    )
    return {(k, h, str(s)): tuple(rest) for k, h, s, *rest in rows}


def assert_figures_match(url: str) -> int:
    """Assert every run's run_figures equal a recount, and a finished run's kept medians a fresh read.

    Return how many attempts were checked (so a test sees it checked something).
    """
    checked = 0
    with session_scope(get_engine(url)) as session:
        runs = list(session.scalars(sa.select(Run)))
        for run in runs:
            expected = recount(session, run.id)
            kept = {(g.kind, g.heuristic, g.status): g for g in groups(session, run.id)}
            assert sorted(kept) == sorted(expected), run.id
            for key, (n, wall_n, wall_sum, cpu_n, cpu_sum, nodes) in expected.items():
                g = kept[key]
                assert (g.attempts, g.wall_n, g.cpu_n, g.nodes_sum) == (n, wall_n, cpu_n, nodes), key
                assert math.isclose(g.wall_sum, wall_sum, rel_tol=1e-9, abs_tol=1e-9), key
                assert math.isclose(g.cpu_sum, cpu_sum, rel_tol=1e-9, abs_tol=1e-9), key
                checked += n
            if run.finished_at is not None:
                # Kept by the local solve or the scheduler, else by this first reader: equal to a fresh read.
                finished_final(session, run.id)
                assert kept_final(session, run.id) == final_of(session, run.id), run.id
                # Its failure groups too: kept, and equal to grouping its attempts now.
                failure_groups_of(session, run, KEPT_EXAMPLES)
                fresh = read_groups(session, run.id, KEPT_EXAMPLES)
                assert kept_groups(session, run.id, KEPT_EXAMPLES) == fresh, run.id
        # Nothing is kept for a run that is gone.
        ids = [r.id for r in runs]
        orphans = session.execute(
            sa.text("SELECT count(*) FROM run_figures WHERE run_id NOT IN (SELECT id FROM runs)")
        ).scalar()
        assert orphans == 0, ids
        gone = session.execute(
            sa.text("SELECT count(*) FROM run_snapshots WHERE run_id NOT IN (SELECT id FROM runs)")
        ).scalar()
        assert gone == 0, ids
    return checked


def cli(url: str, *args: str, env: dict[str, str] | None = None) -> str:
    res = invoke(*args, env={"PACKSOLVE_DATABASE_URL": url, **(env or {})})
    assert res.returncode == 0, (res.stdout, res.stderr)
    return res.stdout


def test_local_solve_resume_rerun_and_delete_keep_the_figures_equal_to_a_recount(db_url, tmp_path):
    # Quick levels and two slow ones: a 0.5 s limit times the slow ones out.
    pack = tmp_path / "pack.jsonl"
    ms = [10, 1500, 10, 30, 1500, 10, 20, 10]
    pack.write_text("".join(json.dumps({"kind": "chaos", "id": i, "ms": m}) + "\n" for i, m in enumerate(ms)))
    # A process of its own: resume refuses a run whose solving process is alive, as this one would be.
    res = run_cli(
        "solve", str(pack), "--time-limit", "0.5", "-j", "2", "-q", env={"PACKSOLVE_DATABASE_URL": db_url}
    )
    assert res.returncode == 0, (res.stdout, res.stderr)
    assert assert_figures_match(db_url) == 8
    # Two attempts left without a result, as a Ctrl-C leaves them (cancelled, no times): resumed.
    with session_scope(get_engine(db_url)) as session:
        for attempt in session.scalars(sa.select(Attempt).where(Attempt.run_id == 1).limit(2)):
            attempt.status, attempt.solution, attempt.wall_s, attempt.cpu_s = "cancelled", None, None, None
        session.execute(sa.update(Run).where(Run.id == 1).values(finished_at=None, state="cancelled"))
    assert assert_figures_match(db_url) == 8
    cli(db_url, "resume", "1", "-q")
    with session_scope(get_engine(db_url)) as session:
        assert kept_final(session, 1) is not None  # the resumed run finished again: its medians kept again
    assert assert_figures_match(db_url) == 8
    with session_scope(get_engine(db_url)) as session:  # the slow two, or more on a loaded machine
        timeouts = session.scalar(
            sa.select(sa.func.count()).where(Attempt.run_id == 1, Attempt.status == "timeout")
        )
    assert timeouts >= 1
    cli(db_url, "rerun", "1", "--status", "timeout", "--time-limit", "5", "--local", "-q")
    assert assert_figures_match(db_url) == 8 + timeouts
    cli(db_url, "runs", "delete", "1", "--yes")
    assert assert_figures_match(db_url) == timeouts


def test_a_distributed_run_on_two_worker_processes_keeps_the_figures_equal_to_a_recount(
    db_url, tmp_path, broker, start_worker
):
    env = {"PACKSOLVE_BROKER_URL": broker}
    start_worker(broker, db_url, "w1@test", concurrency=2)
    pack = write_pack(tmp_path, 40, ms=(1, 30), seed=3)
    run_id = int(cli(db_url, "submit", str(pack), env=env).strip().splitlines()[-1])
    wait_for_run(db_url, run_id, timeout=120)
    assert assert_figures_match(db_url) == 40
    summary = json.loads(cli(db_url, "report", "summary", str(run_id), "--format", "json"))
    assert (summary["total"], summary["solved"]) == (40, 40)


def test_the_migration_fills_the_figures_of_a_database_made_at_0013(db_url):
    levels = [strip_level(i) for i in range(6)]
    done = [Planned(lv, "solved", 0.1 * (i + 1), 0.09 * (i + 1), 10 * i) for i, lv in enumerate(levels[:4])]
    first = build_run(db_url, [*done, Planned(levels[4], "timeout", 2.0, 1.9, 99), Planned(levels[5], None)])
    second = build_run(db_url, [Planned(lv, "solved", 0.5, 0.4, 7) for lv in levels], heuristic="warnsdorff")
    engine = make_engine(db_url)
    migrate_to(engine, "0013", down=True)
    # What happened at 0013, with no trigger to count it: a level of the second run now failed.
    with engine.begin() as conn:
        conn.execute(
            sa.update(Attempt)
            .where(Attempt.run_id == second, Attempt.seq == 0)
            .values(status="error", wall_s=3.25, cpu_s=None, nodes=None, message="boom")
        )
    assert upgrade(engine) is True and current_revision(engine) == head_revision(engine)
    with session_scope(engine) as session:
        assert kept_final(session, second) is None  # no backfill: made by the scheduler or the first reader
    assert assert_figures_match(db_url) == 12
    with session_scope(engine) as session:
        assert kept_final(session, first) is None  # still going: medians are read each time
        kept = kept_final(session, second)
        assert kept is not None
        assert kept.medians[WHOLE] == {"wall": 0.5, "cpu": 0.4}
    report = json.loads(cli(db_url, "report", "summary", str(second), "--format", "json"))
    assert (report["counts"], report["wall_s_total"], report["wall_s_median"]) == (
        {"solved": 5, "error": 1},
        5.75,
        0.5,
    )
