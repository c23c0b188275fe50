"""The 24-puzzle projection's start bound is the value the C search starts its first iteration from.

Checked on 5x5 boards with small 4-tile groups (the real 6-tile tables take minutes to build),
two of them read through turned tables as in Korf and Felner's split: the search's iteration
count must be (optimum - start bound) / 2 + 1 on every board.
"""

from __future__ import annotations

import random

import pytest

from benchmarks.sliding_24puzzle_projection import check_bounds, fit, iterations, start_bound
from benchmarks.sliding_common import walk
from packsolve.puzzles.sliding import pdb as sliding_pdb
from tests.support.small_tables import use_small_5x5_tables


@pytest.fixture
def small_tables(tmp_path_factory, monkeypatch):
    """pdb-6666's loader over 4-tile groups, tables cached in a directory of these tests' own."""
    monkeypatch.setenv("PACKSOLVE_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "projection-tables"))
    use_small_5x5_tables(monkeypatch)
    return sliding_pdb.load(5, ranked=True)


def test_start_bounds_agree_with_the_searchs_iteration_counts(small_tables):
    rng = random.Random(5)
    seen = set()
    for _ in range(12):
        tiles = walk(5, 40, rng)
        length, count = iterations(tiles, small_tables)
        h = start_bound(tiles, small_tables)
        assert h <= length and (length - h) % 2 == 0
        assert (length - h) // 2 + 1 == count
        seen.add(count)
    assert len(seen) > 1  # boards whose first iteration did not already solve them
    assert check_bounds(small_tables, 3, 40, 7) == 3


def test_a_bound_read_without_the_turned_maps_is_caught(small_tables):
    """The check fails when the bound is misread: here, the turned groups read at their own cells."""
    unturned = sliding_pdb.PatternDatabase(5, small_tables.groups, small_tables.tables, 0.0, True, None)
    rng = random.Random(3)
    boards = [walk(5, 40, rng) for _ in range(12)]
    assert any(start_bound(t, unturned) != start_bound(t, small_tables) for t in boards)


def test_the_fit_recovers_a_geometric_growth_and_its_leave_one_out_factors():
    points = [(k, round(1000 * 6.0**k)) for k in range(1, 7)]
    a, b, factors = fit(points)
    assert b == pytest.approx(1.791759, rel=1e-4)  # log 6
    assert a == pytest.approx(6.907755, rel=1e-4)  # log 1000
    assert all(f == pytest.approx(1.0, rel=1e-3) for f in factors)
