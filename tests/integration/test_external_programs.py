"""External solver programs on the one execution path: real programs, each ending in the right status.

Every program here is a real executable (Python or sh scripts, C compiled by the test) run
through execute_attempts like any attempt: under the attempt's limits, measured, its answer
read by the protocol and judged by the kind's verify. The solver child goes on after each.
"""

from __future__ import annotations

import os
import time

import pytest

from packsolve.execution import AttemptSpec, Limits, execute_attempts
from packsolve.external.declaration import ExternalSolver, load_solvers
from packsolve.levels import make_level
from packsolve.outcome import Status
from tests.support.programs import alive, run_one
from tests.support.waiting import wait_for, wait_until

SOLVABLE = make_level("a", {"kind": "coins", "notes": [9, 1, 6, 3], "target": 10}).data
IMPOSSIBLE = make_level("b", {"kind": "coins", "notes": [4, 6, 10, 20], "target": 33}).data


@pytest.fixture
def pids(directory):
    for stale in directory.glob("*.pid"):
        stale.unlink()
    return directory


def attempt(programs, name, level=SOLVABLE, **limits):
    return AttemptSpec("coins", name, level, Limits(**{"time_limit": 5.0, **limits}), programs[name])


def test_a_correct_program_is_solved_with_its_answer_verified_and_its_nodes_kept(programs):
    out = run_one(attempt(programs, "correct"))
    assert out.status is Status.SOLVED and out.solution == {"count": 2, "notes": [1, 9]}
    assert out.nodes == 3 and out.stats.wall_s > 0 and out.stats.cpu_s > 0 and out.stats.peak_rss_mb > 1
    proved = run_one(attempt(programs, "correct", IMPOSSIBLE))
    assert proved.status is Status.NO_SOLUTION and "no subset" in proved.message


def test_a_program_that_reads_the_level_on_stdin_only_is_solved(programs):
    assert programs["stdin-only"].command == ("./stdin_only.py",)
    assert run_one(attempt(programs, "stdin-only")).status is Status.SOLVED


def test_a_wrong_answer_is_wrong_with_verify_saying_why(programs):
    out = run_one(attempt(programs, "wrong"))
    assert out.status is Status.WRONG and out.message.startswith("verify rejected the solution")


def test_a_program_sleeping_past_the_limit_is_killed_at_it_as_a_timeout(programs):
    started = time.monotonic()
    out = run_one(attempt(programs, "sleeper", time_limit=1.0))
    assert out.status is Status.TIMEOUT and "time limit 1 s reached" in out.message
    assert 1.0 <= out.stats.wall_s < 1.5 and time.monotonic() - started < 4


def test_a_program_allocating_without_end_is_a_memout(programs):
    out = run_one(attempt(programs, "hog", memory_limit_mb=64))
    assert out.status is Status.MEMOUT and "memory limit of 64 MB" in out.message
    # At the limit: in a cgroup the kernel holds the tree's memory to it exactly; watched, it is seen past it.
    assert out.stats.peak_rss_mb >= 64


def test_a_segfault_is_an_error_naming_the_signal(programs):
    out = run_one(attempt(programs, "segfault"))
    assert out.status is Status.ERROR and "SIGSEGV" in out.message


def test_garbage_on_stdout_is_an_error_quoting_stdout_and_stderr(programs):
    out = run_one(attempt(programs, "garbage"))
    assert out.status is Status.ERROR and "not one JSON object" in out.message
    assert (
        "stdout: 'Segmentation fault (core dumped)? no" in out.message and "stderr: 'not json'" in out.message
    )


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("exit3", "the program exited with code 3; stderr: 'cannot parse level'"),
        ("unknown-status", "unknown status 'maybe'"),
        ("silent", "printed nothing on standard output"),
        ("flood", "printed more than 64 MB on standard output"),
    ],
)
def test_other_protocol_breaches_are_errors_saying_what_was_wrong(programs, name, message):
    # Each ends on its own within a second idle; the limit only has to outlast a loaded machine
    # (writing 64 MB through a pipe took more than 5 s at load 12).
    out = run_one(attempt(programs, name, time_limit=60.0))
    assert out.status is Status.ERROR and message in out.message


def test_a_program_that_forks_a_child_and_exits_leaves_no_process_behind(programs, pids):
    out = run_one(attempt(programs, "forker"))
    assert out.status is Status.SOLVED
    pid = int((pids / "forker.pid").read_text())
    assert not alive(pid)


def test_a_grandchild_that_escapes_its_process_group_is_killed_at_the_limit(programs, pids):
    started = time.monotonic()
    out = run_one(attempt(programs, "escaper", time_limit=1.0))
    assert out.status is Status.TIMEOUT and time.monotonic() - started < 4
    pid = int((pids / "escaper.pid").read_text())
    assert not alive(pid)


