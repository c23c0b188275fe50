"""`--time-limit Nx`: each attempt's limit is N times its level's expected time from earlier runs.

Real databases, the real local pool and a real Celery worker, with the chaos kind (a level sleeps its
`ms`): a first run gives the levels a history, the rerun's stored per-attempt limits are checked, and
what runs under them times out or solves as those limits say.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import func, select

from packsolve.db.models import Attempt, LevelRow, Run
from packsolve.db.session import get_engine, session_scope
from tests.support.inprocess import invoke
from tests.support.services import wait_for_run

pytestmark = pytest.mark.usefixtures("chaos_env")

# id 0 solves within the first run's 0.5 s; ids 1 and 2 time out there. Given 3x the 0.5 s they timed
# out at (1.5 s), id 1 (needs 0.8 s) solves and id 2 (needs 2.5 s) times out again.
MS = [100, 800, 2500]


def write_pack(directory: Path, ms: list[int] = MS, first_id: int = 0) -> Path:
    path = directory / f"pack{first_id}.jsonl"
    path.write_text(
        "".join(json.dumps({"kind": "chaos", "id": first_id + i, "ms": m}) + "\n" for i, m in enumerate(ms))
    )
    return path


def latest_run(url: str) -> int:
    with session_scope(get_engine(url)) as session:
        return int(session.scalar(select(func.max(Run.id))) or 0)


def attempts(url: str, run_id: int) -> dict[int, tuple[str, float | None, float | None, float | None]]:
    """Return {chaos id: (status, wall_s, own time limit, own CPU limit)} of the run's attempts."""
    with session_scope(get_engine(url)) as session:
        rows = session.execute(
            select(LevelRow.data, Attempt.status, Attempt.wall_s, Attempt.time_limit, Attempt.cpu_limit)
            .join(LevelRow, LevelRow.hash == Attempt.level_hash)
            .where(Attempt.run_id == run_id)
        ).all()
    return {
        json.loads(data)["id"]: (str(status), wall, time_limit, cpu)
        for data, status, wall, time_limit, cpu in rows
    }


def first_run(tmp_path: Path, env: dict[str, str], url: str) -> int:
    res = invoke("solve", str(write_pack(tmp_path)), "--time-limit", "0.5", "-j", "2", "-q", env=env)
    assert res.returncode == 0, res.stderr
    parent = latest_run(url)
    assert [a[0] for _, a in sorted(attempts(url, parent).items())] == ["solved", "timeout", "timeout"]
    return parent


