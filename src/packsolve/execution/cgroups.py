"""One cgroup per attempt where the machine allows it: CPU time and peak memory read from the kernel's
accounting of the attempt's whole process tree, its memory limit applied to that tree, the tree killed
through it. Where it does not (not root, no writable hierarchy), callers fall back to rusage and /proc.

Linux cgroup v1 (the cpuacct and memory controllers, each a hierarchy of its own under
/sys/fs/cgroup): a job's group is ``packsolve/<solver child pid>-<n>`` below the cgroup this
process is in, in each of the two hierarchies, so the limits of the cgroup packsolve runs in still
hold over it. A process put in a group stays there with everything it starts (a fork inherits its
cgroup; no setsid or double fork leaves it), so the group's counters are the tree's, live processes
and reaped ones alike: cpuacct.usage counts the CPU its tasks used while in it (nanoseconds), and
memory.max_usage_in_bytes the peak of the memory charged to it since it was made (memory a process
had before it came in stays charged where it was: a solver child's own heap is not counted, as
--memory-limit means memory beyond it).

A kept solver child runs many jobs: it moves into each job's group when the job starts and back to
where it was when it ends, so each group counts one job. Groups are removed once their job ended;
should a child die mid-job, its parent kills what is left in the child's groups and removes them
(remove_groups_of).

cgroup v2 is not used yet: on a machine where only it is available (with the cpu and memory
controllers delegated), measurement falls back to rusage.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

ROOT = "/sys/fs/cgroup"
CONTROLLERS = ("cpuacct", "memory")
BASE = "packsolve"
# How measurement is done, as a run's provenance records it.
CGROUP_V1 = "cgroup-v1"
RUSAGE = "rusage"
# Killing a group's processes is retried until it is empty, at most this long.
KILL_PATIENCE_S = 5.0

_mode: str | None = None
_serial = 0
_current: JobGroup | None = None  # the group of the job this process runs now


def _own_path(controller: str) -> str | None:
    """Return the path of this process's cgroup in controller's v1 hierarchy; None if it has none."""
    try:
        with open("/proc/self/cgroup") as f:
            for line in f:
                _, names, path = line.rstrip("\n").split(":", 2)
                if controller in names.split(","):
                    return path
    except (OSError, ValueError):
        pass
    return None


# Per process (by pid: a fork's child starts where its parent is, outside any job group): the cgroup
# directory it was in when it first asked, in each controller's hierarchy (None: no hierarchy). Read
# once: every job's group is made below it and left back to it, and a job that reads /proc/self/cgroup
# four times costs a tiny attempt a measurable share of its time (docs/benchmarks.md).
_homes: tuple[int, dict[str, str | None]] | None = None


def _home(controller: str) -> str | None:
    """Return this process's own cgroup directory in controller's v1 hierarchy; None if it has none."""
    global _homes
    if _homes is None or _homes[0] != os.getpid():
        _homes = (os.getpid(), {})
    homes = _homes[1]
    if controller not in homes:
        own = _own_path(controller)
        exists = own is not None and os.path.isdir(os.path.join(ROOT, controller))
        homes[controller] = os.path.join(ROOT, controller, own.lstrip("/")) if exists and own else None
    return homes[controller]


def _base(controller: str) -> str | None:
    """Return packsolve's directory below this process's cgroup in controller's hierarchy; None if none."""
    home = _home(controller)
    return None if home is None else os.path.join(home, BASE)


def mode() -> str:
    """Return how this process measures attempts: CGROUP_V1 if it can make and remove groups, else RUSAGE.

    Tried once per process (making and removing a group in each hierarchy); a forked child inherits
    the answer.
    """
    global _mode
    if _mode is None:
        _mode = CGROUP_V1 if _try_a_group() else RUSAGE
        if _mode == CGROUP_V1:
            sweep_stale()
    return _mode


