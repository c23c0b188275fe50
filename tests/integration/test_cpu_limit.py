"""--cpu-limit on real process trees: a program's grandchildren count, a built-in solver's CPU is what
stops it however long its wall clock runs, a cgroup's memory limit holds over a grandchild, and where
cgroups cannot be used (an unprivileged user) the run says so and the limit still holds.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from packsolve.execution import AttemptSpec, Limits, cgroups
from packsolve.levels import make_level
from packsolve.outcome import Status
from tests.support.inprocess import invoke
from tests.support.programs import alive, run_one, toml_for, write_programs
from tests.support.services import ROOT, child_env, packsolve_cmd
from tests.support.waiting import wait_for

COINS = make_level("a", {"kind": "coins", "notes": [9, 1, 6, 3], "target": 10}).data
# A sudoku made against brute force: the `plain` search (first empty cell, no propagation) takes far
# more than a second of CPU on it.
HARD_SUDOKU = "..............3.85..1.2.......5.7.....4...1...9.......5......73..2.1........4...9"


def test_a_program_whose_grandchild_burns_cpu_is_stopped_at_its_trees_cpu_not_its_own(programs, directory):
    """The program itself sleeps: its own CPU never reaches the limit, its tree's does."""
    (directory / "tree_burner.pid").unlink(missing_ok=True)
    limits = Limits(cpu_limit=1.0)
    out = run_one(AttemptSpec("coins", "tree-burner", COINS, limits, programs["tree-burner"]))
    assert out.status is Status.TIMEOUT, out.message
    assert out.message.startswith("CPU time limit 1 s reached: the program and its processes were killed")
    assert out.stats.cpu_s >= 1.0, out.stats
    # Stopped at its CPU, not at the wall backstop (15 s) a CPU limit alone keeps.
    assert out.stats.wall_s < limits.wall_limit(), out.stats
    grandchild = int((directory / "tree_burner.pid").read_text())
    wait_for(lambda: not alive(grandchild), timeout=5, what="the burning grandchild to be gone")


def test_a_program_sleeping_under_a_cpu_limit_alone_is_stopped_at_the_wall_backstop(programs):
    """It uses no CPU but Python's start: without the backstop (10 x the limit + 5 s) it sleeps 600 s."""
    limits = Limits(cpu_limit=0.5)
    out = run_one(AttemptSpec("coins", "sleeper", COINS, limits, programs["sleeper"]))
    assert out.status is Status.TIMEOUT, out.message
    assert out.message.startswith("wall time backstop 10 s of the CPU time limit 0.5 s reached"), out.message
    assert 10.0 <= out.stats.wall_s < 30 and out.stats.cpu_s < 0.5, out.stats


def test_a_program_within_its_cpu_limit_is_solved_with_its_trees_cpu(programs):
    out = run_one(
        AttemptSpec("coins", "cpu-children", COINS, Limits(cpu_limit=5.0), programs["cpu-children"])
    )
    assert out.status is Status.SOLVED, out.message
    assert out.stats.cpu_s >= 0.6, out.stats  # the child's burn counts


def test_a_memory_hog_in_a_grandchild_is_stopped_by_the_cgroups_limit(programs):
    if cgroups.mode() != cgroups.CGROUP_V1:
        pytest.skip("cgroups cannot be used here (root and a writable cgroup v1 hierarchy are needed)")
    out = run_one(
        AttemptSpec(
            "coins", "grand-hog", COINS, Limits(time_limit=30.0, memory_limit_mb=64), programs["grand-hog"]
        )
    )
    assert out.status is Status.MEMOUT, out.message
    assert "its cgroup's limit killed a process of the program's tree" in out.message
    assert 60 <= out.stats.peak_rss_mb <= 70, out.stats  # the group's own peak: at its limit, not past it
    assert out.stats.wall_s < 20, out.stats