def test_a_rerun_at_3x_gives_each_attempt_three_times_its_levels_history(tmp_path, db_url):
    env = {"PACKSOLVE_DATABASE_URL": db_url}
    parent = first_run(tmp_path, env, db_url)
    before = attempts(db_url, parent)
    res = invoke(
        "rerun", str(parent), "--status", "solved,timeout", "--time-limit", "3x,0.1s", "-j", "2", env=env
    )
    assert res.returncode == 0, res.stderr
    child = latest_run(db_url)
    after = attempts(db_url, child)
    # Decided before: 3x its time; timed out before: 3x the limit it timed out at (a lower bound).
    assert after[0][2] == pytest.approx(3 * before[0][1])
    assert after[1][2] == pytest.approx(1.5) and after[2][2] == pytest.approx(1.5)
    assert [after[i][0] for i in range(3)] == ["solved", "solved", "timeout"]
    with session_scope(get_engine(db_url)) as session:
        run = session.get(Run, child)
        assert run is not None
        assert run.time_limit == pytest.approx(1.5)  # the largest attempt's: no attempt may take longer
        assert run.options["relative"] == {"time_limit": "3x,0.1s"}
    shown = invoke("report", "summary", str(child), env=env)
    assert shown.returncode == 0, shown.stderr
    assert "3x expected" in shown.stdout, shown.stdout
    # PAR-2 at each attempt's own limit: the child's timeout scores 2 x 1.5 s, its solved levels their time.
    summary = json.loads(invoke("report", "summary", str(child), "--format", "json", env=env).stdout)
    solved_wall = sum(a[1] for a in after.values() if a[0] == "solved")
    assert summary["par2_s"] == pytest.approx(solved_wall + 2 * 1.5, abs=0.01)
    assert summary["relative"]["time_limit"]["spec"] == "3x,0.1s"
    assert summary["relative"]["time_limit"]["high"] == pytest.approx(1.5)
    compared = json.loads(
        invoke("report", "compare", str(parent), str(child), "--format", "json", env=env).stdout
    )
    foot = compared["footer"][1]
    assert foot["par2_s"] == pytest.approx(summary["par2_s"], abs=0.01)
    assert foot["speedup"] is None and "relative" in foot["speedup_why_not"]
    failures = invoke("report", "failures", str(child), env=env)
    assert failures.returncode == 0 and "--time-limit 2x" in failures.stdout, failures.stdout
    # The dashboard's run page and failure form say the same.
    from packsolve.settings import Settings
    from packsolve.web import pages
    from packsolve.web.app import create_app
    from packsolve.web.security import Guard
    from tests.support.dashboard import handled

    app = create_app(Settings(database_url=db_url), Guard(), engine=get_engine(db_url))
    page = handled(app, pages.run_page, f"/runs/{child}", b"", run=str(child)).body.decode()
    assert (
        "3x,0.1s of each level&#39;s expected time" in page or "3x,0.1s of each level's expected time" in page
    )
    form = handled(app, pages.failures_page, f"/runs/{child}/failures", b"", run=str(child)).body.decode()
    assert 'value="2x"' in form
    # resume keeps each attempt's own limit: the scheduler's and resume's pending come from them.
    from packsolve.planning import stored_pending

    with session_scope(get_engine(db_url)) as session:
        run = session.get(Run, child)
        hashes = list(session.scalars(select(Attempt.level_hash).where(Attempt.run_id == child)))
        limits = sorted(p.spec.limits.time_limit for p in stored_pending(session, run, hashes))
    assert limits == pytest.approx(sorted(a[2] for a in after.values()))


def test_the_floor_holds_and_cpu_limits_come_from_cpu_time(tmp_path, sqlite_url):
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url}
    parent = first_run(tmp_path, env, sqlite_url)
    res = invoke("rerun", str(parent), "--status", "solved", "--time-limit", "3x,5s", "-j", "1", env=env)
    assert res.returncode == 0, res.stderr
    floored = latest_run(sqlite_url)
    assert attempts(sqlite_url, floored)[0][2] == 5.0
    # A rerun of a relative run given no limit keeps its Nx (from the history as it is now).
    res = invoke("rerun", str(floored), "--status", "solved", "-j", "1", env=env)
    assert res.returncode == 0, res.stderr
    assert attempts(sqlite_url, latest_run(sqlite_url))[0][2] == 5.0
    with session_scope(get_engine(sqlite_url)) as session:
        kept = session.get(Run, latest_run(sqlite_url))
        assert kept is not None and kept.options["relative"] == {"time_limit": "3x,5s"}
    res = invoke("rerun", str(parent), "--status", "solved", "--time-limit", "3x", "-j", "1", env=env)
    assert res.returncode == 0, res.stderr
    took = attempts(sqlite_url, parent)[0][1]  # about 0.1 s: 3x of it is under the default floor of 1 s
    assert attempts(sqlite_url, latest_run(sqlite_url))[0][2] == pytest.approx(max(1.0, 3 * took))
    res = invoke("rerun", str(parent), "--status", "solved", "--cpu-limit", "2x,0.5s", "-j", "1", env=env)
    assert res.returncode == 0, res.stderr
    status, _, time_limit, cpu_limit = attempts(sqlite_url, latest_run(sqlite_url))[0]
    assert status == "solved" and cpu_limit == 0.5  # a sleeping level uses little CPU: the floor
    assert time_limit is None  # the parent's 0.5 s wall limit is the run's, not the attempt's own


