"""Running one external program under an attempt's limits, from a solver child, measured.

The program starts in a session of its own (so a terminal's Ctrl-C reaches only packsolve,
which decides), is killed with its tree if the solver child is told to die, and cannot dump
core. While it runs, its standard output is collected up to a cap, its standard error read to
its end keeping only its head and tail (output.Kept: memory bounded whatever it writes), its
standard input fed, and the memory of the whole tree it started read every few
milliseconds (peak: the largest summed resident memory, or one process's own high-water
mark, read from the kernel's record once the program is reaped too). The tree (the program's
process group and every process the solver child adopted, see tree.py) is killed at the
wall-time limit, when the CPU time of the whole tree passes the CPU limit (read at the memory's
pace: the live processes' CPU with what they reaped, from /proc, and what the solver child reaped
of the orphans it adopted, from its rusage), when its memory passes the limit, when the output
passes the cap, and in any case as soon as the program itself has exited.
"""

from __future__ import annotations

import contextlib
import math
import os
import resource
import selectors
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from enum import StrEnum

from packsolve.execution import cgroups, tree
from packsolve.execution.output import DEFAULT_OUTPUT_KEEP, Kept
from packsolve.execution.rlimits import cpu_backstop_s, peak_rss_mb, usage
from packsolve.execution.spec import Limits
from packsolve.outcome import SearchStats

# A program whose standard output passes this is stopped: its answer is an error.
STDOUT_CAP = 64 * 2**20
# Bytes asked of a pipe at a time.
READ_BYTES = 1 << 16
# How often the tree's memory is summed: often under a memory limit, else for the peak only.
POLL_LIMITED_S = 0.01
POLL_FREE_S = 0.025
POLL_YOUNG_S = 0.002
YOUNG_S = 0.05
# Each process's address space is capped at twice the memory limit plus this much: a backstop
# should the measurement lag behind a fast allocation (the limit itself is on resident memory).
ADDRESS_SPACE_SLACK_MB = 1024
# Without a pidfd (kernels before 5.3, some seccomp filters) the program's exit is looked for this often.
NO_PIDFD_WAIT_S = 0.002
# After the program has exited and its tree is killed, what is left in the pipes is read this long.
DRAIN_S = 1.0


class Kill(StrEnum):
    """Which limit made packsolve kill a program (its answer is then the status of that name, or error)."""

    TIMEOUT = "timeout"  # its wall time passed the wall limit (or the CPU limit's wall backstop)
    CPU = "cpu"  # its tree's CPU time passed the CPU limit
    MEMOUT = "memout"
    OUTPUT = "output"  # its standard output passed STDOUT_CAP


@dataclass(frozen=True)
class Command:
    """What to run: the argv, its directory and environment, its standard input (None: empty), and how
    many bytes of its output an attempt keeps (output.kept_texts)."""

    argv: list[str]
    cwd: str
    env: dict[str, str]
    stdin: bytes | None = None
    keep: int = DEFAULT_OUTPUT_KEEP


@dataclass
class RawRun:
    """How a program ended: exit status, what it printed, its measurements, and which limit stopped it."""

    status: int = 0  # os.wait4 status of the program itself
    stdout: bytes = b""
    stderr: Kept = field(default_factory=lambda: Kept.capped(DEFAULT_OUTPUT_KEEP))  # its head and tail
    stats: SearchStats = field(
        default_factory=SearchStats
    )  # of the program and its reaped processes; nodes 0
    stopped: Kill | None = None  # which limit, when packsolve killed it
    exited: bool = False  # the program exited (or died) on its own
    oom_kills: int = 0  # the kernel's out-of-memory kills on this machine while it ran
    group_oom_kills: int = 0  # those at the memory limit of the job's cgroup (cgroups.py), if it had one