def _burning(pid: int) -> bool:
    """Return whether process pid has used some CPU (it runs, on the core it is pinned to)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK") > 0.2


def _on_one_core(core: int):
    return lambda: os.sched_setaffinity(0, {core})


def _solve_on(core: int, pack: Path, db: str, *limit: str) -> dict:
    res = subprocess.run(
        packsolve_cmd("solve", str(pack), "--heuristic", "plain", "--jobs", "1", "-q", *limit),
        env=child_env({"PACKSOLVE_DATABASE_URL": db}),
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=_on_one_core(core),
    )
    assert res.returncode == 0, res.stderr
    exported = subprocess.run(
        packsolve_cmd("export", "latest"),
        env=child_env({"PACKSOLVE_DATABASE_URL": db}),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert exported.returncode == 0, exported.stderr
    [record] = [json.loads(line) for line in exported.stdout.splitlines()]
    return record


def test_a_built_in_solver_sharing_its_core_is_stopped_at_its_cpu_time_not_its_wall_time(tmp_path):
    """A busy loop pinned to the solver's core takes about half of it: the wall clock runs twice as fast."""
    core = min(os.sched_getaffinity(0))
    pack = tmp_path / "hard.jsonl"
    pack.write_text(json.dumps({"kind": "sudoku", "grid": HARD_SUDOKU}) + "\n")
    db = f"sqlite:///{tmp_path / 'packsolve.db'}"
    competitor = subprocess.Popen([sys.executable, "-c", "while True: pass"], preexec_fn=_on_one_core(core))
    try:
        wait_for(lambda: _burning(competitor.pid), timeout=30, what="the competitor to burn CPU")
        by_cpu = _solve_on(core, pack, db, "--cpu-limit", "1")
        by_wall = _solve_on(core, pack, db, "--time-limit", "1")
    finally:
        competitor.kill()
        competitor.wait()
    assert by_cpu["status"] == "timeout" and by_cpu["message"] == "CPU time limit 1 s reached", by_cpu
    assert 1.0 <= by_cpu["cpu_s"] < 1.5, by_cpu
    assert by_cpu["wall_s"] >= 1.3 * by_cpu["cpu_s"], by_cpu  # the precondition: a shared core
    # For contrast, the wall limit: the same second gets the solver about half a second of CPU.
    assert by_wall["status"] == "timeout" and by_wall["message"].startswith("wall time limit 1 s"), by_wall
    assert by_wall["cpu_s"] < 0.9, by_wall


# What the CLI does: start processes of its own interpreter (multiprocessing's fork server).
_STARTS_ITSELF = "import subprocess, sys; subprocess.run([sys.executable, '-c', 'pass'], check=True)"