def test_levels_without_history_are_refused_in_one_line_before_anything_is_created(tmp_path, sqlite_url):
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url}
    first_run(tmp_path, env, sqlite_url)
    runs = latest_run(sqlite_url)
    fresh = write_pack(tmp_path, [10, 20], first_id=100)
    for command in (("solve", str(fresh), "-q"), ("solve", str(write_pack(tmp_path)), str(fresh), "-q")):
        res = invoke(*command, "--time-limit", "3x", env=env)
        assert res.returncode == 2, res.stderr
        lines = [line for line in res.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and "2 of" in lines[0] and "give a duration instead" in lines[0], res.stderr
        assert "Traceback" not in res.stderr
    # The other heuristic of the same levels has no history either.
    res = invoke(
        "rerun", str(runs), "--status", "solved", "--heuristic", "mark", "--time-limit", "3x", env=env
    )
    assert res.returncode == 2 and "1 of 1 level(s) have none" in res.stderr, res.stderr
    assert latest_run(sqlite_url) == runs


def by_heuristic(url: str, run_id: int) -> dict[tuple[int, str], tuple[str, float | None, float | None]]:
    """Return {(chaos id, heuristic): (status, CPU s, own CPU limit)} of the run's attempts."""
    with session_scope(get_engine(url)) as session:
        rows = session.execute(
            select(LevelRow.data, Attempt.heuristic, Attempt.status, Attempt.cpu_s, Attempt.cpu_limit)
            .join(LevelRow, LevelRow.hash == Attempt.level_hash)
            .where(Attempt.run_id == run_id)
        ).all()
    return {(json.loads(data)["id"], h): (str(status), cpu, limit) for data, h, status, cpu, limit in rows}


def test_a_matrix_gives_each_heuristic_its_own_relative_limit_from_its_own_history(tmp_path, sqlite_url):
    """`sleep` waits its level's ms using almost no CPU; `cpus` burns them: 2x of each one's own CPU."""
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url}
    pack = write_pack(tmp_path, [300, 600])
    res = invoke("solve", str(pack), "--heuristic", "sleep", "--time-limit", "5", "-j", "2", "-q", env=env)
    assert res.returncode == 0, res.stderr
    # Only `sleep` has a past: a matrix with `cpus` too cannot set the latter's limits.
    res = invoke("solve", str(pack), "--heuristic", "sleep,cpus", "--cpu-limit", "2x,0.05s", "-q", env=env)
    assert res.returncode == 2, res.stderr
    assert "2 of 4 attempt(s) (2 level(s)) have none" in res.stderr and len(res.stderr.splitlines()) == 1
    res = invoke("solve", str(pack), "--heuristic", "cpus", "--time-limit", "5", "-j", "2", "-q", env=env)
    assert res.returncode == 0, res.stderr
    past = {
        **by_heuristic(sqlite_url, latest_run(sqlite_url) - 1),
        **by_heuristic(sqlite_url, latest_run(sqlite_url)),
    }
    res = invoke(
        "solve", str(pack), "--heuristic", "sleep,cpus", "--cpu-limit", "2x,0.05s", "-j", "2", env=env
    )
    assert res.returncode == 0, res.stderr
    now = by_heuristic(sqlite_url, latest_run(sqlite_url))
    assert set(now) == {(i, h) for i in (0, 1) for h in ("sleep", "cpus")}
    for (i, heuristic), (status, _, limit) in now.items():
        spent = past[i, heuristic][1]
        assert spent is not None and status == "solved"
        assert limit == pytest.approx(max(0.05, 2 * spent)), (i, heuristic)
    # The burner's limits follow its own CPU (about 0.3 and 0.6 s), not the sleeper's few milliseconds.
    assert now[0, "cpus"][2] > 0.5 and now[1, "cpus"][2] > 1.0
    assert now[0, "sleep"][2] < 0.3 and now[1, "sleep"][2] < 0.3


def test_bad_relative_values_are_refused_as_usage_errors(tmp_path, sqlite_url):
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url}
    pack = write_pack(tmp_path)
    for value, said in (("0x", "factor must be a number > 0"), ("3x,abc", "floor"), ("3y", "not a duration")):
        res = invoke("solve", str(pack), "--time-limit", value, "-q", env=env)
        assert res.returncode == 2 and said in res.stderr and "Traceback" not in res.stderr, res.stderr