def run(command: Command, limits: Limits, leaving: Callable[[], None] | None = None) -> RawRun:
    """Run the command under limits and return how it ended; raise OSError if it cannot be started.

    leaving is called should this process be told to die while the program runs (after its tree is killed).
    """
    tree.become_subreaper()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    oom_before = tree.oom_kills()
    # In a job's cgroup, the program starts in it and this process leaves it: the group is the program's tree.
    group = cgroups.current()
    if group is not None:
        with contextlib.suppress(OSError):  # without it, the watch reads and holds the memory
            group.with_memory()  # the program's tree's memory is counted (and held) in the group
    cpu_before = 0.0 if group is None else group.cpu_s()
    held = False  # whether the group holds the program's tree to the memory limit
    if group is not None and limits.memory_limit_mb is not None:
        try:
            group.limit_memory(limits.memory_limit_mb)  # the program's tree's limit, exactly
            held = True
        except OSError:
            pass  # the watch holds it, as without cgroups
    started = time.monotonic()
    # No preexec function: it would make subprocess fork this (large) process instead of vfork,
    # some milliseconds per level. The rlimits follow the exec at once (prlimit); dying with this
    # process is the tree guard's job (tree.killed_with_this_process).
    stdin = command.stdin
    proc = subprocess.Popen(
        command.argv,
        cwd=command.cwd,
        env=command.env,
        stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        close_fds=True,
    )
    if group is not None:
        group.leave()
    result = RawRun(stderr=Kept.capped(command.keep))
    reaped = tree.Reaped()
    meter = _Meter(before, group, cpu_before, held)
    try:
        _limit(proc.pid, limits)
        with tree.killed_with_this_process(proc.pid, leaving):
            _Watch(proc, stdin, limits, started, result, meter).run()
        # The program has exited or is to be stopped: nothing it left behind may outlive the attempt.
        if result.exited:
            tree.reap_children(reaped, block_on=proc.pid)
        tree.kill_tree(proc.pid, reaped)
        wall_s = time.monotonic() - started
        _drain(proc, result)
    finally:
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        if group is not None:
            group.kill()  # whatever the tree started, wherever it went
        tree.kill_tree(proc.pid, reaped)  # on any error above too
        proc.returncode = 0  # reaped here, not by subprocess (it must not wait again)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    result.stats = usage(
        before, after, wall_s, max(result.stats.peak_rss_mb, _reaped_peak_mb(reaped.max_rss_kb))
    )
    if group is not None:  # the kernel's account of the whole tree: every process, however it ended
        # Memory charged to the group, pages shared by its processes once (summed RSS counts them each time).
        peak = group.peak_mb() or result.stats.peak_rss_mb
        result.stats = replace(result.stats, cpu_s=meter.cpu_s([]), peak_rss_mb=peak)
        result.group_oom_kills = group.oom_kills()
    result.status = reaped.status.get(proc.pid, 0)
    result.oom_kills = tree.oom_kills() - oom_before
    return result


def _reaped_peak_mb(reaped_kb: int) -> float:
    """Return the peak resident memory the kernel recorded for the program once reaped, in MB; 0 if unknown.

    Sampling misses a peak reached between two readings, just before the program exits (on a
    busy machine, most of a short program's peak). The kernel's record of each reaped process
    (os.wait4's ru_maxrss) does not, but under vfork it starts from this process's own
    high-water mark: it speaks for the program only when it grew past that.
    """
    own_kb = peak_rss_mb(resource.getrusage(resource.RUSAGE_SELF)) * 1024
    return reaped_kb / 1024.0 if reaped_kb > own_kb else 0.0


def _limit(pid: int, limits: Limits) -> None:
    """Set the program's rlimits: no core dump, an address-space backstop, its own CPU backstop.

    Each process started inherits the CPU backstop as its own: the limit of the tree as a whole
    is kept by the watch (_Watch.limit_passed), this only if the watch itself were stalled.
    """
    memory = limits.memory_limit_mb
    allowed = cpu_backstop_s(limits)
    try:
        resource.prlimit(pid, resource.RLIMIT_CORE, (0, 0))
        _, hard = resource.prlimit(pid, resource.RLIMIT_AS)
        cap = hard if memory is None else (2 * memory + ADDRESS_SPACE_SLACK_MB) * 2**20
        if hard != resource.RLIM_INFINITY:
            cap = min(cap, hard)
        # Not the solver child's own cap, which it inherited: that one counts the child's size.
        resource.prlimit(pid, resource.RLIMIT_AS, (cap, hard))
        _, hard_cpu = resource.prlimit(pid, resource.RLIMIT_CPU)
        cpu = resource.RLIM_INFINITY if allowed is None else math.ceil(allowed) + 1
        if hard_cpu != resource.RLIM_INFINITY:
            cpu = hard_cpu if cpu == resource.RLIM_INFINITY else min(cpu, hard_cpu)
        resource.prlimit(pid, resource.RLIMIT_CPU, (cpu, hard_cpu))
    except (ProcessLookupError, PermissionError):
        pass  # it has already ended: nothing left to limit


