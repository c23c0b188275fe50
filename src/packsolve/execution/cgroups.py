"""One cgroup per attempt where the machine allows it: CPU time and peak memory read from the kernel's
accounting of the attempt's whole process tree, its memory limit applied to that tree, the tree killed
through it. Where it does not (not root, no writable hierarchy), callers fall back to rusage and /proc.

Linux cgroup v1 (the cpuacct and memory controllers, each a hierarchy of its own under
/sys/fs/cgroup): a job's group is ``packsolve/<solver child pid>-<n>`` below the cgroup this
process is in, in each of the two hierarchies, so the limits of the cgroup packsolve runs in still
hold over it. (The memory one only for a job with a memory limit, or once it starts a program: a
built-in solver's peak is its own high-water mark, and the memory group is most of a group's cost.)
A process put in a group stays there with everything it starts (a fork inherits its cgroup; no
setsid or double fork leaves it), so the group's counters are the tree's, live processes and reaped
ones alike: cpuacct.usage counts the CPU its tasks used while in it (nanoseconds), and
memory.max_usage_in_bytes the peak of the memory charged to it since it was made (memory a process
had before it came in stays charged where it was: a solver child's own heap is not counted, as
--memory-limit means memory beyond it).

A kept solver child runs many jobs. A job with a memory limit gets a group of its own, which the
child moves into when the job starts and out of when it ends. On v1 the jobs without one share the
child's standing group (cpuacct alone): the child stays in it from job to job, a job's CPU is what the
group counted since the job began, and what a job leaves in it is killed as the job ends — the same
figures without making, joining, leaving and removing a group per job, which cost attempts of a
millisecond a fifth of a worker's throughput (docs/benchmarks.md). A job that starts a program gives
it a memory directory of its own (with_memory), removed as the job ends. A job's own group is
removed once the job ended, a standing group when its child leaves; should a child die, its parent
kills what is left in the child's groups and removes them (remove_groups_of), and groups left empty
by children that are gone are removed by the next process to measure (sweep_stale).

Linux cgroup v2 (one unified hierarchy, where /proc/self/mountinfo finds it: /sys/fs/cgroup on a
v2-only machine, /sys/fs/cgroup/unified on a hybrid one): the same layout in that one hierarchy. CPU
time is cpu.stat's usage_usec, which the kernel keeps for every group; the memory limit (memory.max,
and memory.swap.max 0 so swapping cannot dodge it), the peak (memory.peak) and the out-of-memory
kills (memory.events) need the memory controller enabled for packsolve's directory, which is tried
and may be refused (a non-root cgroup with processes in it cannot hand controllers down): without it
the memory is read from /proc and the watch holds the limit, as without cgroups. The tree is killed
through cgroup.kill where the kernel has it.

Which is used: the cgroups setting (given to choose(); in a process that read no settings,
PACKSOLVE_CGROUPS) says v1 or v2 for one, off for neither (as PACKSOLVE_NO_CGROUPS=1 does); auto, the
default, takes v1 where it works (as on hybrid machines, whose v2 hierarchy usually has no
controllers), else v2. What was used is recorded as the run's measurement: cgroup-v1, cgroup-v2 or
rusage.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

ROOT = "/sys/fs/cgroup"
CONTROLLERS = ("cpuacct", "memory")  # v1: a hierarchy each
UNIFIED = "unified"  # v2: the one hierarchy, named so in a group's paths
BASE = "packsolve"
# How measurement is done, as a run's provenance records it.
CGROUP_V1 = "cgroup-v1"
CGROUP_V2 = "cgroup-v2"
RUSAGE = "rusage"
HIERARCHIES = {CGROUP_V1: CONTROLLERS, CGROUP_V2: (UNIFIED,)}
# The cgroups setting (checked where settings are read): the versions to try.
ASKED = {"v1": (CGROUP_V1,), "v2": (CGROUP_V2,), "off": (), "auto": (CGROUP_V1, CGROUP_V2)}
# Killing a group's processes is retried until it is empty, at most this long.
KILL_PATIENCE_S = 5.0

_mode: str | None = None
_standing: JobGroup | None = None  # v1: this process's group for its jobs without a memory limit
_asked: str | None = None  # the cgroups setting, as choose() was told (None: PACKSOLVE_CGROUPS, else auto)
_serial = 0
_current: JobGroup | None = None  # the group of the job this process runs now


def _own_path(controller: str) -> str | None:
    """Return the path of this process's cgroup in controller's v1 hierarchy (UNIFIED: in the v2
    hierarchy, the line "0::PATH"); None if it has none."""
    try:
        with open("/proc/self/cgroup") as f:
            for line in f:
                number, names, path = line.rstrip("\n").split(":", 2)
                if controller == UNIFIED and number == "0" and not names:
                    return path
                if controller in names.split(","):
                    return path
    except (OSError, ValueError):
        pass
    return None


def _unified_root() -> str | None:
    """Return where the cgroup v2 hierarchy is mounted (None: it is not), from /proc/self/mountinfo."""
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                mount, _, fs = line.partition(" - ")
                if fs.split(" ", 1)[0] == "cgroup2":
                    return mount.split()[4]
    except (OSError, IndexError):
        pass
    return None


def _root(controller: str) -> str | None:
    """Return the directory controller's hierarchy is mounted at (v1: ROOT/controller), None if none."""
    if controller == UNIFIED:
        return _unified_root()
    path = os.path.join(ROOT, controller)
    return path if os.path.isdir(path) else None


