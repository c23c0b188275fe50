"""Pattern databases: values are exact for their tiles, cached once on disk, safe when processes race."""

from __future__ import annotations

import multiprocessing
import os
from collections import deque

import pytest

from packsolve.native import sliding as native
from packsolve.puzzles.sliding import pdb as sliding_pdb
from packsolve.puzzles.sliding.board import neighbours

GROUP = (1, 2, 3, 4)


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PACKSOLVE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(sliding_pdb, "_LOADED", {})


def _abstract_distances(n: int, group: tuple[int, ...]) -> dict[tuple[int, ...], int]:
    """Fewest group-tile moves to home every placement, by 0-1 BFS over (placement, blank) in Python."""
    near = neighbours(n)
    start = (tuple(group), 0)
    best: dict[tuple[tuple[int, ...], int], int] = {start: 0}
    queue = deque([start])
    while queue:
        state = queue.popleft()
        pos, blank = state
        d = best[state]
        for q in near[blank]:
            if q in pos:
                i = pos.index(q)
                nxt = (pos[:i] + (blank,) + pos[i + 1 :], q)
                cost = d + 1
            else:
                nxt, cost = (pos, q), d
            if cost < best.get(nxt, 1 << 30):
                best[nxt] = cost
                (queue.appendleft if cost == d else queue.append)(nxt)
    out: dict[tuple[int, ...], int] = {}
    for (pos, _), d in best.items():
        out[pos] = min(d, out.get(pos, 1 << 30))
    return out


def test_built_table_equals_an_independent_zero_one_bfs():
    table = native.build_pdb(3, GROUP)
    truth = _abstract_distances(3, GROUP)
    assert len(table) == 9**4
    for pos, d in truth.items():
        index = sum(p * 9**i for i, p in enumerate(pos))
        assert table[index] == d
    assert sum(1 for v in table if v != 255) == len(truth)


def test_table_is_built_once_then_loaded_from_the_cache():
    table, built = sliding_pdb.ensure_table(3, GROUP)
    assert built > 0
    path = sliding_pdb.table_path(3, GROUP)
    assert path.stat().st_size == 9**4
    assert str(path).startswith(os.environ["PACKSOLVE_CACHE_DIR"])
    again, seconds = sliding_pdb.ensure_table(3, GROUP)
    assert seconds == 0.0
    assert bytes(again) == bytes(table)


def test_a_truncated_cache_file_is_rebuilt():
    path = sliding_pdb.table_path(3, GROUP)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\x00" * 100)
    table, built = sliding_pdb.ensure_table(3, GROUP)
    assert built > 0 and len(table) == 9**4


def _race(_: int) -> tuple[bytes, bool]:
    table, seconds = sliding_pdb.ensure_table(3, GROUP)
    return bytes(table), seconds > 0


def test_racing_processes_build_one_table_and_agree():
    # Spawned, not forked: a test process that earlier tests left with threads (a pool worker of the
    # suite) can fork a child holding a lock no thread will release, and the pool then waits forever.
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        results = pool.map(_race, range(8))
    tables = [t for t, _ in results]
    assert sum(built for _, built in results) == 1
    assert len(set(tables)) == 1
    assert tables[0] == native.build_pdb(3, GROUP)
    leftovers = [p.name for p in sliding_pdb.cache_dir().iterdir() if p.suffix == ".tmp"]
    assert leftovers == []


def test_load_covers_every_tile_once():
    db = sliding_pdb.load(3)
    tiles = sorted(t for g in db.groups for t in g)
    assert tiles == list(range(1, 9))
    assert [len(t) for t in db.tables] == [9 ** len(g) for g in db.groups]


def test_an_unwritable_cache_still_gives_the_table(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("PACKSOLVE_CACHE_DIR", str(blocker / "cache"))
    table, built = sliding_pdb.ensure_table(3, GROUP)
    assert built > 0
    assert bytes(table) == native.build_pdb(3, GROUP)


# -- compact (ranked) tables: Korf & Felner's 6-6-6-6 uses them; tests build small groups only ----


def test_ranked_table_equals_an_independent_zero_one_bfs():
    from packsolve.native import pattern_db

    table = pattern_db.build(3, GROUP)
    truth = _abstract_distances(3, GROUP)
    assert len(table) == 9 * 8 * 7 * 6 == len(truth)
    assert sorted(pattern_db.rank(3, pos) for pos in truth) == list(range(len(table)))
    for pos, d in truth.items():
        assert table[pattern_db.rank(3, pos)] == d


def test_ranked_builder_rejects_bad_groups():
    from packsolve.native import pattern_db

    for n, group in ((6, (1,)), (3, (1, 1)), (3, (0, 1)), (3, (1, 9)), (3, tuple(range(1, 10)))):
        with pytest.raises(ValueError):
            pattern_db.build(n, group)
    with pytest.raises(ValueError):
        pattern_db.rank(3, (2, 2))


def test_ranked_tables_are_cached_under_their_own_name(monkeypatch):
    monkeypatch.setitem(sliding_pdb.RANKED_PARTITIONS, 3, ((1, 2, 3, 4), (5, 6, 7, 8)))
    db = sliding_pdb.load(3, ranked=True)
    assert db.ranked and [len(t) for t in db.tables] == [3024, 3024]
    assert sliding_pdb.table_path(3, GROUP, ranked=True).stat().st_size == 3024
    assert not sliding_pdb.table_path(3, GROUP).exists()
    # sizes without a ranked split fall back to the usual tables
    assert not sliding_pdb.load(4, ranked=True).ranked


def test_the_6666_split_partitions_the_24_puzzle_into_four_six_tile_groups():
    groups = sliding_pdb.RANKED_PARTITIONS[5]
    assert sorted(t for g in groups for t in g) == list(range(1, 25)) and {len(g) for g in groups} == {6}
    assert sliding_pdb.table_size(5, groups[0], ranked=True) == 127_512_000
