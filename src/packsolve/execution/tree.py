"""The processes a solver child started, as a tree: adopt orphans, list them, measure them, kill them all.

A solver child that runs an external program makes itself a child subreaper
(``prctl(PR_SET_CHILD_SUBREAPER)``): a process the program starts and leaves behind, even one
that left its process group with ``setsid``, is re-parented to the solver child instead of
init, so it stays in the tree and is found, measured and killed with the rest. Linux only
(/proc); elsewhere the program's own process group is all that can be reached.

Why /proc is read here and not through psutil: psutil measures none of three things this module
needs (a process's VmHWM, the high-water mark counted from its exec; a child's session; the
kernel's oom_kill count), and the one it does, a process's children, it finds by reading the
stat file of every process on the machine: about 7 ms a call on a machine of 160 processes,
against 0.3 ms for /proc/PID/task/*/children, which names them directly. The supervisor lists
the tree at every memory poll and on every round of a kill, so the difference is on the
attempt's clock.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
# Killing a tree is retried until no process is left, at most this long (a process stuck in
# the kernel dies when it leaves it); what survives longer is left to the kernel.
KILL_PATIENCE_S = 5.0

_subreaper = False


def _prctl(option: int, value: int) -> bool:
    """Call prctl(option, value); return False where it is not available or fails."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(option, value, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def become_subreaper() -> bool:
    """Make this process adopt its orphaned descendants (once); return whether it is one."""
    global _subreaper
    if not _subreaper:
        _subreaper = _prctl(PR_SET_CHILD_SUBREAPER, 1)
    return _subreaper


def _not_yet_subreaper() -> None:
    """In a forked child: the kernel does not pass the subreaper mark on, so neither may this flag."""
    global _subreaper
    _subreaper = False


os.register_at_fork(after_in_child=_not_yet_subreaper)


def boot_ticks(monotonic_s: float) -> int:
    """Return the moment monotonic_s (a time.monotonic()) in clock ticks since boot, as /proc dates them."""
    since_boot = time.clock_gettime(time.CLOCK_BOOTTIME) - (time.monotonic() - monotonic_s)
    return int(since_boot * os.sysconf("SC_CLK_TCK"))


def kill_adopted(since: int) -> list[int]:
    """SIGKILL and reap the orphans this subreaper adopted that started at or after since (boot ticks).

    An orphan is a child of this process in another session: a solver child stays in this
    process's session, a program starts a session of its own, and no process can move into
    another session. Only those started since the dead solver child's job began are taken,
    so no earlier child of this process (a server a test started, say) is touched. Return
    the pids killed; what their descendants leave behind is adopted and killed on the next round.
    """
    session = os.getsid(0)
    killed: list[int] = []
    deadline = time.monotonic() + KILL_PATIENCE_S
    while time.monotonic() < deadline:
        orphans = [p for p in children(os.getpid()) if _orphan_since(p, session, since)]
        if not orphans:
            break
        for p in orphans:
            for q in (p, *descendants(p)):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(q, signal.SIGKILL)
        for p in orphans:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(p, 0)
        killed += orphans
    return killed