# Per process (by pid: a fork's child starts where its parent is, outside any job group): the cgroup
# directory it was in when it first asked, in each controller's hierarchy (None: no hierarchy). Read
# once: every job's group is made below it and left back to it, and a job that reads /proc/self/cgroup
# four times costs a tiny attempt a measurable share of its time (docs/benchmarks.md).
_homes: tuple[int, dict[str, str | None]] | None = None


def _home(controller: str) -> str | None:
    """Return this process's own cgroup directory in controller's hierarchy; None if it has none."""
    global _homes
    if _homes is None or _homes[0] != os.getpid():
        _homes = (os.getpid(), {})
    homes = _homes[1]
    if controller not in homes:
        own, root = _own_path(controller), _root(controller)
        homes[controller] = os.path.join(root, own.lstrip("/")) if own and root else None
    return homes[controller]


def _base(controller: str) -> str | None:
    """Return packsolve's directory below this process's cgroup in controller's hierarchy; None if none."""
    home = _home(controller)
    return None if home is None else os.path.join(home, BASE)


def choose(asked: str) -> None:
    """Say which versions this process may use (a key of ASKED: the cgroups setting); before mode()."""
    global _asked
    _asked = asked


def asked() -> str:
    """Return the cgroups setting this process measures by: as chosen, else PACKSOLVE_CGROUPS, else auto."""
    if _asked is not None:
        return _asked
    given = os.environ.get("PACKSOLVE_CGROUPS", "").strip().lower()
    return given if given in ASKED else "auto"


def mode() -> str:
    """Return how this process measures attempts: CGROUP_V1 or CGROUP_V2 if it can make and remove
    groups in that version's hierarchies (as asked() allows), else RUSAGE.

    Tried once per process (making and removing a group in each hierarchy); a forked child inherits
    the answer.
    """
    global _mode
    if _mode is None:
        tried = () if os.environ.get("PACKSOLVE_NO_CGROUPS") else ASKED[asked()]
        _mode = next((version for version in tried if _try_a_group(version)), RUSAGE)
        if _mode != RUSAGE:
            sweep_stale()
    return _mode


def _hierarchies() -> tuple[str, ...]:
    """The hierarchies of this process's cgroup version (none without cgroups)."""
    return HIERARCHIES.get(mode(), ())


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
    for controller in _hierarchies():
        base = _base(controller)
        if base is None:
            continue
        with contextlib.suppress(OSError), os.scandir(base) as entries:
            yield from ((controller, entry) for entry in entries)


