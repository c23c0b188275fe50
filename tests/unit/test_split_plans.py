"""split_plans.parts_for: how finely a split level is cut, by how long it is expected to take; a level
without history that runs past --split-after (a probe) is expected to take several times that."""

from __future__ import annotations

from packsolve.execution.spec import AttemptSpec, Limits
from packsolve.split_plans import (
    MAX_PARTS_PER_PROCESS,
    PARTS_PER_PROCESS,
    PROBE_EXPECTED,
    parts_for,
    probe_expected,
    split_of,
)


def test_a_short_level_gets_a_few_parts_a_process_and_a_long_one_finer_parts_up_to_a_cap():
    assert parts_for(2, 5.0) == parts_for(2, 30.0) == 2 * PARTS_PER_PROCESS
    assert parts_for(2, 74.0) == 2 * 18  # one a process per 4 s
    assert parts_for(2, 425.0) == parts_for(2, 36_000.0) == 2 * MAX_PARTS_PER_PROCESS
    assert parts_for(1, 1.0) >= 2 and parts_for(8, 60.0) == 8 * 15


def test_a_longer_level_is_split_deeper():
    tiles = [[14, 13, 15, 7], [11, 12, 9, 5], [6, 0, 2, 1], [4, 8, 10, 3]]  # Korf's 15-puzzle #1
    spec = AttemptSpec("sliding", "pdb", {"tiles": tiles}, Limits(60.0))
    short, long = split_of(spec, parts_for(2, 10.0)), split_of(spec, parts_for(2, 400.0))
    assert short is not None and long is not None
    assert 16 <= len(short.parts) < len(long.parts) and len(long.parts) >= 128


def test_a_level_that_ran_past_split_after_is_cut_as_a_longer_one_within_its_wall_limit():
    assert PROBE_EXPECTED > 1 and probe_expected(30.0, None) == PROBE_EXPECTED * 30.0
    assert parts_for(2, probe_expected(30.0, None)) == 2 * 30 > parts_for(2, 30.0)
    assert probe_expected(30.0, 45.0) == 45.0  # never expected past its own wall limit