def _orphan_since(pid: int, session: int, since: int) -> bool:
    """Return whether child pid is in another session than session and started at or after since."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[3]) != session and int(fields[19]) >= since
    except (OSError, ValueError, IndexError):
        return False


@contextlib.contextmanager
def killed_with_this_process(group: int, then: Callable[[], None] | None = None) -> Iterator[None]:
    """While a program runs: if this solver child is told to die, kill the program's tree, then call then.

    A solver child dies with the process that forked it (PR_SET_PDEATHSIG, SIGKILL). While it
    watches a program, the signal is SIGTERM instead, whose handler kills the program's process
    group and every adopted descendant, and calls then (which removes the level's directory),
    before leaving: a worker killed -9 leaves nothing running and nothing behind.
    """
    previous = signal.getsignal(signal.SIGTERM)

    def leave(signum: int, frame: object) -> None:
        kill_tree(group)
        if then is not None:
            then()
        os._exit(1)

    signal.signal(signal.SIGTERM, leave)
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    try:
        yield
    finally:
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        signal.signal(signal.SIGTERM, previous)


def children(pid: int) -> list[int]:
    """Return the pids of pid's children (every thread's), from /proc; [] if they cannot be read."""
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out.extend(int(p) for p in f.read().split())
        except (OSError, ValueError):
            continue
    return out


def descendants(pid: int | None = None) -> list[int]:
    """Return every process below pid (default: this one), parents before their children."""
    found: list[int] = []
    stack = children(os.getpid() if pid is None else pid)
    seen: set[int] = set()
    while stack:
        p = stack.pop()
        if p in seen:
            continue
        seen.add(p)
        found.append(p)
        stack.extend(children(p))
    return found


def memory_mb(pids: Iterable[int]) -> tuple[float, float]:
    """Return (summed resident memory, largest high-water mark of one process) of pids, in MB.

    The high-water mark (VmHWM) counts from the program's exec: the size of the solver child
    it was forked from does not leak into it, as it does into wait4's ru_maxrss. A process
    that has just ended counts 0.
    """
    total = peak = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        peak = max(peak, int(line.split()[1]))
                    elif line.startswith("VmRSS:"):
                        total += int(line.split()[1])
                        break
        except (OSError, ValueError, IndexError):
            continue
    return total / 1024.0, peak / 1024.0


def cpu_s(pids: Iterable[int]) -> float:
    """Return the CPU seconds pids used, each with the children it reaped (user + system, /proc ticks).

    A process's own CPU and its reaped children's (utime, stime, cutime, cstime): what its
    subtree spent, except processes still alive below it, which are in pids themselves, and
    orphans this process adopted and reaped, which its caller reads from RUSAGE_CHILDREN. A
    process that has just ended counts 0.
    """
    ticks = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            ticks += sum(int(v) for v in fields[11:15])  # utime stime cutime cstime (fields 14-17)
        except (OSError, ValueError, IndexError):
            continue
    return ticks / os.sysconf("SC_CLK_TCK")


def oom_kills() -> int:
    """Return how many processes the kernel's out-of-memory killer has killed since boot (0 if unknown)."""
    try:
        with open("/proc/vmstat") as f:
            for line in f:
                if line.startswith("oom_kill "):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


@dataclass
class Reaped:
    """What the processes reaped while ending one program left: their wait status by pid, their peak.

    max_rss_kb is the largest ru_maxrss os.wait4 reported for one of them: that process's own
    high-water mark (and its reaped descendants'), not the running maximum over every child this
    process ever had that RUSAGE_CHILDREN keeps.
    """

    status: dict[int, int] = field(default_factory=dict)
    max_rss_kb: int = 0

    def add(self, pid: int, status: int, usage: object) -> None:
        """Record one reaped process."""
        self.status[pid] = status
        self.max_rss_kb = max(self.max_rss_kb, int(getattr(usage, "ru_maxrss", 0)))


def kill_tree(group: int | None, reap: Reaped | None = None) -> None:
    """SIGKILL the process group and every descendant of this process, and reap them all.

    reap collects what every process reaped here left (see Reaped). Retried until no
    child is left (a process forking while it is killed leaves a child that is adopted and
    found on the next round), at most KILL_PATIENCE_S.
    """
    reap = Reaped() if reap is None else reap
    if group is not None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, signal.SIGKILL)
    deadline = time.monotonic() + KILL_PATIENCE_S
    while True:
        for p in descendants():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(p, signal.SIGKILL)
        if not reap_children(reap) and not descendants():
            return
        if time.monotonic() > deadline:
            return
        time.sleep(0.001)


def reap_children(reap: Reaped, block_on: int | None = None) -> bool:
    """Reap every child that has ended (waiting for block_on first); return whether any child is left."""
    if block_on is not None:
        with contextlib.suppress(ChildProcessError):
            reap.add(*os.wait4(block_on, 0))
    while True:
        try:
            pid, status, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            return False
        if pid == 0:
            return True
        reap.add(pid, status, usage)