def _try_a_group(version: str) -> bool:
    """Return whether a group can be made, joined and removed in every hierarchy of version."""
    try:
        group = JobGroup.make(f"probe-{os.getpid()}", hierarchies=HIERARCHIES[version])
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
    _cpu_base: float = 0.0  # what cpu_s subtracts: the group's count when its current job began
    away: bool = True  # this process is not in the group (not yet entered, or left)

    @classmethod
    def make(
        cls, name: str, memory_limit_mb: float | None = None, hierarchies: tuple[str, ...] | None = None
    ) -> JobGroup:
        """Make the group name in every hierarchy (this process's cgroup version's by default; OSError
        if one cannot be made), with the memory limit where the group can hold one."""
        paths: dict[str, str] = {}
        try:
            for controller in _hierarchies() if hierarchies is None else hierarchies:
                base = _base(controller)
                if base is None:
                    raise OSError(f"no cgroup hierarchy for {controller}")
                path = os.path.join(base, name)
                try:
                    os.mkdir(path)
                except FileNotFoundError:  # the first group below this cgroup: make packsolve's directory
                    os.makedirs(base, exist_ok=True)
                    if controller == UNIFIED:
                        _hand_down_memory(base)
                    os.mkdir(path)
                paths[controller] = path
            if not paths:
                raise OSError("no cgroup hierarchy")
            group = cls(paths, {})
            if memory_limit_mb is not None and group.holds_memory:
                group.limit_memory(memory_limit_mb)
            return group
        except OSError:
            for path in paths.values():
                with contextlib.suppress(OSError):
                    os.rmdir(path)
            raise

    @property
    def unified(self) -> str | None:
        """The group's directory in the cgroup v2 hierarchy; None for a v1 group."""
        return self.paths.get(UNIFIED)

    @property
    def holds_memory(self) -> bool:
        """Whether the group can hold its tree to a memory limit (v1: it has its memory directory; v2:
        its memory controller is on)."""
        unified = self.unified
        if unified is None:
            return "memory" in self.paths
        return os.path.exists(os.path.join(unified, "memory.max"))

    def limit_memory(self, mb: float) -> None:
        """Hold the memory charged to the group to mb (the kernel kills one of its processes past it);
        raise OSError if the kernel refuses (more is charged already than it can reclaim, or, v2, the
        group has no memory controller)."""
        cap = str(int(mb * 2**20))
        if not self.holds_memory:
            raise OSError("the group cannot hold memory (no memory directory or controller)")
        if self.unified is not None:
            self._write(UNIFIED, "memory.max", cap)
            with contextlib.suppress(OSError):  # no swap accounting: nothing to dodge the limit through
                self._write(UNIFIED, "memory.swap.max", "0")
            self._limit_mb = mb
            return
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

    def enter(self, controllers: tuple[str, ...] | None = None) -> None:
        """Move this process into the group (what it starts from now on is in it too), in the
        hierarchies of controllers (None: all of the group's)."""
        for controller, path in self.paths.items():
            if controllers is not None and controller not in controllers:
                continue
            home = _home(controller)
            if home is not None:
                self.came_from.setdefault(controller, home)
            with open(os.path.join(path, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))
        self.away = False

    def begin_job(self) -> None:
        """Start counting a job: this process in the group's cpuacct hierarchy, the CPU count from now."""
        if self.away:
            self.enter(("cpuacct",))
        self._cpu_base = 0.0
        self._cpu_base = self.cpu_s()

    def end_job(self) -> None:
        """End a job in the standing group: kill what it left there, remove the memory directory a
        program of it had (its charges and peak were that job's), keep the group for the next job."""
        self.kill()
        memory = self.paths.pop("memory", None)
        if memory is not None:
            if "memory" in self.came_from:
                with (
                    contextlib.suppress(OSError),
                    open(os.path.join(self.came_from["memory"], "cgroup.procs"), "w") as f,
                ):
                    f.write(str(os.getpid()))
            _rmdir(memory)

    def with_memory(self) -> None:
        """Make the group's directory in v1's memory hierarchy if it has none yet (a group made without
        it, job_group) and move this process in, so that what it starts next is counted and can be held
        there; OSError if it cannot be made or joined."""
        if self.unified is not None or "memory" in self.paths:
            return
        base = _base("memory")
        if base is None:
            raise OSError("no cgroup v1 hierarchy for memory")
        path = os.path.join(base, os.path.basename(self.paths["cpuacct"]))
        os.makedirs(base, exist_ok=True)
        os.mkdir(path)
        self.paths["memory"] = path
        self.enter(("memory",))

    def leave(self) -> None:
        """Move this process back to the groups it came from (what it started stays in this one)."""
        for back in self.came_from.values():
            with contextlib.suppress(OSError), open(os.path.join(back, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))
        self.away = True

    def _field(self, controller: str, name: str, key: str) -> int:
        """Return the number after key in the group's file name of "key value" lines (ValueError if none)."""
        for line in self._read(controller, name).splitlines():
            if line.startswith(key + " "):
                return int(line.split()[1])
        raise ValueError(f"no {key} in {name}")

    def cpu_s(self) -> float:
        """Return the CPU seconds the group's processes used while in it (user + system); 0 if unreadable."""
        try:
            if self.unified is not None:
                return self._field(UNIFIED, "cpu.stat", "usage_usec") / 1e6 - self._cpu_base
            return int(self._read("cpuacct", "cpuacct.usage")) / 1e9 - self._cpu_base
        except (OSError, ValueError):
            return 0.0

    def peak_mb(self) -> float:
        """Return the peak memory charged to the group since it was made, in MB; 0.0 if unreadable."""
        try:
            if self.unified is not None:
                return int(self._read(UNIFIED, "memory.peak")) / 2**20
            return int(self._read("memory", "memory.max_usage_in_bytes")) / 2**20
        except (OSError, ValueError, KeyError):  # KeyError: no memory directory (with_memory)
            return 0.0

    def oom_kills(self) -> int:
        """Return how many of the group's processes the kernel killed at its memory limit (0 if unknown)."""
        try:
            if self.unified is not None:
                return self._field(UNIFIED, "memory.events", "oom_kill")
            return self._field("memory", "memory.oom_control", "oom_kill")
        except (OSError, ValueError, IndexError, KeyError):
            return 0

    def pids(self) -> list[int]:
        """Return the processes in the group (in any of its hierarchies), this one left out."""
        found = self._members()
        found.discard(os.getpid())
        return sorted(found)

    def kill(self) -> None:
        """SIGKILL every process in the group but this one, until none is left (at most KILL_PATIENCE_S)."""
        if self.unified is not None and os.getpid() not in self._members():
            # v2: the kernel kills the whole group at once, forks in flight included.
            with contextlib.suppress(OSError):
                self._write(UNIFIED, "cgroup.kill", "1")
        _kill_all(self.pids, KILL_PATIENCE_S)

    def _members(self) -> set[int]:
        found: set[int] = set()
        for path in self.paths.values():
            with contextlib.suppress(OSError, ValueError), open(os.path.join(path, "cgroup.procs")) as f:
                found.update(int(p) for p in f.read().split())
        return found

    def remove(self) -> None:
        """Leave the group, kill what is left in it and remove it (one still busy after a second is left)."""
        self.leave()
        self.kill()
        for path in self.paths.values():
            _rmdir(path)


