"""execute_attempt: the one execution path of a solver, in a forked child under limits."""

from __future__ import annotations

import contextlib
import json
import math
import os
import resource
import select
import signal
import time
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from packsolve.budget import Budget
from packsolve.levels import LevelError
from packsolve.outcome import Outcome, SearchStats, Status
from packsolve.puzzles import get_kind


@dataclass(frozen=True)
class Limits:
    """Per-attempt limits: wall seconds, expanded nodes, and MB of memory beyond the worker's own."""

    time_limit: float | None = None
    node_limit: int | None = None
    memory_limit_mb: int | None = None

    def hard_time(self) -> float | None:
        """Return wall seconds after which the child is killed: the budget's limit plus a grace."""
        if self.time_limit is None:
            return None
        # The cooperative budget normally stops the search on time; the grace only
        # has to cover a solver stuck in one long step (or one ignoring its budget).
        return self.time_limit + min(5.0, 1.0 + 0.05 * self.time_limit)


@dataclass(frozen=True)
class AttemptSpec:
    """Everything needed to run one attempt; JSON-ready so it can travel on the queue."""

    kind: str
    heuristic: str
    level: Mapping[str, Any]
    limits: Limits = field(default_factory=Limits)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "heuristic": self.heuristic,
            "level": dict(self.level),
            "time_limit": self.limits.time_limit,
            "node_limit": self.limits.node_limit,
            "memory_limit_mb": self.limits.memory_limit_mb,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AttemptSpec:
        limits = Limits(data.get("time_limit"), data.get("node_limit"), data.get("memory_limit_mb"))
        return cls(data["kind"], data["heuristic"], data["level"], limits)


def execute_attempt(spec: AttemptSpec) -> Outcome:
    """Solve one level in a forked child under spec's limits; every ending becomes one Outcome.

    Never raises for anything the level or the solver does: a bad level is
    ``invalid``, a crash ``error``, a kill at the hard limit ``timeout``, an
    answer that the kind's ``verify`` rejects ``wrong``.
    """
    try:
        kind = get_kind(spec.kind)
        _, solve = kind.solver(spec.heuristic)
    except KeyError as exc:
        return Outcome(Status.ERROR, message=str(exc.args[0]))
    try:
        level = kind.parse(spec.level)
    except LevelError as exc:
        return Outcome(Status.INVALID, message=str(exc))
    except Exception as exc:  # a parser bug must not take the worker down
        return Outcome(Status.INVALID, message=f"level could not be parsed: {type(exc).__name__}: {exc}")

    payload, stats, ending = _run_in_child(lambda budget: solve(level, budget), spec.limits)
    if ending is not None:
        return Outcome(ending[0], stats=stats, message=ending[1])
    status = Status(payload["status"])
    stats = SearchStats(int(payload.get("nodes", 0)), stats.wall_s, stats.cpu_s, stats.peak_rss_mb)
    solution = payload.get("solution")
    message = payload.get("message", "")
    if status is Status.SOLVED:
        try:
            problem = kind.verify(level, solution)
        except Exception as exc:
            problem = f"verify failed on this solution: {type(exc).__name__}: {exc}"
        if problem:
            return Outcome(Status.WRONG, solution, stats, f"verify rejected the solution: {problem}")
    return Outcome(status, solution if status is Status.SOLVED else None, stats, message)


def solution_length(kind: str, outcome: Outcome) -> int | None:
    """Return the kind's length of the outcome's solution (the export's `length`), or None."""
    if outcome.solution is None:
        return None
    try:
        return get_kind(kind).length(outcome.solution)
    except Exception:
        return None


