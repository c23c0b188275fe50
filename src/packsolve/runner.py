"""The one execution path of a solver, in a forked child under limits: execute_attempts, execute_claimed."""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import math
import os
import pickle
import resource
import select
import signal
import struct
import threading
import time
import traceback
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

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


def execute_claimed(spec: AttemptSpec, claim: Callable[[], bool], claim_after: float = 0.0) -> Outcome | None:
    """Run one attempt while claim() runs alongside; return its Outcome, or None if claim() said no.

    claim is called once the solver child has the attempt, so the caller's
    bookkeeping (a worker's claim in the database) overlaps the solving instead
    of preceding it. With claim_after > 0 it is called only if the attempt has
    not ended within that many seconds: an attempt that ends sooner comes back
    unclaimed, and the caller does the claim's bookkeeping with its result.
    When claim returns False the result is not wanted: a child that finishes
    within ABANDON_GRACE_S is kept, a busier one killed.
    """
    prepared = _prepare(spec)
    if isinstance(prepared, Outcome):
        return prepared if claim_after > 0 or claim() else None
    kind, level, work = prepared
    endings = _run_batch([(work, spec.limits)], claim, claim_after)
    try:
        return _finish(kind, level, *next(endings))
    except _Abandoned:
        return None
    finally:
        endings.close()


def execute_attempts(specs: Sequence[AttemptSpec]) -> Iterator[Outcome]:
    """Yield one Outcome per spec, in order; never raises for anything a level or its solver does.

    The solvable attempts run one after the other in this process's kept solver
    child (forked once, see _run_child), so tiny levels pay for no fork. Every attempt
    still gets its own budget, rlimits, hard kill and its own wall, CPU and peak
    RSS; a child that dies or is killed costs only the attempt it was running,
    and a fresh child takes the rest.
    """
    prepared = [_prepare(spec) for spec in specs]
    jobs = [
        (p[2], spec.limits) for p, spec in zip(prepared, specs, strict=True) if not isinstance(p, Outcome)
    ]
    endings = _run_batch(jobs)
    try:
        for p in prepared:
            yield p if isinstance(p, Outcome) else _finish(p[0], p[1], *next(endings))
    finally:
        endings.close()  # a consumer that stops early must leave no child behind


def _prepare(spec: AttemptSpec) -> Outcome | tuple[Any, Any, Any]:
    """Return (kind, level, work) for a solvable spec, or the Outcome it ends with at once."""
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
    return kind, level, functools.partial(solve, level)


def _finish(
    kind: Any, level: Any, payload: dict[str, Any], stats: SearchStats, ending: tuple[Status, str] | None
) -> Outcome:
    """Turn what the child reported into the attempt's Outcome, verifying a claimed solution."""
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


Ending = tuple[dict[str, Any], SearchStats, tuple[Status, str] | None]


def _run_batch(
    jobs: Sequence[tuple[Any, Limits]], started: Callable[[], bool] | None = None, started_after: float = 0.0
) -> Generator[Ending, None, None]:
    """Yield (payload, stats, forced ending or None) per job, in order, in a fresh child after a death.

    started, started_after: see _follow (for the first child only).
    """
    start = 0
    while start < len(jobs):
        child = _run_child(jobs[start:], started, started_after)
        started = None
        try:
            for ending in child:
                start += 1
                yield ending
        finally:
            child.close()


# A solver child is kept after its batch for the next one: forking a process the size of a
# worker costs milliseconds, far more than a tiny attempt. It leaves instead when its memory
# grew by this much, so one big attempt's heap does not inflate every later attempt's peak RSS.
RETIRE_GROWTH_MB = 128
_REFUSED = b'{"_refused": true}'
# A child whose results were declined (execute_claimed) is kept if it finishes within this.
ABANDON_GRACE_S = 0.1


class _Abandoned(Exception):
    """The caller declined the results of the jobs it handed over (see _follow)."""


