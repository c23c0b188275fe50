"""Solver child processes as the parent holds them: forking one, the kept one and hand-over to it.

A solver child is kept after its batch for the next one (forking a process the size of a
worker costs more than a tiny attempt): one per process, used by one batch at a time.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from packsolve.execution import cgroups, programs, tree, wire
from packsolve.execution.child import serve
from packsolve.execution.spec import Job
from packsolve.outcome import SearchStats


@dataclass
class Child:
    """A forked solver child: its pid, the pipes to it and from it, and the usage its jobs reported."""

    pid: int
    to_child: int  # -1: the child got its jobs at fork and leaves after them
    from_child: int
    reported: SearchStats = field(default_factory=SearchStats)  # summed over its jobs

    def close(self) -> None:
        """Close the parent's ends of the pipes (the child sees end of file and leaves if idle)."""
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
        cgroups.remove_groups_of(self.pid)  # its standing group, which it had no time to remove
        self.close()


# The idle child kept for this process's next batch, and who may use it: one batch at a time.
_kept: Child | None = None
_kept_lock = threading.Lock()


@contextlib.contextmanager
def kept_child_turn() -> Iterator[bool]:
    """Yield whether this batch may use the kept child (and leave its own child kept): one at a time."""
    own = _kept_lock.acquire(blocking=False)
    try:
        yield own
    finally:
        if own:
            _kept_lock.release()


def hand_over(jobs: Sequence[Job]) -> Child | None:
    """Send jobs to the kept child and return it; None if there is none or it cannot take them."""
    global _kept
    child, _kept = _kept, None
    if child is None:
        return None
    try:
        wire.send_batch(child.to_child, jobs)
    except Exception:  # a job that cannot travel (a closure, say), or the child died while idle
        child.discard()
        return None
    return child


def forget_kept_child() -> None:
    """End the kept child, so the next batch forks afresh from this process as it is now: after this
    process set up what a job reads from its memory that a child forked earlier lacks (a split level's
    shared bound, splitting.share_bounds)."""
    global _kept
    with _kept_lock:
        child, _kept = _kept, None
    if child is not None:
        child.discard()


def keep_for_next_batch(child: Child) -> None:
    """Make child, idle after its batch, the kept one (only by the batch whose turn it is)."""
    global _kept
    _kept = child


def fork(jobs: Sequence[Job], keep: bool) -> Child:
    """Fork a child that runs jobs (from its copy of memory); kept ones then wait for more.

    This process becomes a subreaper first: should the child die mid-job (a program it ran
    killed it, say), what that job started is adopted here and ended by clean_up_after.
    """
    tree.become_subreaper()
    cgroups.mode()  # decided here, once: the child inherits the answer (and remove_groups_of relies on it)
    down_r, down_w = os.pipe() if keep else (-1, -1)
    up_r, up_w = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        serve(jobs, down_r, up_w, parent)
    os.close(up_w)
    if keep:
        os.close(down_r)
    return Child(pid, down_w, up_r)


def clean_up_after(pid: int, job_began: float) -> None:
    """After solver child pid ended mid-job (begun at job_began, monotonic): end and remove what it left.

    The processes its job started were adopted by this process (see fork); its level
    directories are named by its pid.
    """
    tree.kill_adopted(tree.boot_ticks(job_began) - 1)
    cgroups.remove_groups_of(pid)
    programs.remove_level_dirs(pid)


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
