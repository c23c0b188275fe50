"""The external solver protocol: how a program's run reads as an Outcome, limits first, then the answer."""

from __future__ import annotations

import signal

import pytest

from packsolve.execution.answer import outcome_of
from packsolve.execution.output import of_bytes
from packsolve.execution.spawn import Kill, RawRun
from packsolve.execution.spec import Limits
from packsolve.outcome import SearchStats, Status

LIMITS = Limits(10.0, 100, 64)
EXITED_0 = 0
SIGKILLED = signal.SIGKILL  # a wait status: killed by SIGKILL, no core


def run(stdout=b"", status=EXITED_0, **kw):
    return RawRun(
        **{
            "status": status,
            "stdout": stdout,
            "stats": SearchStats(wall_s=0.5, cpu_s=0.4, peak_rss_mb=10.0),
            "exited": True,
            **kw,
        }
    )


@pytest.mark.parametrize(
    ("raw", "status", "message"),
    [
        (run(b'{"status": "solved", "solution": [1, 2], "nodes": 7}\n'), Status.SOLVED, ""),
        (run(b'{"status": "no_solution", "message": "none"}'), Status.NO_SOLUTION, "none"),
        (run(b'{"status": "no_solution"}'), Status.NO_SOLUTION, "the program found no solution"),
        (
            run(b'{"status": "solved", "solution": [1], "nodes": 101}'),
            Status.TIMEOUT,
            "node limit 100 passed",
        ),
        (run(b'{"status": "solved"}'), Status.ERROR, 'answered "solved" without a "solution"'),
        (run(b'{"status": "solved", "solution": 1, "nodes": 1.5}'), Status.ERROR, '"nodes" must be'),
        (run(b'{"status": "solved", "solution": 1, "nodes": -1}'), Status.ERROR, '"nodes" must be'),
        (run(b'{"status": "Solved", "solution": 1}'), Status.ERROR, "unknown status 'Solved'"),
        (run(b"[1, 2]"), Status.ERROR, "printed a JSON list, not an object"),
        (
            run(b'{"status": "solved", "solution": 1}{"status": "solved"}'),
            Status.ERROR,
            "not one JSON object",
        ),
        (
            run(b"", stderr=of_bytes(b"boom", 1024)),
            Status.ERROR,
            "printed nothing on standard output (expected one JSON object); stderr: 'boom'",
        ),
        (run(b'{"status": "solved", "solution": 1}', status=2 << 8), Status.ERROR, "exited with code 2"),
        (run(b"", status=signal.SIGABRT), Status.ERROR, "died from SIGABRT (aborted)"),
        (run(stopped=Kill.TIMEOUT, exited=False), Status.TIMEOUT, "time limit 10 s reached"),
        (run(stopped=Kill.MEMOUT), Status.MEMOUT, "memory limit of 64 MB reached"),
        (
            run(stopped=Kill.OUTPUT, stdout=b"x" * 10),
            Status.ERROR,
            "more than 64 MB on standard output; stdout: 'xxxx",
        ),
        (
            RawRun(
                status=0, stdout=b'{"status": "solved", "solution": 1}', stats=SearchStats(peak_rss_mb=65.0)
            ),
            Status.MEMOUT,
            "64 MB",
        ),
        (run(status=SIGKILLED, oom_kills=1), Status.MEMOUT, "out-of-memory killer"),
        (run(status=SIGKILLED), Status.ERROR, "died from SIGKILL"),
    ],
)
def test_each_way_a_program_can_end_reads_as_one_outcome(raw, status, message):
    out = outcome_of(raw, LIMITS)
    assert out.status is status and message in out.message
    assert (out.stats.wall_s, out.stats.cpu_s) == (raw.stats.wall_s, raw.stats.cpu_s)


def test_a_solved_answer_keeps_its_solution_and_nodes_for_verify():
    out = outcome_of(
        run(b'{"status": "solved", "solution": {"count": 1}, "nodes": 3, "message": "m"}'), LIMITS
    )
    assert (out.solution, out.nodes, out.message) == ({"count": 1}, 3, "m")


def test_the_outcome_keeps_stderr_and_stdout_only_when_stdout_was_not_the_answer():
    err = of_bytes(b"warning: slow\n", 1024)
    solved = outcome_of(run(b'{"status": "solved", "solution": 1}', stderr=err), LIMITS)
    assert (solved.stdout, solved.stderr) == ("", "warning: slow\n")
    crashed = outcome_of(run(b"partial\n", status=1 << 8, stderr=of_bytes(b"Traceback\n", 1024)), LIMITS)
    assert (crashed.status, crashed.stdout, crashed.stderr) == (Status.ERROR, "partial\n", "Traceback\n")
    nothing = outcome_of(run(b"partial\n", status=1 << 8, stderr=of_bytes(b"Traceback\n", 0)), LIMITS, keep=0)
    assert (nothing.stdout, nothing.stderr) == ("", "") and "Traceback" in nothing.message
