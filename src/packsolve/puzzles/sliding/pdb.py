"""Additive disjoint pattern databases for sliding tiles: partitions, build, on-disk cache, fast load.

A table for a group of tiles holds, for every placement of those tiles, the
fewest moves *of those tiles* that bring them home (other tiles move for
free), so the tables of disjoint groups add up to an admissible heuristic.
Tables are indexed by sum(pos_i * (N*N)**i): sparse, but a move updates the
index with one multiply-add.  They are built once by breadth-first search in
C (before the attempts that need them, by the kind's preparation: never under
an attempt's limits unless no one prepared them), written atomically to the
user's cache directory under a lock (two processes racing build it once), and
memory-mapped read-only, so forked workers share one copy through the page cache.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib
import math
import mmap
import os
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

FORMAT_VERSION = 1

# Static partitions after Korf & Felner (blank top-left).  4x4: 5-5-5 (top-right,
# left and bottom-right blocks): its three tables take about a second of CPU to
# build, so a first attempt under a short time limit still finishes.  The
# mirrored lookup (transpose about the main diagonal, which fixes the goal)
# gives a second, different partition for free.  5x5: six 4-tile blocks keep
# the tables small (390 625 entries each) and quick to build.
PARTITIONS: dict[int, tuple[tuple[int, ...], ...]] = {
    2: ((1, 2, 3),),
    3: ((1, 2, 3, 4), (5, 6, 7, 8)),
    4: ((1, 2, 3, 6, 7), (4, 5, 8, 9, 12), (10, 11, 13, 14, 15)),
    5: (
        (1, 2, 5, 6),
        (3, 4, 8, 9),
        (7, 12, 13, 14),
        (10, 11, 15, 16),
        (20, 21, 22, 23),
        (17, 18, 19, 24),
    ),
}
# Stronger 4x4 split for the `pdb-663` heuristic: Korf & Felner's 6-6-3 (the top
# row's three tiles, the two left and the two right columns below it).  About
# 4x fewer nodes than 5-5-5, but its two big tables take ~10 s of CPU to build.
STRONG_PARTITIONS: dict[int, tuple[tuple[int, ...], ...]] = {
    4: ((1, 2, 3), (4, 5, 8, 9, 12, 13), (6, 7, 10, 11, 14, 15)),
}
# The `pdb-6666` heuristic: Korf & Felner's 6-6-6-6 split of the 24-puzzle, with compact (ranked)
# tables of 25!/19! = 127,512,000 bytes each (two of them, 255 MB on disk and mapped: see TURNED),
# built by packsolve.native.pattern_db in minutes (about 1.2 GB of bitmaps while one is built).
RANKED_PARTITIONS: dict[int, tuple[tuple[int, ...], ...]] = {
    5: ((1, 2, 5, 6, 7, 12), (3, 4, 8, 9, 13, 14), (21, 20, 16, 15, 11, 10), (19, 24, 18, 23, 17, 22)),
}
# Korf's economy: a table ignores the blank, so a group whose tiles' homes are another group's
# turned by quarter turns reads that group's table at the turned positions. The 2x3 blocks of
# 10-21 and 17-24 are the block of 3-14 turned twice and once (tiles listed in matching order):
# two tables of 127.5 MB serve the four groups.
TURNED: dict[tuple[int, ...], tuple[tuple[int, ...], int]] = {
    (21, 20, 16, 15, 11, 10): ((3, 4, 8, 9, 13, 14), 2),
    (19, 24, 18, 23, 17, 22): ((3, 4, 8, 9, 13, 14), 1),
}


@dataclass(frozen=True)
class PatternDatabase:
    """The tables of one partition, ready for the C search (buffers stay mapped while held)."""

    n: int
    groups: tuple[tuple[int, ...], ...]
    tables: tuple[object, ...]
    build_s: float
    ranked: bool = False
    maps: tuple[bytes | None, ...] | None = None


def cache_dir() -> Path:
    """Return the directory for cached tables: $PACKSOLVE_CACHE_DIR or the user's cache directory."""
    from packsolve.settings import current

    given = current().cache_dir
    if given:
        return Path(given)
    import platformdirs

    return Path(platformdirs.user_cache_dir("packsolve"))


def table_path(n: int, group: tuple[int, ...], ranked: bool = False) -> Path:
    name = "-".join(str(t) for t in group) + ("-ranked" if ranked else "")
    return cache_dir() / f"sliding-pdb-v{FORMAT_VERSION}-{n}x{n}-{name}.bin"