@dataclass
class _Child:
    """A forked solver child: its pid, the pipes to it and from it, and the CPU its jobs reported."""

    pid: int
    to_child: int  # -1: the child got its jobs at fork and leaves after them
    from_child: int
    reported_cpu: float = 0.0

    def close(self) -> None:
        for fd in (self.to_child, self.from_child):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)

    def discard(self) -> None:
        """Kill and reap the child (it may be mid-job: its state is unknown) and close its pipes."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)
        self.close()


# The idle child kept for this process's next batch, and who may use it: one batch at a time.
_kept: _Child | None = None
_kept_lock = threading.Lock()


def _run_child(
    jobs: Sequence[tuple[Any, Limits]], started: Callable[[], bool] | None = None, started_after: float = 0.0
) -> Generator[Ending, None, None]:
    """Run jobs in one solver child; yield each job's ending as it arrives, stopping after a death or kill.

    The kept child takes the jobs through its pipe if it can; otherwise (none kept,
    it died while idle, a job cannot be pickled or unpickled, another thread's
    batch is using it) a fresh child is forked with the jobs in its memory.
    """
    own = _kept_lock.acquire(blocking=False)
    try:
        child = _hand_over(jobs) if own else None
        yield from _follow(child or _fork(jobs, keep=own), jobs, own, started, started_after)
    finally:
        if own:
            _kept_lock.release()


def _hand_over(jobs: Sequence[tuple[Any, Limits]]) -> _Child | None:
    """Send jobs to the kept child and return it; None if there is none or it cannot take them."""
    global _kept
    child, _kept = _kept, None
    if child is None:
        return None
    try:
        data = pickle.dumps(list(jobs), protocol=pickle.HIGHEST_PROTOCOL)
        _write_all(child.to_child, struct.pack("!Q", len(data)) + data)
    except Exception:  # a job that cannot travel (a closure, say), or the child died while idle
        child.discard()
        return None
    return child


def _fork(jobs: Sequence[tuple[Any, Limits]], keep: bool) -> _Child:
    """Fork a child that runs jobs (from its copy of memory); kept ones then wait for more."""
    down_r, down_w = os.pipe() if keep else (-1, -1)
    up_r, up_w = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        _serve(jobs, down_r, up_w, parent)
    os.close(up_w)
    if keep:
        os.close(down_r)
    return _Child(pid, down_w, up_r)


def _follow(
    child: _Child,
    jobs: Sequence[tuple[Any, Limits]],
    keep: bool,
    started: Callable[[], bool] | None = None,
    started_after: float = 0.0,
) -> Generator[Ending, None, None]:
    """Yield the endings of the jobs a child runs; keep it if it ends the batch healthy.

    started, if given, is called once the child has the jobs, before any result is
    awaited; with started_after > 0, only if the first job has not ended within
    that many seconds (else never). If it returns False the results are not
    wanted: nothing is yielded, _Abandoned is raised, and the child is kept only
    if it finishes within ABANDON_GRACE_S (else killed).
    """
    global _kept
    lines = _Lines(child.from_child)
    mark = time.monotonic()  # when the job now running started (as far as the parent knows)
    started_by = mark + started_after  # when started is due, if it still is
    done = 0
    killed = False
    reaped: tuple[int, int, Any] | None = None
    current: _Child | None = child  # None once handed back as the kept child
    abandon_by = None
    try:
        while done < len(jobs):
            # Inside the try: if started raises (its database is gone), the child must not be left.
            if started is not None and time.monotonic() >= started_by:
                wanted, started = started(), None
                if not wanted:
                    abandon_by = time.monotonic() + ABANDON_GRACE_S
            now = time.monotonic()  # after started, which may have waited on its database
            hard = jobs[done][1].hard_time()
            if abandon_by is not None:
                wait: float | None = max(0.0, abandon_by - now)
            else:
                wait = None if hard is None else max(0.0, mark + hard - now)
            if started is not None:
                wait = started_by - now if wait is None else min(wait, started_by - now)
            line = lines.next(wait)
            if line is False:
                if started is not None and (hard is None or time.monotonic() < mark + hard):
                    continue  # only started's time came: call it, then wait on
                os.kill(child.pid, signal.SIGKILL)
                killed = True
                break
            if line is None:
                break
            if done == 0 and line == _REFUSED:  # the kept child could not unpickle them: fork afresh
                child.discard()
                child = current = _fork(jobs, keep)
                lines = _Lines(child.from_child)
                mark = time.monotonic()
                continue
            payload, stats, ending = _reported(line)
            started = None  # the first job ended before started was due: it never is
            # The next job's clock starts when the parent reads this line, not when the child
            # wrote it: a child blocked on a full pipe (parent busy writing results) has not
            # started the next job yet. Lenient by the parent's delay; RLIMIT_CPU still holds.
            mark = time.monotonic()
            child.reported_cpu += stats.cpu_s
            done += 1
            leaving = bool(payload.pop("_retire", False)) or (
                ending is not None and ending[0] is Status.MEMOUT
            )
            if done == len(jobs) and keep and not leaving:
                _kept, current = child, None  # idle now: the next batch's, before the last yield
            if abandon_by is None:
                yield payload, stats, ending
            if leaving:
                break  # after a MemoryError (or grown too big) the child leaves; the rest get a fresh one
        if current is not None:
            reaped = os.wait4(child.pid, 0)
    finally:
        if current is not None:
            if reaped is None:  # interrupted (Celery soft limit, Ctrl-C, consumer gone): leave no orphan
                current.discard()
            else:
                current.close()
    if abandon_by is not None:
        raise _Abandoned
    if done == len(jobs):
        return
    assert reaped is not None
    _, wstatus, usage = reaped
    wall = time.monotonic() - mark
    # The child's usage covers every job it ran; the one that ended it gets what the others did not use.
    cpu = max(0.0, usage.ru_utime + usage.ru_stime - child.reported_cpu)
    stats = SearchStats(0, wall, cpu, usage.ru_maxrss / 1024.0)
    limits = jobs[done][1]
    if killed:
        yield {}, stats, (Status.TIMEOUT, f"killed at the hard limit after {wall:.1f} s")
    elif os.WIFSIGNALED(wstatus):
        yield {}, stats, _signal_ending(os.WTERMSIG(wstatus), stats, limits)
    elif not (os.WIFEXITED(wstatus) and os.WEXITSTATUS(wstatus) == 0 and done > 0):
        code = os.WEXITSTATUS(wstatus) if os.WIFEXITED(wstatus) else -1
        yield {}, stats, (Status.ERROR, f"solver process ended without a result (exit code {code})")
    # else: the child left cleanly after a memout; the caller forks a new one for the rest.


class _Lines:
    """Lines read from a child's pipe, each waited for at most a given time."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buffer = b""

    def next(self, timeout: float | None) -> bytes | None | Literal[False]:
        """Return the next line (without its newline), None at end of file, False if timeout passed."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self.buffer:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([self.fd], [], [], wait)
            if not ready:
                return False
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                return None
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line


def _reported(line: bytes) -> Ending:
    """Return (payload, stats, forced ending or None) of one line the child wrote about one job."""
    try:
        payload = json.loads(line)
    except ValueError:
        return {}, SearchStats(), (Status.ERROR, "solver process wrote an unreadable result")
    measured = payload.pop("_usage")
    stats = SearchStats(0, measured["wall"], measured["cpu"], measured["rss"])
    if payload.get("status") == "memout":
        return payload, stats, (Status.MEMOUT, payload.get("message", "out of memory"))
    if payload.get("status") == "error":
        return payload, stats, (Status.ERROR, payload.get("message", "solver failed"))
    return payload, stats, None


def _signal_ending(signum: int, stats: SearchStats, limits: Limits) -> tuple[Status, str]:
    try:
        name = signal.Signals(signum).name
    except ValueError:
        name = str(signum)
    if signum == signal.SIGXCPU:
        return Status.TIMEOUT, f"CPU time limit reached ({stats.cpu_s:.1f} s CPU)"
    if signum == signal.SIGKILL and limits.memory_limit_mb is not None:
        return Status.MEMOUT, f"solver process killed (SIGKILL) at {stats.peak_rss_mb:.0f} MB peak RSS"
    return Status.ERROR, f"solver process died from signal {name}"


def _serve(jobs: Sequence[tuple[Any, Limits]], recv_fd: int, send_fd: int, parent: int) -> None:
    """Run in the forked child: each job under its limits, one JSON line each; then wait for more.

    recv_fd < 0: leave after the first jobs. Never returns; exits without cleanup.
    """
    code = 0
    try:
        # The parent decides about interrupts; a terminal's Ctrl-C must not garble the pipe.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        # A long-lived child must not hold the worker's sockets and pipes open (database
        # connections, Celery's pipes): their owner's close would not reach the other end.
        _close_fds_except({0, 1, 2, recv_fd, send_fd})
        _die_with_parent(parent)
        baseline = _current_rss_mb()
        while True:
            for i, (work, limits) in enumerate(jobs):
                payload = _child_job(work, limits)
                leaving = payload["status"] == "memout"  # after a MemoryError the heap is suspect
                if recv_fd >= 0 and i == len(jobs) - 1 and not leaving:
                    leaving = payload["_retire"] = _current_rss_mb() > baseline + RETIRE_GROWTH_MB
                _write_all(send_fd, _encode(payload, limits) + b"\n")
                if leaving:
                    return
            if recv_fd < 0:
                return
            _lift_rlimits()
            more = _read_jobs(recv_fd, send_fd)
            if more is None:
                return
            jobs = more
    except BaseException:
        code = 70
    finally:
        os._exit(code)


def _read_jobs(recv_fd: int, send_fd: int) -> list[tuple[Any, Limits]] | None:
    """Return the next batch from the parent; None at end of file (or after refusing one)."""
    header = _read_exactly(recv_fd, 8)
    if header is None:
        return None
    data = _read_exactly(recv_fd, struct.unpack("!Q", header)[0])
    try:
        return cast(list[tuple[Any, Limits]], pickle.loads(data or b""))
    except Exception:  # e.g. a solver defined after this child was forked: the parent forks afresh
        _write_all(send_fd, _REFUSED + b"\n")
        return None


def _read_exactly(fd: int, size: int) -> bytes | None:
    parts = []
    while size:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            return None
        parts.append(chunk)
        size -= len(chunk)
    return b"".join(parts)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _close_fds_except(keep: set[int]) -> None:
    try:
        fds = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        return
    for fd in fds:
        if fd not in keep:
            with contextlib.suppress(OSError):
                os.close(fd)


def _die_with_parent(parent: int) -> None:
    """Ask Linux to kill this child when the process that forked it dies (a worker killed -9):
    a kept child stuck in a solver would otherwise outlive it. Elsewhere, end of file on the
    pipe still ends an idle child."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # it died before the request took effect
        os._exit(0)