def sweep_stale() -> int:
    """Remove the empty groups of solver children that are gone; return how many.

    A solver child that died mid-job with the process that forked it (a worker killed -9)
    leaves its group behind, empty: the next process to measure here removes it. A group
    whose child's pid is alive (or taken again) is left alone, as is one not empty.
    """
    removed = 0
    for _, entry in _job_groups():
        pid, dash, serial = entry.name.partition("-")
        if not (dash and pid.isdigit() and serial.isdigit()) or os.path.exists(f"/proc/{pid}"):
            continue
        with contextlib.suppress(OSError):
            os.rmdir(entry.path)
            removed += 1
    return removed


def _job_groups() -> Iterator[tuple[str, os.DirEntry[str]]]:
    """Yield (controller, entry) for each group under this process's packsolve groups, by controller."""
    for controller in CONTROLLERS:
        base = _base(controller)
        if base is None:
            continue
        with contextlib.suppress(OSError), os.scandir(base) as entries:
            yield from ((controller, entry) for entry in entries)


def _try_a_group() -> bool:
    """Return whether a group can be made, joined and removed in every controller's hierarchy."""
    if os.environ.get("PACKSOLVE_NO_CGROUPS"):
        return False
    try:
        group = JobGroup.make(f"probe-{os.getpid()}")
    except OSError:
        return False
    try:
        group.enter()
        group.leave()
        return True
    except OSError:
        return False
    finally:
        group.remove()


@dataclass
class JobGroup:
    """One job's cgroup: a directory in each controller's hierarchy, and the groups its joiner came from."""

    paths: dict[str, str]
    came_from: dict[str, str]  # controller: the group this process left to join (to go back to)
    _limit_mb: float | None = None

    @classmethod
    def make(cls, name: str, memory_limit_mb: float | None = None) -> JobGroup:
        """Make the group name in every hierarchy (OSError if one cannot be made), with the memory limit."""
        paths: dict[str, str] = {}
        try:
            for controller in CONTROLLERS:
                base = _base(controller)
                if base is None:
                    raise OSError(f"no cgroup v1 hierarchy for {controller}")
                path = os.path.join(base, name)
                try:
                    os.mkdir(path)
                except FileNotFoundError:  # the first group below this cgroup: make packsolve's directory
                    os.makedirs(base, exist_ok=True)
                    os.mkdir(path)
                paths[controller] = path
            group = cls(paths, {})
            if memory_limit_mb is not None:
                group.limit_memory(memory_limit_mb)
            return group
        except OSError:
            for path in paths.values():
                with contextlib.suppress(OSError):
                    os.rmdir(path)
            raise

    def limit_memory(self, mb: float) -> None:
        """Hold the memory charged to the group to mb (the kernel kills one of its processes past it);
        raise OSError if the kernel refuses (more is charged already than it can reclaim)."""
        cap = str(int(mb * 2**20))
        # Raised: memsw first (it may not be below the memory limit); lowered: the memory limit first.
        # Swap is counted too where the kernel accounts it, else the limit could be dodged by swapping.
        order = ("memory.limit_in_bytes", "memory.memsw.limit_in_bytes")
        for name in order if self._limit_mb is None or mb < self._limit_mb else reversed(order):
            try:
                self._write("memory", name, cap)
            except OSError:
                if name == "memory.limit_in_bytes":
                    raise
        self._limit_mb = mb

    def _write(self, controller: str, name: str, value: str) -> None:
        with open(os.path.join(self.paths[controller], name), "w") as f:
            f.write(value)

    def _read(self, controller: str, name: str) -> str:
        with open(os.path.join(self.paths[controller], name)) as f:
            return f.read()

    def enter(self) -> None:
        """Move this process into the group (what it starts from now on is in it too)."""
        for controller, path in self.paths.items():
            home = _home(controller)
            if home is not None:
                self.came_from.setdefault(controller, home)
            with open(os.path.join(path, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))

    def leave(self) -> None:
        """Move this process back to the groups it came from (what it started stays in this one)."""
        for back in self.came_from.values():
            with contextlib.suppress(OSError), open(os.path.join(back, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))

    def cpu_s(self) -> float:
        """Return the CPU seconds the group's processes used while in it (user + system); 0 if unreadable."""
        try:
            return int(self._read("cpuacct", "cpuacct.usage")) / 1e9
        except (OSError, ValueError):
            return 0.0

    def peak_mb(self) -> float:
        """Return the peak memory charged to the group since it was made, in MB; 0.0 if unreadable."""
        try:
            return int(self._read("memory", "memory.max_usage_in_bytes")) / 2**20
        except (OSError, ValueError):
            return 0.0

    def oom_kills(self) -> int:
        """Return how many of the group's processes the kernel killed at its memory limit (0 if unknown)."""
        try:
            for line in self._read("memory", "memory.oom_control").splitlines():
                if line.startswith("oom_kill "):
                    return int(line.split()[1])
        except (OSError, ValueError, IndexError):
            pass
        return 0

    def pids(self) -> list[int]:
        """Return the processes in the group (in any of its hierarchies), this one left out."""
        found: set[int] = set()
        for path in self.paths.values():
            with contextlib.suppress(OSError, ValueError), open(os.path.join(path, "cgroup.procs")) as f:
                found.update(int(p) for p in f.read().split())
        found.discard(os.getpid())
        return sorted(found)

    def kill(self) -> None:
        """SIGKILL every process in the group but this one, until none is left (at most KILL_PATIENCE_S)."""
        _kill_all(self.pids, KILL_PATIENCE_S)

    def remove(self) -> None:
        """Leave the group, kill what is left in it and remove it (one still busy after a second is left)."""
        self.leave()
        self.kill()
        for path in self.paths.values():
            _rmdir(path)