def _run_in_child(work: Any, limits: Limits) -> tuple[dict[str, Any], SearchStats, tuple[Status, str] | None]:
    """Fork, run work(budget) in the child, and return (payload, stats, forced ending or None)."""
    read_fd, write_fd = os.pipe()
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(read_fd)
        _child(work, limits, write_fd)
    os.close(write_fd)
    chunks: list[bytes] = []
    killed = False
    reaped: tuple[int, int, Any] | None = None
    hard = limits.hard_time()
    try:
        while True:
            wait = None if hard is None else max(0.0, started + hard - time.monotonic())
            ready, _, _ = select.select([read_fd], [], [], wait)
            if not ready:
                os.kill(pid, signal.SIGKILL)
                killed = True
                break
            chunk = os.read(read_fd, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
        reaped = os.wait4(pid, 0)
    finally:
        os.close(read_fd)
        if reaped is None:  # interrupted (Celery soft limit, Ctrl-C): leave no orphan behind
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    wall = time.monotonic() - started
    _, wstatus, usage = reaped
    stats = SearchStats(0, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024.0)
    if killed:
        return {}, stats, (Status.TIMEOUT, f"killed at the hard limit after {wall:.1f} s")
    if os.WIFSIGNALED(wstatus):
        return {}, stats, _signal_ending(os.WTERMSIG(wstatus), stats, limits)
    try:
        payload = json.loads(b"".join(chunks))
    except ValueError:
        code = os.WEXITSTATUS(wstatus) if os.WIFEXITED(wstatus) else -1
        return {}, stats, (Status.ERROR, f"solver process ended without a result (exit code {code})")
    if payload.get("status") == "memout":
        return payload, stats, (Status.MEMOUT, payload.get("message", "out of memory"))
    if payload.get("status") == "error":
        return payload, stats, (Status.ERROR, payload.get("message", "solver failed"))
    return payload, stats, None


def _signal_ending(signum: int, stats: SearchStats, limits: Limits) -> tuple[Status, str]:
    name = signal.Signals(signum).name if signum in iter(signal.Signals) else str(signum)
    if signum == signal.SIGXCPU:
        return Status.TIMEOUT, f"CPU time limit reached ({stats.cpu_s:.1f} s CPU)"
    if signum == signal.SIGKILL and limits.memory_limit_mb is not None:
        return Status.MEMOUT, f"solver process killed (SIGKILL) at {stats.peak_rss_mb:.0f} MB peak RSS"
    return Status.ERROR, f"solver process died from signal {name}"


def _child(work: Any, limits: Limits, write_fd: int) -> None:
    """Run in the forked child: set limits, solve, write one JSON payload, exit without cleanup."""
    code = 0
    try:
        # The parent decides about interrupts; a terminal's Ctrl-C must not garble the pipe.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        _set_rlimits(limits)
        budget = Budget(limits.time_limit, limits.node_limit)
        try:
            out = work(budget)
            payload = {
                "status": out.status.value,
                "solution": out.solution,
                "nodes": out.stats.nodes or budget.nodes,
                "message": out.message,
            }
        except MemoryError:
            payload = {"status": "memout", "message": _memout_message(limits)}
        except RecursionError as exc:
            payload = {"status": "error", "message": f"RecursionError: {exc} (search went too deep)"}
        except Exception as exc:
            payload = {"status": "error", "message": _describe(exc)}
        try:
            data = json.dumps(payload).encode()
        except MemoryError:
            data = json.dumps({"status": "memout", "message": _memout_message(limits)}).encode()
        except (TypeError, ValueError) as exc:
            data = json.dumps({"status": "error", "message": f"solution is not JSON: {exc}"}).encode()
        view = memoryview(data)
        while view:
            view = view[os.write(write_fd, view) :]
    except BaseException:
        code = 70
    finally:
        os._exit(code)


def _set_rlimits(limits: Limits) -> None:
    if limits.memory_limit_mb is not None:
        # The child starts as a copy of the worker, so the cap is on top of what is already mapped.
        mapped = _address_space_bytes()
        cap = mapped + limits.memory_limit_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    hard = limits.hard_time()
    if hard is not None:
        # CPU seconds as a backstop should the parent itself be stalled; SIGXCPU first, SIGKILL later.
        cpu = math.ceil(hard) + 2
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))


def _address_space_bytes() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return 0


def _memout_message(limits: Limits) -> str:
    if limits.memory_limit_mb is None:
        return "out of memory"
    return f"memory limit of {limits.memory_limit_mb} MB reached"


def _describe(exc: BaseException) -> str:
    """Return 'Type: message' and where it was raised, short enough for a table cell."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" (at {os.path.basename(frames[-1].filename)}:{frames[-1].lineno})" if frames else ""
    return f"{type(exc).__name__}: {exc}{where}"[:2000]