def test_a_program_that_kills_its_solver_process_dies_with_its_attempt_and_leaves_no_level_file(
    programs, pids
):
    """kill -9 $PPID must not free a program from its limits, nor leave its level directory behind."""
    started = time.monotonic()
    out = run_one(attempt(programs, "parricide", time_limit=30.0))
    assert out.status is Status.ERROR and time.monotonic() - started < 20, out
    level_dir = os.path.dirname((pids / "parricide.level").read_text().strip())
    assert level_dir.startswith(("/dev/shm/", "/tmp/"))
    left = [int(p) for p in (pids / "parricide.pid").read_text().split()]
    wait_until(lambda: not any(alive(p) for p in left), 5, every=0.05)
    assert not [p for p in left if alive(p)], "the program outlived its attempt"
    assert not os.path.exists(level_dir), f"{level_dir} was left behind"
    # The process running attempts goes on: the next one is solved.
    assert run_one(attempt(programs, "correct")).status is Status.SOLVED


def test_the_node_limit_holds_where_the_program_reports_nodes(programs):
    out = run_one(attempt(programs, "busy", node_limit=10))
    assert out.status is Status.TIMEOUT and "node limit 10 passed: the program reported 1000" in out.message
    assert run_one(attempt(programs, "busy", node_limit=5000)).status is Status.SOLVED


def test_cpu_time_counts_the_programs_children(programs):
    out = run_one(attempt(programs, "cpu-children"))
    assert out.status is Status.SOLVED and out.stats.cpu_s >= 0.5


def test_the_programs_peak_memory_is_recorded(programs):
    out = run_one(attempt(programs, "big"))
    assert out.status is Status.SOLVED and out.stats.peak_rss_mb >= 120


def test_each_programs_peak_is_its_own_even_after_a_larger_program_in_the_same_solver_child(programs):
    # Touching the memory and exiting takes a few ms: the polling may never see the peak, so
    # the kernel's record of the reaped program has to, and it must not be the larger one's.
    specs = [attempt(programs, name) for name in ("bigger", "big", "correct", "big")]
    peaks = [o.stats.peak_rss_mb for o in execute_attempts(specs)]
    assert peaks[0] >= 240 and all(120 <= p < 200 for p in (peaks[1], peaks[3])) and peaks[2] < 100, peaks


def test_the_solver_child_goes_on_after_every_kind_of_failure_in_one_batch(programs, pids):
    names = ["segfault", "garbage", "sleeper", "hog", "wrong", "forker", "correct"]
    specs = [attempt(programs, n, time_limit=1.0, memory_limit_mb=64) for n in names]
    statuses = [o.status for o in execute_attempts(specs)]
    assert statuses == [
        Status.ERROR,
        Status.ERROR,
        Status.TIMEOUT,
        Status.MEMOUT,
        Status.WRONG,
        Status.SOLVED,
        Status.SOLVED,
    ]


def test_a_command_missing_on_this_machine_is_an_error_saying_where_it_looked(tmp_path):
    missing = ExternalSolver("ghost", "coins", ("./bin/ghost", "{level}"), True, str(tmp_path))
    out = run_one(AttemptSpec("coins", "ghost", SOLVABLE, Limits(5.0), missing))
    assert out.status is Status.ERROR and f"no program at {tmp_path}/bin/ghost" in out.message
    on_path = ExternalSolver("nope", "coins", ("no-such-solver-anywhere",), True, str(tmp_path))
    out = run_one(AttemptSpec("coins", "nope", SOLVABLE, Limits(5.0), on_path))
    assert "'no-such-solver-anywhere' is not on this machine's PATH" in out.message


def test_a_file_that_is_not_executable_is_an_error_saying_so(tmp_path):
    script = tmp_path / "solver.py"
    script.write_text("print(1)\n")
    out = run_one(
        AttemptSpec(
            "coins",
            "x",
            SOLVABLE,
            Limits(5.0),
            ExternalSolver("x", "coins", ("./solver.py",), True, str(tmp_path)),
        )
    )
    assert out.status is Status.ERROR and "is not executable (chmod +x it)" in out.message


def test_a_task_names_the_program_by_its_declarations_digest_never_by_its_command(programs):
    from dataclasses import replace

    from packsolve.external.declaration import ProgramRef

    spec = attempt(programs, "correct")
    declared = programs["correct"]
    data = spec.to_json()
    assert data["program"] == {"name": "correct", "sha256": declared.digest()}
    assert AttemptSpec.from_json(data) == replace(spec, program=ProgramRef("correct", declared.digest()))
    # The same declaration in another directory is the same program; another command is not.
    assert replace(declared, base="/elsewhere").digest() == declared.digest()
    assert replace(declared, command=("/bin/sh", "-c", "id")).digest() != declared.digest()
    plain = AttemptSpec("coins", "dp", SOLVABLE, Limits(5.0))
    assert "program" not in plain.to_json() and AttemptSpec.from_json(plain.to_json()) == plain


