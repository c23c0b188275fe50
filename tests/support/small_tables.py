"""Korf and Felner's 5x5 split in small: 4-tile groups whose tables build in seconds, not minutes.

Two groups read the table of 3-4-8-9 turned by 180 and 90 degrees, as the real 6-tile split's do.
"""

from __future__ import annotations

import pytest

from packsolve.puzzles.sliding import pdb as sliding_pdb

GROUPS_5X5 = (
    (1, 2, 5, 6),
    (3, 4, 8, 9),
    (7, 12, 13, 14),
    (21, 20, 16, 15),
    (19, 24, 18, 23),
    (10, 11, 17, 22),
)


def use_small_5x5_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make pdb and pdb-6666 on 5x5 use GROUPS_5X5 (turned tables included) for this test."""
    monkeypatch.setitem(sliding_pdb.PARTITIONS, 5, GROUPS_5X5)
    monkeypatch.setitem(sliding_pdb.RANKED_PARTITIONS, 5, GROUPS_5X5)
    monkeypatch.setitem(sliding_pdb.TURNED, (21, 20, 16, 15), ((3, 4, 8, 9), 2))
    monkeypatch.setitem(sliding_pdb.TURNED, (19, 24, 18, 23), ((3, 4, 8, 9), 1))
    monkeypatch.setattr(sliding_pdb, "_LOADED", {})