def _lift_rlimits() -> None:
    """Between batches: back to the hard limits, so reading the next batch is never capped."""
    for which in (resource.RLIMIT_AS, resource.RLIMIT_CPU):
        _, hard = resource.getrlimit(which)
        resource.setrlimit(which, (hard, hard))


def _forget_kept_child() -> None:
    """In a forked process: the kept child is the parent's; drop the copies of its pipes."""
    global _kept, _kept_lock
    if _kept is not None:
        _kept.close()
    _kept = None
    _kept_lock = threading.Lock()


def _release_kept_child() -> None:
    """At exit: end of file tells the idle kept child to leave; reap it."""
    child = _kept
    if child is not None:
        child.close()
        with contextlib.suppress(ChildProcessError):
            os.waitpid(child.pid, 0)


os.register_at_fork(after_in_child=_forget_kept_child)
atexit.register(_release_kept_child)


def _child_job(work: Any, limits: Limits) -> dict[str, Any]:
    """Run one job in the child under its limits; return its payload with its own usage."""
    _set_rlimits(limits)
    _reset_peak_rss()
    started = time.monotonic()
    before = resource.getrusage(resource.RUSAGE_SELF)
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
    after = resource.getrusage(resource.RUSAGE_SELF)
    end = time.monotonic()
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    payload["_usage"] = {"wall": end - started, "cpu": cpu, "rss": _peak_rss_mb(after)}
    return payload