def test_the_program_sees_the_limits_in_its_environment_and_not_packsolves_settings(tmp_path, monkeypatch):
    monkeypatch.setenv("PACKSOLVE_DATABASE_URL", "postgresql://secret@db/x")
    from packsolve.execution import processes

    if processes._kept is not None:  # a fresh solver child, forked after setenv, sees this environment
        processes._kept.discard()
        processes._kept = None
    script = tmp_path / "env.py"
    script.write_text(
        "#!/usr/bin/env python3\nimport json, os\n"
        'env = {k: v for k, v in os.environ.items() if k.startswith("PACKSOLVE_")}\n'
        'print(json.dumps({"status": "no_solution", "message": json.dumps(env, sort_keys=True)}))\n'
    )
    script.chmod(0o755)
    spec = AttemptSpec(
        "coins",
        "env",
        SOLVABLE,
        Limits(2.5, 100, 50),
        ExternalSolver("env", "coins", ("./env.py",), False, str(tmp_path)),
    )
    import json

    env = json.loads(run_one(spec).message)
    assert env.pop("PACKSOLVE_LEVEL").endswith("level.json")
    assert env == {
        "PACKSOLVE_KIND": "coins",
        "PACKSOLVE_MEMORY_LIMIT_MB": "50",
        "PACKSOLVE_NODE_LIMIT": "100",
        "PACKSOLVE_TIME_LIMIT": "2.5",
    }
    assert os.environ["PACKSOLVE_DATABASE_URL"]  # ours, untouched


def test_a_program_and_its_escaped_grandchild_die_when_the_process_running_it_is_killed(
    programs, directory, pids
):
    """A worker killed -9 must not leave a solver program (or what it started) running on its own."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from packsolve.execution import AttemptSpec, Limits, execute_attempts\n"
        "from packsolve.external.declaration import load_solvers\n"
        "program = load_solvers(sys.argv[1])['escaper']\n"
        "level = {'kind': 'coins', 'notes': [1], 'target': 1}\n"
        "list(execute_attempts([AttemptSpec('coins', 'escaper', level, Limits(120), program)]))\n"
    )
    driver = subprocess.Popen(
        [sys.executable, "-c", code, str(directory / "packsolve.toml")], stderr=subprocess.PIPE
    )
    try:

        def started() -> str:
            assert driver.poll() is None, driver.stderr.read().decode()
            return (pids / "escaper.pid").read_text() if (pids / "escaper.pid").exists() else ""

        grandchild = int(wait_for(started, 30, every=0.05, what="the program to start"))
        assert alive(grandchild)
        driver.kill()  # -9: no cleanup of its own
        driver.wait(10)
        deadline = time.monotonic() + 10
        while alive(grandchild):
            assert time.monotonic() < deadline, f"process {grandchild} outlived the killed worker"
            time.sleep(0.05)
        # The solver process, the one left to clean up, removes the level's directory too: just
        # after it has killed the program, so the directory may outlive the grandchild a moment.
        level_dir = os.path.dirname((pids / "escaper.level").read_text())
        while os.path.exists(level_dir):
            assert time.monotonic() < deadline, f"{level_dir} was left behind"
            time.sleep(0.05)
    finally:
        driver.kill()
        driver.wait(10)


def test_a_relative_command_not_beside_its_declaration_is_found_from_the_current_directory(
    directory, tmp_path, monkeypatch
):
    """`--solvers config/solvers.toml` with command ./bin/x, run from the directory holding bin/."""
    (tmp_path / "config").mkdir()
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "x").write_bytes((directory / "correct.py").read_bytes())
    (tmp_path / "bin" / "x").chmod(0o755)
    (tmp_path / "config" / "solvers.toml").write_text(
        '[solvers.x]\nkind = "coins"\ncommand = ["./bin/x", "{level}"]\n'
    )
    program = load_solvers(tmp_path / "config" / "solvers.toml")["x"]
    monkeypatch.chdir(tmp_path)
    out = run_one(AttemptSpec("coins", "x", SOLVABLE, Limits(5.0), program))
    assert out.status is Status.SOLVED
    monkeypatch.chdir(tmp_path / "config")
    out = run_one(AttemptSpec("coins", "x", SOLVABLE, Limits(5.0), program))
    assert out.status is Status.ERROR and f"no program at {tmp_path}/config/bin/x" in out.message


def test_without_exit_notification_programs_still_end_right(programs, monkeypatch):
    """Kernels before 5.3 (or seccomp filters) refuse pidfd_open: the exit is then looked for."""
    from packsolve.execution import processes, spawn

    if processes._kept is not None:  # a fresh solver child, forked with the patch in place
        processes._kept.discard()
        processes._kept = None
    monkeypatch.setattr(spawn, "_pidfd", lambda pid: None)
    outcomes = list(
        execute_attempts([attempt(programs, "correct"), attempt(programs, "sleeper", time_limit=0.5)])
    )
    assert [o.status for o in outcomes] == [Status.SOLVED, Status.TIMEOUT]
    if processes._kept is not None:
        processes._kept.discard()
        processes._kept = None