def _kill_all(pids: Callable[[], list[int]], patience_s: float) -> None:
    """SIGKILL what pids() returns until it returns nothing or patience_s has passed."""
    deadline = time.monotonic() + patience_s
    while True:
        left = pids()
        if not left or time.monotonic() > deadline:
            return
        for p in left:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(p, signal.SIGKILL)
        time.sleep(0.001)


def _rmdir(path: str) -> None:
    """Remove an empty group directory; a process being killed may hold it a moment longer."""
    deadline = time.monotonic() + 1.0
    while True:
        try:
            os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() > deadline:
                return
            time.sleep(0.005)


@contextlib.contextmanager
def job_group(memory_limit_mb: float | None = None) -> Iterator[JobGroup | None]:
    """In a solver child: yield the job's group, this process in it (None where cgroups are not used).

    memory_limit_mb is the group's memory limit (None: none); a caller may change it (limit_memory).

    The group is named by this process and a serial number (remove_groups_of finds it should this
    process die); on the way out this process leaves it, and what is left in it is killed and removed.
    """
    global _serial, _current
    if mode() != CGROUP_V1:
        yield None
        return
    _serial += 1
    try:
        group = JobGroup.make(f"{os.getpid()}-{_serial}", memory_limit_mb)
    except OSError:
        yield None
        return
    try:
        group.enter()
        _current = group
        yield group
    finally:
        _current = None
        group.remove()


def current() -> JobGroup | None:
    """Return the group of the job this process is running (None outside one, or without cgroups)."""
    return _current


def remove_groups_of(pid: int) -> None:
    """Kill what is left in the groups of solver child pid (it died mid-job) and remove them."""
    if _mode != CGROUP_V1:  # this process never made a group: neither did its children
        return
    for controller, entry in _job_groups():
        if entry.name.startswith(f"{pid}-") and entry.is_dir(follow_symlinks=False):
            with contextlib.suppress(OSError):
                JobGroup({controller: entry.path}, {}).kill()
                _rmdir(entry.path)
