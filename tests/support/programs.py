"""Real external solver programs for the tests, written (Python, sh) or compiled (C) into a directory.

Every program solves, or fails to solve, `coins` levels ({"notes": [...], "target": T}):
the kind's verify then judges the answer like any built-in solver's.
"""

from __future__ import annotations

import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from packsolve.execution import AttemptSpec, execute_attempts
from packsolve.outcome import Outcome

PY = "#!/usr/bin/env python3\nimport json, os, sys, time, itertools\n"

ANSWER = "print(json.dumps(solve(json.load(sys.stdin))))\n"
SOLVE = """
def solve(level):
    notes, target = level["notes"], level["target"]
    for k in range(len(notes) + 1):
        for combo in itertools.combinations(notes, k):
            if sum(combo) == target:
                return {"status": "solved", "solution": {"count": k, "notes": sorted(combo)}, "nodes": k + 1}
    return {"status": "no_solution", "message": "no subset of the notes sums to the target"}
"""

PROGRAMS = {
    # Reads the level from the file named by {level}, answers right.
    "correct.py": PY + SOLVE + "print(json.dumps(solve(json.load(open(sys.argv[1])))))\n",
    # Reads the level from standard input only (no {level} in its command).
    "stdin_only.py": PY + SOLVE + "print(json.dumps(solve(json.load(sys.stdin))))\n",
    # Claims a solution that does not sum to the target.
    "wrong.py": PY + 'print(json.dumps({"status": "solved", "solution": {"count": 1, "notes": [7]}}))\n',
    # Sleeps far past any limit the tests give.
    "sleeper.py": PY + "time.sleep(600)\n",
    # Prints something that is not the protocol.
    "garbage.py": PY
    + 'print("Segmentation fault (core dumped)? no: just garbage")\nprint("not json", file=sys.stderr)\n',
    # Exits with a code after a message on stderr.
    "exit3.py": PY + 'print("cannot parse level", file=sys.stderr)\nsys.exit(3)\n',
    # Answers an unknown status.
    "unknown_status.py": PY + 'print(json.dumps({"status": "maybe"}))\n',
    # Prints nothing at all.
    "silent.sh": "#!/bin/sh\nexit 0\n",
    # Prints more than the output cap (64 MB).
    "flood.sh": "#!/bin/sh\nhead -c 70000000 /dev/zero\n",
    # Reports many nodes, for the node limit.
    "busy.py": PY + SOLVE + "a = solve(json.load(sys.stdin)); a['nodes'] = 1000\nprint(json.dumps(a))\n",
    # Forks a child that writes its pid next to the program and sleeps; once it has, the parent answers
    # right and exits, leaving it behind.
    "forker.py": PY
    + SOLVE
    + textwrap.dedent(
        """
        level = json.load(sys.stdin)
        ready_r, ready_w = os.pipe()
        if os.fork() == 0:
            with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "forker.pid"), "w") as f:
                f.write(str(os.getpid()))
            os.write(ready_w, b"x")
            time.sleep(600)
            os._exit(0)
        os.read(ready_r, 1)
        print(json.dumps(solve(level)))
        """
    ),
    # Leaves a grandchild that escapes its process group (setsid, double fork), then sleeps past the limit;
    # writes its level file's path beside itself first.
    "escaper.py": PY
    + textwrap.dedent(
        """
        pidfile = os.path.join(os.path.dirname(os.path.abspath(__file__)), "escaper.pid")
        with open(pidfile.replace(".pid", ".level"), "w") as f:
            f.write(os.environ["PACKSOLVE_LEVEL"])
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                with open(pidfile, "w") as f:
                    f.write(str(os.getpid()))
                time.sleep(600)
            os._exit(0)
        time.sleep(600)
        """
    ),
    # Leaves a child running, kills the solver process that started it (kill -9 $PPID), then sleeps:
    # it writes its level file's path and both pids beside itself first.
    "parricide.sh": textwrap.dedent(
        """\
        #!/bin/sh
        here=$(dirname "$0")
        sleep 600 &
        echo "$$ $!" > "$here/parricide.pids.tmp"
        echo "$PACKSOLVE_LEVEL" > "$here/parricide.level"
        mv "$here/parricide.pids.tmp" "$here/parricide.pid"
        kill -9 $PPID
        exec sleep 600
        """
    ),
    # Burns CPU in a child process, waits for it, then answers: CPU time counts the children.
    "cpu_children.py": PY
    + SOLVE
    + textwrap.dedent(
        """
        level = json.load(sys.stdin)
        pid = os.fork()
        if pid == 0:
            end = time.process_time() + 0.6
            while time.process_time() < end:
                pass
            os._exit(0)
        os.waitpid(pid, 0)
        print(json.dumps(solve(level)))
        """
    ),
    # Sleeps while a grandchild (child of a child that waits for it) burns CPU without end; the
    # grandchild's pid is written beside it first. Only its tree's CPU can stop it before a wall limit.
    "tree_burner.py": PY
    + textwrap.dedent(
        """
        here = os.path.dirname(os.path.abspath(__file__))
        if os.fork() == 0:
            if os.fork() == 0:
                with open(os.path.join(here, "tree_burner.tmp"), "w") as f:
                    f.write(str(os.getpid()))
                os.rename(os.path.join(here, "tree_burner.tmp"), os.path.join(here, "tree_burner.pid"))
                while True:
                    pass
            os.wait()
            os._exit(0)
        time.sleep(600)
        """
    ),
    # On a level of odd target, burns CPU (as tree_burner.py, without its pid file); else sleeps.
    "burn_or_sleep.py": PY
    + textwrap.dedent(
        """
        if json.load(sys.stdin)["target"] % 2 and os.fork() == 0:
            while True:
                pass
        time.sleep(600)
        """
    ),
    # Sleeps while a grandchild touches memory without end (1 MB at a time, kept).
    "grand_hog.py": PY
    + textwrap.dedent(
        """
        if os.fork() == 0:
            if os.fork() == 0:
                kept = []
                while True:
                    kept.append(bytearray(2**20))
            os.wait()
            os._exit(0)
        time.sleep(600)
        """
    ),
    # Touches 120 MB, then answers right: its peak memory is recorded.
    "big.py": PY + SOLVE + "blob = bytearray(120 * 2**20)\n" + ANSWER,
    # Touches 240 MB, then answers right: run before big.py, its peak must not become big.py's.
    "bigger.py": PY + SOLVE + "blob = bytearray(240 * 2**20)\n" + ANSWER,
}