@dataclass(frozen=True)
class _Meter:
    """Reads the CPU time of a program's tree so far: from its job's cgroup, else from /proc and rusage."""

    reaped_before: resource.struct_rusage  # this process's RUSAGE_CHILDREN when the program started
    group: cgroups.JobGroup | None
    group_before: float  # the group's CPU when the program started (this process's, before it left)
    holds_memory: bool = False  # the group holds the tree to the memory limit (else the watch does)

    def cpu_s(self, pids: list[int]) -> float:
        """Return the tree's CPU seconds; pids are its live processes (read only without a cgroup)."""
        if self.group is not None:
            return self.group.cpu_s() - self.group_before
        reaped = usage(self.reaped_before, resource.getrusage(resource.RUSAGE_CHILDREN), 0.0, 0.0).cpu_s
        return reaped + tree.cpu_s(pids)


class _Watch:
    """A running program followed on one selector (its exit, its pipes), its tree's memory read at a pace."""

    def __init__(
        self,
        proc: subprocess.Popen[bytes],
        stdin: bytes | None,
        limits: Limits,
        started: float,
        out: RawRun,
        meter: _Meter,
    ) -> None:
        assert proc.stdout is not None and proc.stderr is not None
        self.proc, self.started, self.out = proc, started, out
        wall = limits.wall_limit()
        self.deadline = None if wall is None else started + wall
        self.limit_mb = limits.memory_limit_mb
        self.cpu_limit = limits.cpu_limit
        self.meter = meter
        # In a cgroup the kernel holds the memory limit over the whole tree; otherwise the watch does.
        self.kill_at_mb = None if meter.holds_memory else self.limit_mb
        limited = self.limit_mb is not None or self.cpu_limit is not None
        self.poll_every = POLL_LIMITED_S if limited else POLL_FREE_S
        self.next_poll = started  # at once: a short program's memory is read at least once
        self.stdout = bytearray()
        self.pending = memoryview(stdin or b"")
        self.sel = selectors.DefaultSelector()
        self.pidfd = _pidfd(proc.pid)
        if self.pidfd is not None:
            self.sel.register(self.pidfd, selectors.EVENT_READ, "exit")
        for stream, tag in ((proc.stdout, "out"), (proc.stderr, "err")):
            os.set_blocking(stream.fileno(), False)
            self.sel.register(stream.fileno(), selectors.EVENT_READ, tag)
        if proc.stdin is not None:
            os.set_blocking(proc.stdin.fileno(), False)
            self.sel.register(proc.stdin.fileno(), selectors.EVENT_WRITE, "in")

    def run(self) -> None:
        """Follow the program until it exits or a limit stops it; fill out's output, peak and stopped."""
        out = self.out
        try:
            while True:
                now = time.monotonic()
                out.stopped = self.limit_passed(now)
                if out.stopped is not None:
                    break
                self.wait(now)
                if len(self.stdout) > STDOUT_CAP:
                    out.stopped = Kill.OUTPUT
                    break
                if out.exited:
                    break
        finally:
            self.close()

    def limit_passed(self, now: float) -> Kill | None:
        """Return TIMEOUT or MEMOUT when that limit is passed; read the memory when it is time."""
        if self.deadline is not None and now >= self.deadline:
            return Kill.TIMEOUT
        if now >= self.next_poll:
            out = self.out
            pids = tree.descendants()
            used, one = tree.memory_mb(pids)
            out.stats = replace(out.stats, peak_rss_mb=max(out.stats.peak_rss_mb, used, one))
            if self.kill_at_mb is not None and out.stats.peak_rss_mb > self.kill_at_mb:
                return Kill.MEMOUT
            if self.meter.holds_memory and self.meter.group is not None and self.meter.group.oom_kills():
                return Kill.MEMOUT  # the kernel killed one of the tree at the group's limit: stop the rest
            if self.cpu_limit is not None:
                out.stats = replace(out.stats, cpu_s=self.meter.cpu_s(pids))
                if out.stats.cpu_s >= self.cpu_limit:
                    return Kill.CPU
            # Often while the program is young (most are short), then at the steady pace.
            self.next_poll = now + (POLL_YOUNG_S if now - self.started < YOUNG_S else self.poll_every)
        return None

    def wait(self, now: float) -> None:
        """Wait for the program's exit or pipes until the next reading or the deadline; serve what comes."""
        wait = self.next_poll - now if self.deadline is None else min(self.next_poll, self.deadline) - now
        if self.pidfd is None:  # no exit notification: look every few milliseconds
            wait = min(wait, NO_PIDFD_WAIT_S)
            self.out.exited = self.out.exited or _has_exited(self.proc.pid)
        for key, _ in self.sel.select(max(0.0, wait)):
            if key.data == "exit":
                self.out.exited = True
            elif key.data == "in":
                self.pending = _feed(self.proc, self.sel, self.pending)
            else:
                _read(key.fd, self.stdout if key.data == "out" else self.out.stderr, self.sel)

    def close(self) -> None:
        """Close the selector and the pidfd; hand what the program printed on standard output to out."""
        self.sel.close()
        if self.pidfd is not None:
            os.close(self.pidfd)
        self.out.stdout = bytes(self.stdout)