def _encode(payload: dict[str, Any], limits: Limits) -> bytes:
    usage = payload["_usage"]
    try:
        return json.dumps(payload).encode()
    except MemoryError:
        return json.dumps({"status": "memout", "message": _memout_message(limits), "_usage": usage}).encode()
    except (TypeError, ValueError) as exc:
        return json.dumps(
            {"status": "error", "message": f"solution is not JSON: {exc}", "_usage": usage}
        ).encode()


def _set_rlimits(limits: Limits) -> None:
    """Cap this job's memory and CPU relative to what the child has already mapped and used.

    Only soft limits: a child running several jobs must be able to move them for
    the next one (a hard limit can never be raised again).
    """
    if limits.memory_limit_mb is not None:
        # The child starts as a copy of the worker, so the cap is on top of what is already mapped.
        cap = _address_space_bytes() + limits.memory_limit_mb * 1024 * 1024
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        resource.setrlimit(
            resource.RLIMIT_AS, (cap if hard == resource.RLIM_INFINITY else min(cap, hard), hard)
        )
    hard_time = limits.hard_time()
    if hard_time is not None:
        # CPU seconds as a backstop should the parent itself be stalled: SIGXCPU ends the child.
        usage = resource.getrusage(resource.RUSAGE_SELF)
        cpu = math.ceil(usage.ru_utime + usage.ru_stime + hard_time) + 2
        _, hard = resource.getrlimit(resource.RLIMIT_CPU)
        resource.setrlimit(
            resource.RLIMIT_CPU, (cpu if hard == resource.RLIM_INFINITY else min(cpu, hard), hard)
        )


def _reset_peak_rss() -> None:
    """Reset the kernel's peak-RSS mark (VmHWM) so the next reading is this job's own peak."""
    with contextlib.suppress(OSError), open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def _peak_rss_mb(usage: Any) -> float:
    """Return the peak RSS since the last reset in MB; the process's lifetime peak if unknown."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except (OSError, ValueError, IndexError):
        pass
    return usage.ru_maxrss / 1024.0


def _current_rss_mb() -> float:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return 0.0


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
