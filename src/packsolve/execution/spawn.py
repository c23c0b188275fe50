"""Running one external program under an attempt's limits, from a solver child, measured.

The program starts in a session of its own (so a terminal's Ctrl-C reaches only packsolve,
which decides), is killed with its tree if the solver child is told to die, and cannot dump
core. While it runs, its standard output is collected up to a cap, its standard error's start
kept, its standard input fed, and the memory of the whole tree it started read every few
milliseconds (peak: the largest summed resident memory, or one process's own high-water
mark, read from the kernel's record once the program is reaped too). The tree (the program's
process group and every process the solver child adopted, see tree.py) is killed at the
wall-time limit, when its memory passes the limit, when the output passes the cap, and in any
case as soon as the program itself has exited.
"""

from __future__ import annotations

import contextlib
import os
import resource
import selectors
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass

from packsolve.execution import tree
from packsolve.execution.rlimits import peak_rss_mb
from packsolve.execution.spec import Limits

# A program whose standard output passes this is stopped: its answer is an error.
STDOUT_CAP = 64 * 2**20
# The start of standard error kept for messages; the rest is read and dropped.
STDERR_KEEP = 8192
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


@dataclass
class RawRun:
    """How a program ended: exit status, what it printed, its measurements, and which limit stopped it."""

    status: int = 0  # os.wait4 status of the program itself
    stdout: bytes = b""
    stderr: bytes = b""
    wall_s: float = 0.0
    cpu_s: float = 0.0
    peak_rss_mb: float = 0.0
    stopped: str | None = None  # "timeout" | "memout" | "output" when packsolve killed it
    exited: bool = False  # the program exited (or died) on its own
    oom_kills: int = 0  # the kernel's out-of-memory kills on this machine while it ran


def run(
    argv: list[str],
    cwd: str,
    env: dict[str, str],
    stdin: bytes | None,
    limits: Limits,
    leaving: Callable[[], None] | None = None,
) -> RawRun:
    """Run argv under limits and return how it ended; raise OSError if it cannot be started.

    leaving is called should this process be told to die while the program runs (after its tree is killed).
    """
    tree.become_subreaper()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    oom_before = tree.oom_kills()
    started = time.monotonic()
    # No preexec function: it would make subprocess fork this (large) process instead of vfork,
    # some milliseconds per level. The rlimits follow the exec at once (prlimit); dying with this
    # process is the tree guard's job (tree.killed_with_this_process).
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        close_fds=True,
    )
    result = RawRun()
    reaped = tree.Reaped()
    try:
        _limit(proc.pid, limits)
        with tree.killed_with_this_process(proc.pid, leaving):
            _watch(proc, stdin, limits, started, result)
        # The program has exited or is to be stopped: nothing it left behind may outlive the attempt.
        if result.exited:
            tree.reap_children(reaped, block_on=proc.pid)
        tree.kill_tree(proc.pid, reaped)
        result.wall_s = time.monotonic() - started
        _drain(proc, result)
    finally:
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        tree.kill_tree(proc.pid, reaped)  # on any error above too
        proc.returncode = 0  # reaped here, not by subprocess (it must not wait again)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    result.cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    result.peak_rss_mb = max(result.peak_rss_mb, _reaped_peak_mb(reaped.max_rss_kb))
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
    """Set the program's rlimits: no core dump, an address-space backstop, its own CPU backstop."""
    memory = limits.memory_limit_mb
    hard_time = limits.hard_time()
    try:
        resource.prlimit(pid, resource.RLIMIT_CORE, (0, 0))
        _, hard = resource.prlimit(pid, resource.RLIMIT_AS)
        cap = hard if memory is None else (2 * memory + ADDRESS_SPACE_SLACK_MB) * 2**20
        if hard != resource.RLIM_INFINITY:
            cap = min(cap, hard)
        # Not the solver child's own cap, which it inherited: that one counts the child's size.
        resource.prlimit(pid, resource.RLIMIT_AS, (cap, hard))
        _, hard_cpu = resource.prlimit(pid, resource.RLIMIT_CPU)
        cpu = resource.RLIM_INFINITY if hard_time is None else int(hard_time) + 2
        if hard_cpu != resource.RLIM_INFINITY:
            cpu = hard_cpu if cpu == resource.RLIM_INFINITY else min(cpu, hard_cpu)
        resource.prlimit(pid, resource.RLIMIT_CPU, (cpu, hard_cpu))
    except (ProcessLookupError, PermissionError):
        pass  # it has already ended: nothing left to limit