def _interpreter_for(user: str) -> str | None:
    """Return a Python of this version that user may run, as may the processes it starts (this
    interpreter, or the system's: a virtual environment's link may lead where user cannot go)."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for candidate in (sys.executable, shutil.which(version), f"/usr/bin/{version}"):
        if candidate and os.path.exists(candidate):
            ran = subprocess.run(
                [
                    "setpriv",
                    f"--reuid={user}",
                    "--regid=nogroup",
                    "--clear-groups",
                    candidate,
                    "-c",
                    _STARTS_ITSELF,
                ],
                capture_output=True,
            )
            if ran.returncode == 0:
                return candidate
    return None


def test_an_unprivileged_user_falls_back_to_rusage_says_so_and_the_cpu_limit_still_holds():
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to run the CLI as nobody")
    python = _interpreter_for("nobody")
    if python is None:
        pytest.skip("no Python of this version that nobody may run")
    # Everything nobody touches is its own: the programs, the pack, the database file.
    place = Path(tempfile.mkdtemp(prefix="packsolve-nobody-", dir="/tmp"))
    try:
        place.chmod(0o777)
        write_programs(place)
        toml = toml_for(place, ["tree_burner.py"])
        pack = place / "pack.jsonl"
        pack.write_text(json.dumps({"kind": "coins", "notes": [9, 1, 6, 3], "target": 10}) + "\n")
        for path in place.iterdir():
            path.chmod(0o777 if path.is_dir() or os.access(path, os.X_OK) else 0o666)
        db = f"sqlite:///{place / 'packsolve.db'}"
        paths = [str(ROOT / "src"), *site.getsitepackages()]
        env = child_env(
            {"PACKSOLVE_DATABASE_URL": db, "PYTHONPATH": os.pathsep.join(paths), "HOME": str(place)}
        )
        argv = ["solve", str(pack), "--solvers", str(toml), "--heuristic", "tree-burner", "--cpu-limit", "1"]
        res = subprocess.run(
            [
                "setpriv",
                "--reuid=nobody",
                "--regid=nogroup",
                "--clear-groups",
                python,
                "-m",
                "packsolve",
                *argv,
            ]
            + ["-q", "--format", "json"],
            env=env,
            cwd=place,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert res.returncode == 0, res.stderr
        summary = json.loads(res.stdout)
        assert summary["provenance"]["measurement"] == ["rusage"], summary["provenance"]
        assert summary["counts"] == {"timeout": 1} and summary["cpu_s_total"] >= 1.0, summary
        shown = invoke("export", str(summary["run"]), env={"PACKSOLVE_DATABASE_URL": db})
        assert shown.returncode == 0, shown.stderr
        [attempt] = [json.loads(line) for line in shown.stdout.splitlines()]
        assert attempt["message"].startswith("CPU time limit 1 s reached"), attempt
        assert attempt["cpu_s"] >= 1.0 and attempt["wall_s"] < 15, attempt
    finally:
        shutil.rmtree(place, ignore_errors=True)


@pytest.mark.parametrize("value", ["-1", "abc"])
@pytest.mark.parametrize("command", ["solve", "check"])
def test_a_bad_cpu_limit_is_refused_in_one_line_as_a_bad_time_limit_is(tmp_path, command, value):
    pack = tmp_path / "pack.jsonl"
    pack.write_text(json.dumps({"kind": "coins", "notes": [1], "target": 1}) + "\n")
    env = {"PACKSOLVE_DATABASE_URL": f"sqlite:///{tmp_path / 'packsolve.db'}"}
    by_cpu = invoke(command, str(pack), "--cpu-limit", value, env=env)
    by_wall = invoke(command, str(pack), "--time-limit", value, env=env)
    assert by_cpu.returncode == by_wall.returncode == 2, (by_cpu, by_wall)
    [line] = by_cpu.stderr.strip().splitlines()
    assert line.startswith("Error: Invalid value for '--cpu-limit'") and "duration" in line, line
    assert line.replace("--cpu-limit", "--time-limit") == by_wall.stderr.strip(), (line, by_wall.stderr)
    assert "Traceback" not in by_cpu.stderr


def test_a_cpu_limit_alone_keeps_no_wall_limit_but_its_backstop(tmp_path):
    pack = tmp_path / "pack.jsonl"
    pack.write_text(json.dumps({"kind": "coins", "notes": [1], "target": 1}) + "\n")
    env = {"PACKSOLVE_DATABASE_URL": f"sqlite:///{tmp_path / 'packsolve.db'}"}
    res = invoke("check", str(pack), "--cpu-limit", "2", "--format", "json", env=env)
    assert res.returncode == 0, res.stderr
    limits = json.loads(res.stdout)["limits"]
    assert limits["time_limit"] is None and limits["cpu_limit"] == 2.0 and limits["wall_backstop"] == 25.0
    both = json.loads(invoke("check", str(pack), "--format", "json", env=env).stdout)["limits"]
    assert both["time_limit"] == 60.0 and both["cpu_limit"] is None  # neither given: the default wall limit


def test_report_failures_groups_cpu_timeouts_apart_from_wall_ones_each_with_its_own_rerun(
    tmp_path, directory
):
    toml = toml_for(directory, ["burn_or_sleep.py"])
    pack = tmp_path / "pack.jsonl"
    levels = [{"kind": "coins", "notes": [1, 2], "target": t} for t in (3, 4, 5)]
    pack.write_text("".join(json.dumps(lv) + "\n" for lv in levels))
    env = {"PACKSOLVE_DATABASE_URL": f"sqlite:///{tmp_path / 'packsolve.db'}"}
    # The burners need 0.5 s of CPU within the wall limit: 10 s leaves them that on a machine whose
    # other work gives them a twentieth of a core (a hog-loaded CI gave them under a quarter: 2 s was short).
    limits = ("--time-limit", "10", "--cpu-limit", "0.5")
    res = invoke(
        "solve", str(pack), "--solvers", str(toml), "--heuristic", "burn-or-sleep", *limits, "-q", env=env
    )
    assert res.returncode == 0, res.stderr
    report = invoke("report", "failures", "latest", "--format", "json", env=env)
    assert report.returncode == 0, report.stderr
    groups = {g["pattern"].split(":")[0]: g for g in json.loads(report.stdout)["groups"]}
    assert set(groups) == {"CPU time limit N s reached", "wall time limit N s reached"}, groups
    cpu, wall = groups["CPU time limit N s reached"], groups["wall time limit N s reached"]
    assert (cpu["count"], wall["count"]) == (2, 1) and cpu["key"] != wall["key"]
    assert cpu["rerun"].endswith("--cpu-limit 1") and wall["rerun"].endswith("--time-limit 20"), (cpu, wall)


def test_the_empty_group_of_a_solver_child_that_died_is_removed_by_the_next_process_that_measures():
    if cgroups.mode() != cgroups.CGROUP_V1:
        pytest.skip("cgroups cannot be used here (root and a writable cgroup v1 hierarchy are needed)")
    gone = os.fork()
    if gone == 0:
        os._exit(0)
    os.waitpid(gone, 0)
    left = cgroups.JobGroup.make(f"{gone}-1")  # as a solver child killed mid-job with its parent leaves it
    alive_here = cgroups.JobGroup.make(f"{os.getpid()}-999")  # a live process's group is not touched
    try:
        starts = subprocess.run(
            [sys.executable, "-c", "from packsolve.execution import cgroups; print(cgroups.mode())"],
            env=child_env(),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert starts.stdout.strip() == cgroups.CGROUP_V1, starts.stderr
        assert not any(os.path.exists(p) for p in left.paths.values()), left.paths
        assert all(os.path.isdir(p) for p in alive_here.paths.values()), alive_here.paths
    finally:
        left.remove()
        alive_here.remove()


def _mode_asked(version: str) -> str:
    """Return the measurement a new process chooses with PACKSOLVE_CGROUPS=version."""
    env = child_env({"PACKSOLVE_CGROUPS": version})
    code = "from packsolve.execution import cgroups; print(cgroups.mode())"
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    ).stdout.strip()


def _need_cgroup_v2() -> None:
    """Skip where cgroup v2 cannot be used (not root, or no cgroup2 mount); else it must be chosen."""
    with open("/proc/self/mountinfo") as f:
        mounted = any(" - cgroup2 " in line for line in f)
    if os.geteuid() != 0 or not mounted:
        pytest.skip("cgroup v2 needs root and a cgroup2 mount")
    assert _mode_asked("v2") == cgroups.CGROUP_V2


def test_a_cgroup_v2_group_counts_its_trees_cpu_and_kills_it_whole():
    _need_cgroup_v2()
    group = cgroups.JobGroup.make(f"test-{os.getpid()}", hierarchies=cgroups.HIERARCHIES[cgroups.CGROUP_V2])
    procs = os.path.join(group.paths[cgroups.UNIFIED], "cgroup.procs")

    def join() -> None:
        with open(procs, "w") as f:
            f.write(str(os.getpid()))

    try:
        # A process that burns 0.3 s of CPU in a child of its own, then exits: the group counts both.
        burner = "import os, time\nif os.fork() == 0:\n    t = time.process_time()\n"
        burner += "    while time.process_time() - t < 0.3: pass\n    os._exit(0)\nos.wait()"
        subprocess.run([sys.executable, "-c", burner], preexec_fn=join, timeout=120, check=True)
        assert 0.3 <= group.cpu_s() < 5, group.cpu_s()
        sleeper = subprocess.Popen(["sleep", "600"], preexec_fn=join)
        assert group.pids() == [sleeper.pid]
        group.kill()
        assert sleeper.wait(10) == -9 and group.pids() == []
    finally:
        group.remove()
    assert not os.path.exists(group.paths[cgroups.UNIFIED])


def test_a_run_under_cgroup_v2_says_so_and_stops_a_programs_tree_at_its_cpu(tmp_path, directory):
    _need_cgroup_v2()
    (directory / "tree_burner.pid").unlink(missing_ok=True)
    toml = toml_for(directory, ["tree_burner.py"])
    pack = tmp_path / "pack.jsonl"
    pack.write_text(json.dumps({"kind": "coins", "notes": [9, 1, 6, 3], "target": 10}) + "\n")
    env = {"PACKSOLVE_DATABASE_URL": f"sqlite:///{tmp_path / 'packsolve.db'}"}
    (tmp_path / "packsolve.toml").write_text('[settings]\ncgroups = "v2"\n')  # the setting, from the file
    argv = ["solve", str(pack), "--solvers", str(toml), "--heuristic", "tree-burner", "--cpu-limit", "1"]
    res = subprocess.run(
        packsolve_cmd(*argv, "-q", "--format", "json"),
        env=child_env(env),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    summary = json.loads(res.stdout)
    assert summary["provenance"]["measurement"] == [cgroups.CGROUP_V2], summary["provenance"]
    assert summary["counts"] == {"timeout": 1}, summary
    shown = invoke("export", str(summary["run"]), env=env)
    [attempt] = [json.loads(line) for line in shown.stdout.splitlines()]
    assert attempt["message"].startswith("CPU time limit 1 s reached"), attempt
    assert attempt["cpu_s"] >= 1.0 and attempt["wall_s"] < 15, attempt
    grandchild = int((directory / "tree_burner.pid").read_text())
    wait_for(lambda: not alive(grandchild), timeout=5, what="the burning grandchild to be gone")