C_PROGRAMS = {
    # Dies of SIGSEGV.
    "segfault": "int main(void) { volatile int *p = 0; *p = 1; return 0; }\n",
    # Allocates and touches memory without end.
    "hog": textwrap.dedent(
        """
        #include <stdlib.h>
        #include <string.h>
        int main(void) {
            for (;;) {
                char *p = malloc(1 << 20);
                if (!p) return 1;
                memset(p, 1, 1 << 20);
            }
        }
        """
    ),
}


def alive(pid: int) -> bool:
    """Return whether process pid runs: a zombie has ended (a subreaper test process may not reap it)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def write_programs(directory: Path) -> Path:
    """Write every program (compiling the C ones with cc) into directory; return it."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, source in PROGRAMS.items():
        path = directory / name
        path.write_text(source)
        path.chmod(0o755)
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.fail("no C compiler (cc): the external-solver tests compile their C programs", pytrace=False)
    for name, source in C_PROGRAMS.items():
        src = directory / f"{name}.c"
        src.write_text(source)
        subprocess.run([cc, "-O1", "-o", str(directory / name), str(src)], check=True)
    return directory


def toml_for(directory: Path, names: list[str] | None = None) -> Path:
    """Write a packsolve.toml in directory declaring each program as solver NAME (the file name's stem)."""
    lines = []
    for name in names or [*PROGRAMS, *C_PROGRAMS]:
        stem = name.split(".")[0].replace("_", "-")
        args = '"./' + name + '"' + ("" if name == "stdin_only.py" else ', "{level}"')
        lines += [f"[solvers.{stem}]", 'kind = "coins"', f"command = [{args}]", ""]
    path = directory / "packsolve.toml"
    path.write_text("\n".join(lines))
    return path


def run_one(spec: AttemptSpec) -> Outcome:
    """Run one attempt through the production entry point (execute_attempts) and return its outcome."""
    [outcome] = list(execute_attempts([spec]))
    return outcome