def _hand_down_memory(base: str) -> None:
    """Enable the memory controller for the job groups below packsolve's v2 directory base, where the
    kernel allows it: base must get it from its parent (this process's cgroup), which can hand it down
    only if it is the root or holds no process. Refused, the groups go without (see the module)."""
    for directory in (os.path.dirname(base), base):
        with contextlib.suppress(OSError), open(os.path.join(directory, "cgroup.subtree_control"), "w") as f:
            f.write("+memory")


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
    process die). A job's own group: on the way out this process leaves it, and what is left in it is
    killed and removed. On v1 a job without a memory limit runs in this process's standing group
    instead (see the module): its CPU counted from the job's start, what it left killed at its end.
    """
    global _serial, _current
    if mode() == RUSAGE:
        yield None
        return
    if mode() == CGROUP_V1 and memory_limit_mb is None:
        yield from _standing_job()
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


def _standing_job() -> Iterator[JobGroup | None]:
    """A job in this process's standing group (made at its first job; see the module), None if it
    cannot be made or joined."""
    global _standing, _serial, _current
    try:
        if _standing is None or not os.path.basename(_standing.paths["cpuacct"]).startswith(
            f"{os.getpid()}-"
        ):
            _serial += 1  # (a fork's copy of its parent's group is not its own)
            _standing = JobGroup.make(f"{os.getpid()}-{_serial}", hierarchies=("cpuacct",))
        group = _standing
        group.begin_job()
    except OSError:
        yield None
        return
    try:
        _current = group
        yield group
    finally:
        _current = None
        group.end_job()


def release() -> None:
    """Leave and remove this process's standing group, if it has one (a solver child that leaves)."""
    global _standing
    if _standing is not None and os.path.basename(_standing.paths["cpuacct"]).startswith(f"{os.getpid()}-"):
        _standing.remove()
    _standing = None


def current() -> JobGroup | None:
    """Return the group of the job this process is running (None outside one, or without cgroups)."""
    return _current


def remove_groups_of(pid: int) -> None:
    """Kill what is left in the groups of solver child pid (it died mid-job) and remove them."""
    if _mode in (None, RUSAGE):  # this process never made a group: neither did its children
        return
    for controller, entry in _job_groups():
        if entry.name.startswith(f"{pid}-") and entry.is_dir(follow_symlinks=False):
            with contextlib.suppress(OSError):
                JobGroup({controller: entry.path}, {}).kill()
                _rmdir(entry.path)
