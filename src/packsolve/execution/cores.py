"""Pinning attempts to cores of their own (`--cpus-per-attempt`): which CPUs each process gets.

Each process that runs attempts (a local pool process, a worker's pool process) is pinned once, at
its start, to its own set of CPUs; the solver child it forks and every program that child starts
inherit the set, so an attempt never runs on another process's CPUs. Sets are made of whole
physical cores: two hardware threads of one core are never given to two processes (they share the
core's execution units, so one attempt would slow the other); a thread left over is left idle.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

_TOPOLOGY = Path("/sys/devices/system/cpu")


class PinningError(ValueError):
    """The CPUs this process may use cannot give every process its own set of the size asked."""


def usable_cpus() -> frozenset[int]:
    """Return the CPUs this process may run on (its affinity: a container's or taskset's limit holds)."""
    return frozenset(os.sched_getaffinity(0))


def physical_cores(cpus: frozenset[int], topology: Path = _TOPOLOGY) -> list[tuple[int, ...]]:
    """Return the usable CPUs grouped by physical core (hardware threads together), in CPU order.

    Where the kernel does not say which threads share a core, each CPU counts as a core of its own.
    """
    cores: dict[str, list[int]] = {}
    for cpu in sorted(cpus):
        try:
            siblings = (topology / f"cpu{cpu}" / "topology" / "thread_siblings_list").read_text().strip()
        except OSError:
            siblings = str(cpu)
        cores.setdefault(siblings, []).append(cpu)
    return sorted((tuple(group) for group in cores.values()), key=lambda group: group[0])


def most_processes(per_process: int, cores: Sequence[tuple[int, ...]]) -> int:
    """Return how many processes can each have per_process CPUs of whole cores of their own."""
    count, have = 0, 0
    for core in cores:
        have += len(core)
        if have >= per_process:
            count, have = count + 1, 0  # the rest of this core stays idle: never shared
    return count


def cpu_sets(per_process: int, processes: int, cores: Sequence[tuple[int, ...]]) -> list[frozenset[int]]:
    """Return one set of per_process CPUs for each process, no physical core in two sets.

    Raise PinningError when the cores cannot give that many processes sets of that size.
    """
    if per_process < 1:
        raise PinningError(f"{per_process} CPUs per attempt cannot run anything; give at least 1")
    sets: list[frozenset[int]] = []
    taking: list[int] = []
    for core in cores:
        taking += core[: per_process - len(taking)]
        if len(taking) == per_process:
            sets.append(frozenset(taking))
            taking = []
            if len(sets) == processes:
                return sets
    usable = sum(len(core) for core in cores)
    most = most_processes(per_process, cores)
    raise PinningError(
        f"{processes} process(es) of {per_process} CPU(s) each need more than the {usable} CPU(s) "
        f"({len(cores)} core(s)) this machine lets packsolve use: run at most {most} process(es) "
        f"with {per_process} CPU(s) each, or give fewer CPUs per attempt"
    )


def shown(sets: Sequence[frozenset[int]]) -> str:
    """Return the sets as a person reads them: "0 | 1", "0,1 | 2,3"."""
    return " | ".join(",".join(str(cpu) for cpu in sorted(cpu_set)) for cpu_set in sets)


def pin(cpus: frozenset[int]) -> None:
    """Pin this process (and so everything it starts from now on) to cpus."""
    os.sched_setaffinity(0, cpus)
