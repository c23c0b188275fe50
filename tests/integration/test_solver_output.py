"""Each attempt of an external program keeps the program's own output: its stderr, and its stdout when it
was not the answer, head and tail within the output_keep cap, shown by `packsolve show` and on the
dashboard's level page. A program that writes 1 GB on stderr is read to its end by a reader that holds
only the cap: the attempt ends as the program's answer says, the next level runs.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from packsolve.levels import make_level
from tests.support.dashboard import serving
from tests.support.inprocess import invoke
from tests.support.programs import PY, SOLVE
from tests.support.services import wait_for_run

SOLVABLE = {"kind": "coins", "notes": [9, 1, 6, 3], "target": 10}
IMPOSSIBLE = {"kind": "coins", "notes": [4, 6, 10, 20], "target": 33}
GIB = 2**30
CUT = re.compile(r"\n\[… ([\d,]+) bytes cut …\]\n")

PROGRAMS = {
    # Prints a partial line on stdout and a warning on stderr, then crashes with a stack trace.
    "crash.py": PY
    + textwrap.dedent(
        """
        print("partial result 42", flush=True)
        print("warning: <b>level looks odd</b>", file=sys.stderr, flush=True)
        def divide(a, b):
            return a / b
        divide(1, 0)
        """
    ),
    # Answers right and logs on stderr: the stderr is kept, the stdout (the answer) is not kept again.
    "chatty.py": PY + SOLVE + 'print("searching subsets", file=sys.stderr)\n'
    "print(json.dumps(solve(json.load(sys.stdin))))\n",
    # On the impossible level, writes a first line, 1 GiB and a last line on stderr; then answers.
    "flood_err.py": PY
    + SOLVE
    + textwrap.dedent(
        f"""
        level = json.load(sys.stdin)
        if level["target"] == 33:
            os.write(2, b"first line\\n")
            block = b"0123456789abcde\\n" * 65536
            for _ in range({GIB} // len(block)):
                os.write(2, block)
            os.write(2, b"last line\\n")
        print(json.dumps(solve(level)))
        """
    ),
}


@pytest.fixture(scope="module")
def toml(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("programs")
    lines = []
    for name, source in PROGRAMS.items():
        (directory / name).write_text(source)
        (directory / name).chmod(0o755)
        lines += [f"[solvers.{name.split('.')[0]}]", 'kind = "coins"', f'command = ["./{name}"]', ""]
    (directory / "packsolve.toml").write_text("\n".join(lines))
    return directory / "packsolve.toml"


def write_pack(folder: Path, levels: list[dict]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    pack = folder / "pack.jsonl"
    pack.write_text("".join(json.dumps(lv) + "\n" for lv in levels))
    return pack


def solve(db: str, pack: Path, toml: Path, heuristic: str, *args: str) -> dict:
    res = invoke(
        "solve", str(pack), "-q", "--format", "json", "--solvers", str(toml), "--heuristic", heuristic,
        "--database-url", db, *args,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def show(db: str, level: str, fmt: str = "json") -> subprocess.CompletedProcess[str]:
    res = invoke("show", level, "--format", fmt, "--database-url", db)
    assert res.returncode == 0, res.stderr
    return res


def test_a_crashing_programs_stack_trace_is_shown_by_show_and_on_the_level_page(
    tmp_path: Path, toml: Path, db_url: str
) -> None:
    pack = write_pack(tmp_path / "pack", [SOLVABLE])
    summary = solve(db_url, pack, toml, "crash", "--time-limit", "20")
    assert summary["counts"] == {"error": 1}
    [attempt] = json.loads(show(db_url, f"{pack}:1").stdout)["history"]
    assert attempt["status"] == "error" and "exited with code 1" in attempt["message"]
    stderr = attempt["stderr"]
    assert stderr.startswith("warning: <b>level looks odd</b>\nTraceback (most recent call last):")
    assert "in divide" in stderr and stderr.rstrip().endswith("ZeroDivisionError: division by zero")
    # Not the answer: its stdout is kept too.
    assert attempt["stdout"] == "partial result 42\n"

    table = show(db_url, f"{pack}:1", "table").stdout
    assert (
        "stderr" in table and "ZeroDivisionError: division by zero" in table and "partial result 42" in table
    )

    level_hash = make_level("x", SOLVABLE).hash
    with serving(db_url, log_dir=tmp_path) as served:
        status, body = served.get(f"/levels/{level_hash}")
    assert status == 200
    assert "<h2>What the solvers printed</h2>" in body
    # Escaped, as printed: the program's markup is text on the page.
    assert "warning: &lt;b&gt;level looks odd&lt;/b&gt;" in body and "<b>level" not in body
    assert re.search(r'<pre class="output stderr">[^<]*ZeroDivisionError: division by zero', body)
    assert '<pre class="output stdout">partial result 42\n</pre>' in body


def test_a_solved_attempt_keeps_its_stderr_but_not_its_answer_again(
    tmp_path: Path, toml: Path, sqlite_url: str
) -> None:
    pack = write_pack(tmp_path / "pack", [SOLVABLE])
    assert solve(sqlite_url, pack, toml, "chatty")["counts"] == {"solved": 1}
    [attempt] = json.loads(show(sqlite_url, f"{pack}:1").stdout)["history"]
    assert (attempt["stderr"], attempt["stdout"]) == ("searching subsets\n", None)


def test_a_program_writing_1_gib_on_stderr_is_cut_at_the_cap_and_the_next_level_runs(
    tmp_path: Path, toml: Path, db_url: str
) -> None:
    pack = write_pack(tmp_path / "pack", [IMPOSSIBLE, SOLVABLE])
    # One process: the flood's attempt and the next level go through the same solver child.
    summary = solve(
        db_url, pack, toml, "flood_err", "--time-limit", "600", "-j", "1", "--memory-limit", "200"
    )
    assert summary["counts"] == {"no_solution": 1, "solved": 1}
    [flooded] = json.loads(show(db_url, f"{pack}:1").stdout)["history"]
    assert flooded["status"] == "no_solution" and flooded["stdout"] is None
    head, cut, tail = CUT.split(flooded["stderr"])
    assert head.startswith("first line\n0123456789abcde\n") and tail.endswith("0123456789abcde\nlast line\n")
    # The default cap, 64 KiB in all, and every other byte counted as cut.
    written = len("first line\n") + GIB + len("last line\n")
    assert len(head) + len(tail) == 64 * 1024 and int(cut.replace(",", "")) == written - 64 * 1024
    [after] = json.loads(show(db_url, f"{pack}:2").stdout)["history"]
    assert after["status"] == "solved" and after["stderr"] is None


# In a fresh interpreter, so that its record of reaped children holds only this attempt's solver
# child and the program: the largest resident memory any of them reached, read once the kept solver
# child is reaped at exit (the handler registered first runs last).
MEMORY = textwrap.dedent(
    """
    import atexit, json, resource, sys
    atexit.register(lambda: print(json.dumps(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)))
    from packsolve.execution import AttemptSpec, Limits, execute_attempts
    from packsolve.external.declaration import load_solvers
    program = load_solvers(sys.argv[1])["flood_err"]
    level = json.loads(sys.argv[2])
    [outcome] = execute_attempts([AttemptSpec("coins", "flood_err", level, Limits(600), program)], 4096)
    print(json.dumps([outcome.status, outcome.stderr]))
    """
)


def test_the_reader_of_a_1_gib_stderr_holds_only_the_cap_in_memory(toml: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-c", MEMORY, str(toml), json.dumps(IMPOSSIBLE)],
        capture_output=True, text=True, timeout=900, check=True,
    )  # fmt: skip
    result, peak_kb = (json.loads(line) for line in out.stdout.splitlines())
    status, stderr = result
    assert status == "no_solution"
    head, cut, tail = CUT.split(stderr)
    assert len(head) + len(tail) == 4096 and tail.endswith("last line\n")
    # Kept whole, 1 GiB would be in the solver child's memory; it holds a few pages beyond its own.
    assert 0 < peak_kb < 200 * 1024, f"a process reached {peak_kb / 1024:.0f} MB"  # 0: none reaped


def test_a_worker_keeps_a_crashing_programs_output_within_its_own_output_keep(
    tmp_path: Path, toml: Path, broker: str, pg_url: str, start_worker
) -> None:
    env = {"PACKSOLVE_DATABASE_URL": pg_url, "PACKSOLVE_BROKER_URL": broker}
    start_worker(
        broker, pg_url, "w1@test", env={"PACKSOLVE_OUTPUT_KEEP": "64"}, args=["--solvers", str(toml)]
    )
    pack = write_pack(tmp_path / "pack", [SOLVABLE])
    res = invoke(
        "submit", str(pack), "--solvers", str(toml), "--heuristic", "crash", "--time-limit", "20", env=env
    )
    assert res.returncode == 0, res.stderr
    run_id = int(res.stdout.strip().splitlines()[-1])
    wait_for_run(pg_url, run_id, timeout=120)
    [attempt] = [h for h in json.loads(show(pg_url, f"{pack}:1").stdout)["history"] if h["run"] == run_id]
    assert attempt["status"] == "error" and attempt["stdout"] == "partial result 42\n"
    # The worker's own cap, 64 bytes: the short stdout whole, the stack trace's head and tail in the rest.
    head, cut, tail = CUT.split(attempt["stderr"])
    assert head.startswith("warning: <b>") and tail.endswith(": division by zero\n")
    assert len(head) + len(tail) == 64 - len("partial result 42\n")