def _watch(
    proc: subprocess.Popen[bytes], stdin: bytes | None, limits: Limits, started: float, out: RawRun
) -> None:
    """Follow the program until it exits or a limit stops it; fill out's output, peak and stopped."""
    watch = _Watch(proc, stdin, limits, started, out)
    try:
        while True:
            now = time.monotonic()
            out.stopped = watch.limit_passed(now)
            if out.stopped is not None:
                break
            watch.wait(now)
            if len(watch.stdout) > STDOUT_CAP:
                out.stopped = "output"
                break
            if out.exited:
                break
    finally:
        watch.close()


class _Watch:
    """A running program followed on one selector (its exit, its pipes), its tree's memory read at a pace."""

    def __init__(
        self, proc: subprocess.Popen[bytes], stdin: bytes | None, limits: Limits, started: float, out: RawRun
    ) -> None:
        assert proc.stdout is not None and proc.stderr is not None
        self.proc, self.started, self.out = proc, started, out
        self.deadline = None if limits.time_limit is None else started + limits.time_limit
        self.limit_mb = limits.memory_limit_mb
        self.poll_every = POLL_LIMITED_S if self.limit_mb is not None else POLL_FREE_S
        self.next_poll = started  # at once: a short program's memory is read at least once
        self.stdout, self.stderr = bytearray(), bytearray()
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

    def limit_passed(self, now: float) -> str | None:
        """Return "timeout" or "memout" when that limit is passed; read the memory when it is time."""
        if self.deadline is not None and now >= self.deadline:
            return "timeout"
        if now >= self.next_poll:
            out = self.out
            used, one = tree.memory_mb(tree.descendants())
            out.peak_rss_mb = max(out.peak_rss_mb, used, one)
            if self.limit_mb is not None and out.peak_rss_mb > self.limit_mb:
                return "memout"
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
                _read(key.fd, self.stdout if key.data == "out" else self.stderr, key.data, self.sel)

    def close(self) -> None:
        """Close the selector and the pidfd; hand what the program printed to out."""
        self.sel.close()
        if self.pidfd is not None:
            os.close(self.pidfd)
        self.out.stdout, self.out.stderr = bytes(self.stdout), bytes(self.stderr)


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


def _read(fd: int, into: bytearray, tag: str, sel: selectors.BaseSelector) -> None:
    """Read what fd has into into (stderr: only its start is kept); unregister it at end of file."""
    try:
        chunk = os.read(fd, 1 << 16)
    except BlockingIOError:
        return
    if not chunk:
        sel.unregister(fd)
        return
    _keep(into, chunk, tag)


def _keep(into: bytearray, chunk: bytes, tag: str) -> None:
    """Append chunk of standard output (tag "out") whole, of standard error only up to STDERR_KEEP."""
    if tag == "out" or len(into) < STDERR_KEEP:
        into.extend(chunk if tag == "out" else chunk[: STDERR_KEEP - len(into)])


def _drain(proc: subprocess.Popen[bytes], out: RawRun) -> None:
    """Read what the program left in its pipes (its tree is dead, so end of file comes)."""
    stdout, stderr = bytearray(out.stdout), bytearray(out.stderr)
    deadline = time.monotonic() + DRAIN_S
    for stream, into, tag in ((proc.stdout, stdout, "out"), (proc.stderr, stderr, "err")):
        if stream is None:
            continue
        fd = stream.fileno()
        while time.monotonic() < deadline and len(stdout) <= STDOUT_CAP:
            try:
                chunk = os.read(fd, 1 << 16)
            except BlockingIOError:
                time.sleep(0.001)
                continue
            if not chunk:
                break
            _keep(into, chunk, tag)
    out.stdout, out.stderr = bytes(stdout), bytes(stderr)
    if len(out.stdout) > STDOUT_CAP and out.stopped is None:
        out.stopped = "output"
