"""Which CPUs each pinned process gets: whole cores, none shared, every refusal saying what would fit."""

from __future__ import annotations

from pathlib import Path

import pytest

from packsolve.execution.cores import PinningError, cpu_sets, most_processes, physical_cores, shown


def _topology(root: Path, siblings: dict[int, str]) -> Path:
    for cpu, listed in siblings.items():
        (root / f"cpu{cpu}" / "topology").mkdir(parents=True)
        (root / f"cpu{cpu}" / "topology" / "thread_siblings_list").write_text(listed + "\n")
    return root


def test_hardware_threads_of_one_core_are_grouped_and_never_given_to_two_processes(tmp_path: Path) -> None:
    # Four cores of two threads, numbered as Linux numbers them on x86: core i is CPUs i and i+4.
    topology = _topology(tmp_path, {cpu: f"{cpu % 4},{cpu % 4 + 4}" for cpu in range(8)})
    cores = physical_cores(frozenset(range(8)), topology)
    assert cores == [(0, 4), (1, 5), (2, 6), (3, 7)]
    assert cpu_sets(1, 4, cores) == [{0}, {1}, {2}, {3}]  # one thread of each core; its sibling idle
    assert cpu_sets(2, 4, cores) == [{0, 4}, {1, 5}, {2, 6}, {3, 7}]
    assert most_processes(1, cores) == 4 and most_processes(2, cores) == 4 and most_processes(3, cores) == 2
    assert cpu_sets(3, 2, cores) == [{0, 4, 1}, {2, 6, 3}]  # the rest of a core is never another's
    assert shown(cpu_sets(2, 2, cores)) == "0,4 | 1,5"


def test_only_the_cpus_this_process_may_use_are_given(tmp_path: Path) -> None:
    topology = _topology(tmp_path, {cpu: str(cpu) for cpu in range(8)})
    cores = physical_cores(frozenset({2, 3, 6}), topology)  # taskset or a container's cpuset
    assert cpu_sets(1, 3, cores) == [{2}, {3}, {6}]


def test_a_machine_that_does_not_say_which_threads_share_a_core_counts_each_cpu_as_one(
    tmp_path: Path,
) -> None:
    assert physical_cores(frozenset({0, 1, 2}), tmp_path / "absent") == [(0,), (1,), (2,)]


def test_sets_that_do_not_fit_are_refused_saying_what_would() -> None:
    cores = [(0,), (1,)]
    with pytest.raises(
        PinningError, match=r"3 process\(es\) of 1 CPU\(s\) each .* run at most 2 process\(es\)"
    ):
        cpu_sets(1, 3, cores)
    with pytest.raises(PinningError, match="at least 1"):
        cpu_sets(0, 1, cores)