def _pidfd(pid: int) -> int | None:
    """Return a descriptor readable once pid exits; None where the kernel (or a seccomp filter) refuses."""
    try:
        return os.pidfd_open(pid)
    except (OSError, AttributeError):
        return None


def _has_exited(pid: int) -> bool:
    """Return whether pid has ended, without reaping it (its status stays for tree.reap_children)."""
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return info is not None


def _feed(proc: subprocess.Popen[bytes], sel: selectors.BaseSelector, pending: memoryview) -> memoryview:
    """Write what the pipe takes of pending to the program's stdin; close it when done or refused."""
    assert proc.stdin is not None
    try:
        if pending:
            pending = pending[os.write(proc.stdin.fileno(), pending) :]
    except BlockingIOError:
        return pending
    except OSError:  # the program closed its standard input (or exited): it does not want the rest
        pending = pending[len(pending) :]
    if not pending:
        sel.unregister(proc.stdin.fileno())
        with contextlib.suppress(OSError):
            proc.stdin.close()
    return pending


def _read(fd: int, into: bytearray | Kept, sel: selectors.BaseSelector) -> None:
    """Read what fd has into into (stdout whole, stderr's head and tail); unregister it at end of file."""
    try:
        chunk = os.read(fd, READ_BYTES)
    except BlockingIOError:
        return
    if not chunk:
        sel.unregister(fd)
        return
    _keep(into, chunk)


def _keep(into: bytearray | Kept, chunk: bytes) -> None:
    """Append chunk to standard output (a bytearray), or to standard error's head and tail (a Kept)."""
    if isinstance(into, Kept):
        into.add(chunk)
    else:
        into.extend(chunk)


def _drain(proc: subprocess.Popen[bytes], out: RawRun) -> None:
    """Read what the program left in its pipes (its tree is dead, so end of file comes)."""
    stdout = bytearray(out.stdout)
    deadline = time.monotonic() + DRAIN_S
    into: bytearray | Kept
    for stream, into in ((proc.stdout, stdout), (proc.stderr, out.stderr)):
        if stream is None:
            continue
        fd = stream.fileno()
        while time.monotonic() < deadline and len(stdout) <= STDOUT_CAP:
            try:
                chunk = os.read(fd, READ_BYTES)
            except BlockingIOError:
                time.sleep(0.001)
                continue
            if not chunk:
                break
            _keep(into, chunk)
    out.stdout = bytes(stdout)
    if len(out.stdout) > STDOUT_CAP and out.stopped is None:
        out.stopped = Kill.OUTPUT