def test_a_distributed_run_sends_one_task_of_attempts_each_under_its_own_limit(
    tmp_path, broker, pg_url, start_worker
):
    """`submit --time-limit 3x --chunk-size 3`: one task, three limits, each run by a worker as its own."""
    env = {"PACKSOLVE_DATABASE_URL": pg_url, "PACKSOLVE_BROKER_URL": broker}
    worker = start_worker(broker, pg_url, "w1@test", concurrency=2)
    pack = write_pack(tmp_path)
    res = invoke("submit", str(pack), "--time-limit", "0.5", env=env)
    assert res.returncode == 0, res.stderr
    first = int(res.stdout.strip().splitlines()[-1])
    wait_for_run(pg_url, first, timeout=60)
    took = attempts(pg_url, first)[0][1]  # about 0.1 s: 3x of it is under the floor on a quiet machine
    res = invoke("submit", str(pack), "--time-limit", "3x", "--chunk-size", "3", env=env)
    assert res.returncode == 0, res.stderr
    assert "1 task(s)" in res.stdout + res.stderr
    child = int(res.stdout.strip().splitlines()[-1])
    wait_for_run(pg_url, child, timeout=60)
    after = attempts(pg_url, child)
    assert after[0][0] == "solved" and after[0][3] is None
    assert after[0][2] == pytest.approx(max(1.0, 3 * took))  # the floor over 3x its 0.1 s
    assert after[1][:1] + after[1][2:] == ("solved", 1.5, None)  # 3x the 0.5 s it timed out at
    assert after[2][:1] + after[2][2:] == ("timeout", 1.5, None)
    assert after[2][1] is not None and after[2][1] < 2.5  # stopped at its own limit, not the level's 2.5 s
    assert "refused" not in worker.log()


def test_a_task_whose_limit_was_forged_is_refused(db_url):
    """A relative run's attempt runs only under its own limit: the run's (largest) or another is refused."""
    from dataclasses import replace

    from packsolve.db.runs import RunOptions, create_run
    from packsolve.execution import AttemptSpec, Limits
    from packsolve.execution.spec import PendingAttempt
    from packsolve.levels import make_level
    from packsolve.planning import plan_levels
    from packsolve.queue.admission import Admission
    from packsolve.queue.protocol import Task, TaskKeys

    engine = get_engine(db_url)
    levels = [make_level(f"l{i}", {"kind": "chaos", "id": i, "ms": 10}) for i in range(3)]
    own = [1.0, 2.0, 4.0]
    planned = [
        replace(p, time_limit=t) for p, t in zip(plan_levels(levels, "sleep").attempts, own, strict=True)
    ]
    with session_scope(engine) as s:
        run_id = create_run(s, planned, RunOptions(mode="distributed", heuristic="sleep", time_limit=4.0))

    def item(i: int, seconds: float) -> PendingAttempt:
        return PendingAttempt(levels[i].hash, AttemptSpec("chaos", "sleep", levels[i].data, Limits(seconds)))

    def run(items) -> list:
        admission = Admission({}, TaskKeys(), engine)
        return [p.level_hash for p in admission.matching(engine, Task(run_id, 5, tuple(items), "d")).items]

    good = [item(i, t) for i, t in enumerate(own)]
    assert run(good) == [p.level_hash for p in good]  # one task, three limits: each its attempt's own
    assert run([item(0, 4.0), good[1]]) == [good[1].level_hash]  # the run's largest, forged onto level 0
    assert run([replace(good[2], spec=replace(good[2].spec, limits=Limits(4.0, cpu_limit=4.0)))]) == []
    engine.dispose()


def test_resume_runs_each_attempt_under_its_own_stored_limit(tmp_path, sqlite_url):
    """A relative rerun made and left for `packsolve resume` (as the dashboard does): each limit is kept."""
    from packsolve import runs
    from packsolve.execution.relative import Relative
    from packsolve.request import RerunRequest

    env = {"PACKSOLVE_DATABASE_URL": sqlite_url}
    parent = first_run(tmp_path, env, sqlite_url)
    request = RerunRequest(str(parent), ("timeout",), time_limit=Relative(3.0), local=True, jobs=1)
    made, _ = runs.start_rerun(get_engine(sqlite_url), request, ["rerun"], cluster=None, detached=True)  # type: ignore[arg-type]
    assert [a[0] for a in attempts(sqlite_url, made.id).values()] == ["queued", "queued"]
    res = invoke("resume", str(made.id), env=env)
    assert res.returncode == 0, res.stderr
    after = attempts(sqlite_url, made.id)
    assert after[1][0] == "solved" and after[2][0] == "timeout", after
    assert after[1][2] == after[2][2] == pytest.approx(1.5)
    assert after[2][1] < 2.5
