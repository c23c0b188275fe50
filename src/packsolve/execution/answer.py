"""The external solver protocol: what a program's run means as an Outcome (before the kind's verify).

A program prints one JSON object on standard output: ``{"status": "solved", "solution": ...}``
(the solution in the kind's export format) or ``{"status": "no_solution", "message": "..."}``,
with an optional integer ``"nodes"``. Anything else (no output, not JSON, an unknown status,
output over the cap) is ``error`` with the start of its stdout and stderr in the message; a
non-zero exit is ``error`` naming the code or the signal. Limits come first: a program stopped
at the wall time limit, or whose process tree's CPU time passed the CPU limit, is ``timeout``,
one whose memory passed the limit ``memout``, one that reports more nodes than the node limit
``timeout``, as a built-in solver would have stopped.

Whatever the ending, the Outcome keeps the program's own output within the attempt's cap
(output.py): its standard error, and its standard output unless that was the answer taken.
"""

from __future__ import annotations

import json
import os
import signal
from dataclasses import dataclass, replace
from typing import Any

from packsolve.execution.output import DEFAULT_OUTPUT_KEEP, kept_texts, of_bytes
from packsolve.execution.spawn import STDOUT_CAP, Kill, RawRun
from packsolve.execution.spec import Limits
from packsolve.outcome import Outcome, SearchStats, Status

# How much of stdout and stderr a message quotes.
QUOTE_CHARS = 300


def outcome_of(run: RawRun, limits: Limits, keep: int = DEFAULT_OUTPUT_KEEP) -> Outcome:
    """Return the Outcome of a program's run under limits (a claimed solution not yet verified), with
    at most keep bytes of its output: stderr, and stdout when it was not the answer."""
    judged = _judged(run, limits)
    outcome, stdout = (
        (judged.outcome, None) if isinstance(judged, _Answered) else (judged, of_bytes(run.stdout, keep))
    )
    kept_out, kept_err = kept_texts(stdout, run.stderr, keep)
    return replace(outcome, stdout=kept_out, stderr=kept_err)


@dataclass(frozen=True)
class _Answered:
    """The Outcome of a program whose standard output was its answer (nothing of it is kept beyond)."""

    outcome: Outcome


def _judged(run: RawRun, limits: Limits) -> Outcome | _Answered:
    """Return the Outcome of a program's run under limits, without its output."""
    stats = run.stats
    memory = limits.memory_limit_mb
    if run.group_oom_kills and memory is not None:
        # The kernel killed a process of the tree at the memory limit of the attempt's cgroup.
        return Outcome(
            Status.MEMOUT,
            stats=stats,
            message=f"memory limit of {memory} MB reached: its cgroup's limit killed a process of the "
            f"program's tree{_quotes(run)}",
        )
    if run.stopped == Kill.MEMOUT or (memory is not None and stats.peak_rss_mb > memory):
        return Outcome(
            Status.MEMOUT, stats=stats, message=f"memory limit of {memory} MB reached{_quotes(run)}"
        )
    cpu_limit = limits.cpu_limit
    if run.stopped == Kill.CPU or (cpu_limit is not None and stats.cpu_s > cpu_limit):
        # Past the limit between two readings, the program may have answered first: it still did not
        # answer within the limit (as BenchExec counts it).
        return Outcome(
            Status.TIMEOUT,
            stats=stats,
            message=f"CPU time limit {cpu_limit:g} s reached: the program and its processes were killed "
            f"({stats.cpu_s:.2f} s CPU of its process tree)",
        )
    if run.stopped == Kill.TIMEOUT:
        if limits.wall_is_backstop():
            reached = (
                f"wall time backstop {limits.wall_limit():g} s of the CPU time limit {cpu_limit:g} s reached"
            )
        else:
            reached = f"wall time limit {limits.time_limit:g} s reached"
        return Outcome(
            Status.TIMEOUT, stats=stats, message=f"{reached}: the program and its processes were killed"
        )
    if run.oom_kills and os.WIFSIGNALED(run.status) and os.WTERMSIG(run.status) == signal.SIGKILL:
        # Nobody here sent that SIGKILL: the kernel ran out of memory and chose the program.
        return Outcome(
            Status.MEMOUT, stats=stats, message=f"killed by the kernel's out-of-memory killer{_quotes(run)}"
        )
    if run.stopped == Kill.OUTPUT:
        return _error(
            run, stats, f"the program printed more than {STDOUT_CAP // 2**20} MB on standard output"
        )
    ended = _exit_problem(run.status)
    if ended:
        return _error(run, stats, ended)
    answer, problem = _answer(run.stdout)
    if problem:
        return _error(run, stats, problem)
    nodes = answer.get("nodes", 0)
    stats = replace(stats, nodes=nodes)
    if limits.node_limit is not None and nodes > limits.node_limit:
        return _Answered(
            Outcome(
                Status.TIMEOUT,
                stats=stats,
                message=f"node limit {limits.node_limit} passed: the program reported {nodes}",
            )
        )
    message = answer.get("message", "")
    if answer["status"] == Status.SOLVED:
        return _Answered(Outcome(Status.SOLVED, answer["solution"], stats, message))
    return _Answered(Outcome(Status.NO_SOLUTION, None, stats, message or "the program found no solution"))


def _answer(stdout: bytes) -> tuple[dict[str, Any], str]:
    """Return (the answer object, "") or ({}, what is wrong with it) for a program's standard output."""
    if not stdout.strip():
        return {}, "the program printed nothing on standard output (expected one JSON object)"
    try:
        answer = json.loads(stdout)
    except (ValueError, UnicodeDecodeError) as exc:
        return {}, f"the program's output is not one JSON object ({exc})"
    if not isinstance(answer, dict):
        return {}, f"the program printed a JSON {type(answer).__name__}, not an object"
    status = answer.get("status")
    if status not in (Status.SOLVED, Status.NO_SOLUTION):
        return {}, f'unknown status {status!r} (a program answers "solved" or "no_solution")'
    if status == Status.SOLVED and "solution" not in answer:
        return {}, 'the program answered "solved" without a "solution"'
    nodes = answer.get("nodes", 0)
    if type(nodes) is not int or nodes < 0:
        return {}, f'"nodes" must be a non-negative integer, not {nodes!r}'
    message = answer.get("message", "")
    if not isinstance(message, str):
        return {}, f'"message" must be a string, not {message!r}'
    return answer, ""


def _exit_problem(status: int) -> str:
    """Return what a non-zero exit or a death by signal says, or "" for exit code 0."""
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        what = signal.strsignal(number) or name
        return f"the program died from {name} ({what.lower()})"
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) != 0:
        return f"the program exited with code {os.WEXITSTATUS(status)}"
    return ""


def _error(run: RawRun, stats: SearchStats, problem: str) -> Outcome:
    return Outcome(Status.ERROR, stats=stats, message=problem + _quotes(run))


def _quotes(run: RawRun) -> str:
    """Return '; stdout: ...; stderr: ...' with the start of each (empty ones left out)."""
    parts = []
    for name, data in (("stdout", run.stdout), ("stderr", run.stderr.start())):
        text = data[: QUOTE_CHARS * 4].decode("utf-8", "replace").strip()
        if text:
            short = text[:QUOTE_CHARS] + (
                "…" if len(text) > QUOTE_CHARS or len(data) > QUOTE_CHARS * 4 else ""
            )
            parts.append(f"{name}: {short!r}")
    return "; " + "; ".join(parts) if parts else ""