def quarter_turns(n: int, turns: int) -> bytes:
    """Return where each cell goes when the board turns clockwise by quarter turns: (r, c) -> (n-1-c, r)."""
    cells = list(range(n * n))
    for _ in range(turns % 4):
        cells = [(n - 1 - p % n) * n + p // n for p in cells]
    return bytes(cells)


def table_size(n: int, group: tuple[int, ...], ranked: bool = False) -> int:
    """Return the entries of a group's table: (n*n)**k sparse, or n*n!/(n*n-k)! ranked."""
    if ranked:
        return math.perm(n * n, len(group))
    return (n * n) ** len(group)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "a+b") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _write_atomically(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _map(path: Path, size: int) -> mmap.mmap | None:
    """Return the file mapped read-only, or None if it is missing or of the wrong size."""
    try:
        with open(path, "rb") as fh:
            if os.fstat(fh.fileno()).st_size != size:
                return None
            return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    except OSError:  # missing, or a cache path that cannot be read: build instead
        return None


def _build(n: int, group: tuple[int, ...], ranked: bool = False) -> tuple[bytes, float]:
    # Imported here so reading cached tables never needs the compiled module.
    start = time.perf_counter()
    if ranked:
        data = importlib.import_module("packsolve.native.pattern_db").build(n, group)
    else:
        data = importlib.import_module("packsolve.native.sliding").build_pdb(n, group)
    return data, time.perf_counter() - start


def ensure_table(n: int, group: tuple[int, ...], ranked: bool = False) -> tuple[mmap.mmap | bytes, float]:
    """Return the mapped table of a group, building and caching it first if needed; and build seconds.

    If the cache directory cannot be written, the table is built in memory
    for this process only (and rebuilt by the next one).
    """
    path = table_path(n, group, ranked)
    size = table_size(n, group, ranked)
    table = _map(path, size)
    if table is not None:
        return table, 0.0
    try:
        with _locked(path):
            table = _map(path, size)  # another process may have built it while we waited
            if table is not None:
                return table, 0.0
            data, elapsed = _build(n, group, ranked)
            _write_atomically(path, data)
    except OSError:
        return _build(n, group, ranked)
    table = _map(path, size)
    if table is None:
        return data, elapsed
    return table, elapsed


_LOADED: dict[tuple[int, bool, bool], PatternDatabase] = {}


def load(n: int, strong: bool = False, ranked: bool = False) -> PatternDatabase:
    """Return the pattern database for N x N boards, built on first use; KeyError for an unknown N.

    strong picks STRONG_PARTITIONS, ranked RANKED_PARTITIONS, where one exists
    for N (else the usual split).
    """
    ranked = ranked and n in RANKED_PARTITIONS
    key = (n, strong, ranked)
    if key not in _LOADED:
        if ranked:
            groups = RANKED_PARTITIONS[n]
        else:
            groups = STRONG_PARTITIONS[n] if strong and n in STRONG_PARTITIONS else PARTITIONS[n]
        tables, maps, total = [], [], 0.0
        for group in groups:
            source, turns = TURNED.get(group, (group, 0)) if ranked else (group, 0)
            turn = quarter_turns(n, turns)
            if [turn[t] for t in group] != list(source):
                raise ValueError(f"tiles {group} do not turn onto {source}")
            table, seconds = ensure_table(n, source, ranked)
            tables.append(table)
            maps.append(turn if turns else None)
            total += seconds
        turned = tuple(maps) if any(maps) else None
        _LOADED[key] = PatternDatabase(n, groups, tuple(tables), total, ranked, turned)
    return _LOADED[key]


def groups_of(n: int, strong: bool = False, ranked: bool = False) -> tuple[tuple[int, ...], ...]:
    """Return the groups whose tables load(n, strong, ranked) reads (a turned group's source once)."""
    if ranked and n in RANKED_PARTITIONS:
        return tuple(dict.fromkeys(TURNED.get(g, (g, 0))[0] for g in RANKED_PARTITIONS[n]))
    return STRONG_PARTITIONS[n] if strong and n in STRONG_PARTITIONS else PARTITIONS[n]


def cached(n: int, strong: bool = False, ranked: bool = False) -> bool:
    """Return whether every table load(n, strong, ranked) reads is in the cache, whole."""
    ranked = ranked and n in RANKED_PARTITIONS
    for group in groups_of(n, strong, ranked):
        try:
            if table_path(n, group, ranked).stat().st_size != table_size(n, group, ranked):
                return False
        except OSError:
            return False
    return True


def main(argv: list[str] | None = None) -> int:
    """Build (or check) cached tables: `python -m packsolve.puzzles.sliding.pdb [--strong|--6666] [N...]`.

    `packsolve kinds --prepare sliding HEURISTIC --size N` does the same through the kind's preparation.
    """
    import sys

    args = sys.argv[1:] if argv is None else argv
    strong, ranked = "--strong" in args, "--6666" in args
    sizes = [int(a) for a in args if not a.startswith("--")] or [4]
    for n in sizes:
        db = load(n, strong, ranked)
        where = table_path(n, db.groups[0]).parent
        split = "-".join(str(len(g)) for g in db.groups)
        print(f"{n}x{n} ({split}): tables in {where} ({db.build_s:.1f} s spent building)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
