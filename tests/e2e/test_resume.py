"""After Ctrl-C or a crash: `packsolve resume RUN` runs exactly the levels left without a result, into RUN.

Real `packsolve solve` processes interrupted the way a user does it: SIGINT to the
whole process group (a terminal's Ctrl-C), or SIGKILL (a crash).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from packsolve.db.models import Attempt, Run
from packsolve.db.session import get_engine, session_scope
from packsolve.runstate import ShownState
from tests.support.chaos_pack import write_pack
from tests.support.inprocess import invoke
from tests.support.services import child_env, packsolve_cmd
from tests.support.waiting import wait_for, wait_until

pytestmark = [pytest.mark.usefixtures("chaos_env"), pytest.mark.slow]


def start_solve(url: str, pack: Path, *args: str) -> subprocess.Popen:
    """Start `packsolve solve` in a process group of its own, as a terminal runs a command."""
    return subprocess.Popen(
        packsolve_cmd("solve", str(pack), *args),
        env=child_env({"PACKSOLVE_DATABASE_URL": url}),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def attempts(url: str) -> dict[str, Attempt]:
    with session_scope(get_engine(url)) as session:
        return {a.name: a for a in session.query(Attempt).all()}


def wait_for_solved(url: str, proc: subprocess.Popen, n: int, timeout: float = 120) -> None:
    def solved() -> bool:
        if sum(a.status == "solved" for a in attempts(url).values()) >= n:
            return True
        assert proc.poll() is None, proc.communicate()
        return False

    wait_for(solved, timeout, every=0.1, what=f"{n} levels solved")


@pytest.mark.parametrize("how", ["ctrl-c", "kill"])
def test_ctrl_c_then_resume_runs_exactly_the_levels_without_a_result_into_the_same_run(tmp_path, db_url, how):
    """Ctrl-C (SIGINT to the process group) and `kill PID` (SIGTERM) both stop the run cleanly."""
    pack = write_pack(tmp_path, 40, ms=300)
    proc = start_solve(db_url, pack, "-j", "2", "--label", "night")
    try:
        wait_for_solved(db_url, proc, 4)
        if how == "ctrl-c":
            os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
        else:
            proc.send_signal(signal.SIGTERM)  # what `kill PID` or a service manager's stop does
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err
    assert "run 1 interrupted" in err and "`packsolve resume 1`" in err and "Traceback" not in err
    before = attempts(db_url)
    with session_scope(get_engine(db_url)) as session:
        run = session.get(Run, 1)
        assert run.finished_at is not None and run.state == "cancelled"  # never left unfinished
    done = {n for n, a in before.items() if a.status == "solved"}
    left = {n for n, a in before.items() if a.status == "cancelled"}
    assert done and left and done | left == set(before)  # nothing queued, nothing else
    for name in left:
        assert before[name].wall_s is None and "interrupted" in before[name].message
        assert before[name].message.endswith(("before it ran", "while it ran"))

    res = invoke("resume", "night", "-q", "--format", "json", env={"PACKSOLVE_DATABASE_URL": db_url})
    assert res.returncode == 0, res.stderr
    assert f"resuming {len(left)} of 40 level(s)" in res.stderr
    summary = json.loads(res.stdout)
    assert (summary["run"], summary["state"], summary["solved"], summary["total"]) == (1, "finished", 40, 40)
    after = attempts(db_url)
    assert set(after) == set(before)  # the same run, the same attempts
    for name in done:  # results kept, not run again
        assert (after[name].finished_at, after[name].wall_s) == (
            before[name].finished_at,
            before[name].wall_s,
        )
    assert all(after[name].status == "solved" and after[name].message is None for name in left)
    res = invoke("resume", "night", env={"PACKSOLVE_DATABASE_URL": db_url})
    assert res.returncode == 0 and "nothing to resume" in res.stderr


def test_resume_after_a_crash_runs_the_queued_levels_and_refuses_while_the_run_is_still_going(
    tmp_path, db_url
):
    env = {"PACKSOLVE_DATABASE_URL": db_url}
    # 12 s of solving on two processes: still going when the refused resume returns, on a loaded machine too.
    proc = start_solve(db_url, write_pack(tmp_path, 60, ms=400), "-j", "2")
    try:
        wait_for_solved(db_url, proc, 2)
        res = invoke("resume", "1", env=env)
        assert res.returncode == 2 and "still being solved by process" in res.stderr
        os.killpg(proc.pid, signal.SIGKILL)  # a crash: nothing is written on the way out
        proc.wait(30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    queued = sum(a.status == "queued" for a in attempts(db_url).values())
    assert queued > 0
    res = invoke("status", "1", env=env)  # unfinished, and its process is gone: status says what to do
    assert "its solve process is gone: `packsolve resume 1`" in res.stdout
    res = invoke("resume", "1", "-q", "--format", "json", env=env)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["counts"] == {"solved": 60}


def test_a_solve_logging_to_a_file_prints_progress_lines_every_few_seconds(tmp_path, db_url):
    log = tmp_path / "night.log"
    pack = write_pack(tmp_path, 16, ms=250)
    with log.open("w") as err:
        res = subprocess.run(
            packsolve_cmd("solve", str(pack), "-j", "2", "--progress-every", "0.5"),
            env=child_env({"PACKSOLVE_DATABASE_URL": db_url}),
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            timeout=300,
        )
    assert res.returncode == 0
    lines = [line for line in log.read_text().splitlines() if line.startswith("run 1: ") and "final" in line]
    assert len(lines) >= 3, log.read_text()  # 2 s of work, a line every half second, one at the end
    assert lines[-1].startswith("run 1: 16/16 final (100%) · solved 16 ·") and "levels/s" in lines[-1]
    assert all("eta" in line for line in lines)
    assert "\x1b[" not in log.read_text()  # no terminal codes in a log


def session_members(sid: int) -> list[int]:
    """Return the pids of the processes in session sid (from /proc), zombies left out."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if int(fields[3]) == sid and fields[0] != "Z":
                out.append(int(entry))
    return out


def test_a_solve_killed_9_leaves_no_process_and_runs_shows_it_interrupted_with_the_resume_command(
    tmp_path, sqlite_url
):
    proc = start_solve(sqlite_url, write_pack(tmp_path, 40, ms=300), "-j", "2")
    try:
        wait_for_solved(sqlite_url, proc, 2)
        assert len(session_members(proc.pid)) >= 3  # the solve, its pool and their solver children
        os.kill(proc.pid, signal.SIGKILL)  # the solve process alone: nothing tells its pool
        proc.wait(30)
        assert wait_until(lambda: session_members(proc.pid) == [], 15), session_members(proc.pid)
    finally:
        for pid in session_members(proc.pid):
            os.kill(pid, signal.SIGKILL)
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url}
    [row] = json.loads(invoke("runs", "--format", "json", env=env).stdout)
    assert row["state"] == ShownState.INTERRUPTED
    assert "`packsolve resume 1`" in invoke("runs", env=env).stdout
    progress = json.loads(invoke("status", "1", "--format", "json", env=env).stdout)
    assert (progress["state"], progress["eta_s"]) == (ShownState.INTERRUPTED, None)
    summary = json.loads(invoke("report", "summary", "--format", "json", env=env).stdout)
    assert summary["state"] == ShownState.INTERRUPTED  # as `runs` says, not `running`
