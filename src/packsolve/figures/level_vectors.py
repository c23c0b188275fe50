"""A run's attempts as packed arrays sorted by level hash, and compare's grouped cells computed from them.

The compare aggregate (figures.compare_pairs) joins runs level by level and groups the joined cells by
kind and each run's status. Over two finished runs of a million attempts the database takes tens of
seconds for it; the same groups come from the runs' level vectors in a few hundred milliseconds:
each run's levels are sorted by a 64-bit prefix of the level hash, so one run's levels are found
in another's by a binary search (numpy's searchsorted), and the groups are counted and summed by
their code (bincount). No database here: figures.run_vectors keeps and reads the vectors.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

# Above this many groups' worth of codes (kinds x (statuses + 1) ** runs) the codes' arrays would
# outgrow the few megabytes a compare should take: such a set is aggregated in SQL instead.
MAX_CODES = 1 << 20
# Levels of a run joined at once: bounds the arrays made on the way (about 60 bytes a level).
CHUNK = 1 << 18
_ARRAYS = ("keys", "checks", "kinds", "statuses", "walls", "peaks")


class Unmatched(Exception):
    """Two different level hashes share their 64-bit prefix: the vectors cannot join them exactly."""


@dataclass(frozen=True)
class LevelVector:
    """One run's attempts sorted by level hash: keys[i] is the hash's first 8 bytes, checks[i] the next 8.

    kinds and statuses index the names lists; walls has a missing wall_s as 0 (as the aggregate's
    COALESCE), peaks a missing peak_rss_mb as NaN (as MAX ignores NULL).
    """

    kind_names: tuple[str, ...]
    status_names: tuple[str, ...]
    keys: npt.NDArray[np.uint64]
    checks: npt.NDArray[np.uint64]
    kinds: npt.NDArray[np.uint8]
    statuses: npt.NDArray[np.uint8]
    walls: npt.NDArray[np.float64]
    peaks: npt.NDArray[np.float64]

    def __len__(self) -> int:
        return len(self.keys)

    def part(self, start: int, stop: int) -> LevelVector:
        """Return the levels from start to stop (views of these arrays, still sorted)."""
        return self._with(lambda values: values[start:stop])

    def part_where(self, picked: npt.NDArray[np.bool_]) -> LevelVector:
        """Return the levels where picked is True (copies, still sorted)."""
        return self._with(lambda values: values[picked])

    def _with(self, take: Any) -> LevelVector:
        arrays = {name: take(getattr(self, name)) for name in _ARRAYS}
        return LevelVector(self.kind_names, self.status_names, **arrays)


def _coded(names: dict[str, int], values: Sequence[str]) -> npt.NDArray[np.int64]:
    """Return each value's index in names, adding the values names lacks (a dict lookup a value, in C)."""
    for value in sorted(set(values) - names.keys()):
        names[value] = len(names)
    return np.fromiter(map(names.__getitem__, values), dtype=np.int64, count=len(values))


class _Packer:
    """A run's arrays as they come, a batch of rows at a time, in the rows' order."""

    def __init__(self) -> None:
        self.names: tuple[dict[str, int], dict[str, int]] = ({}, {})
        self.parts: list[tuple[Any, ...]] = []

    def add(self, rows: Sequence[Sequence[Any]]) -> bool:
        """Add rows (level_hash, kind, status, wall_s, peak_rss_mb); False unless each hash is a SHA-256.

        A SHA-256 as levels.py writes it: 64 lower-case hex digits.
        """
        hashes, kinds, statuses, walls, peaks = zip(*rows, strict=True)
        if set(map(len, hashes)) != {64}:
            return False
        digits = "".join(hashes)
        if digits != digits.lower():  # "AB" and "ab" are one byte but two levels to SQL's join
            return False
        try:
            raw = bytes.fromhex(digits)
        except ValueError:
            return False
        if len(raw) != 32 * len(hashes):  # fromhex passes spaces between digits
            return False
        words = np.frombuffer(raw, dtype=">u8").reshape(-1, 4)[:, :2].astype(np.uint64)
        codes = [_coded(names, values) for names, values in zip(self.names, (kinds, statuses), strict=True)]
        self.parts.append(
            (words, *codes, np.array(walls, dtype=np.float64), np.array(peaks, dtype=np.float64))
        )
        return True

    def vector(self) -> LevelVector | None:
        """Return the vector of the rows added, sorted by key; None past 255 kinds or statuses, or if
        two levels share their first 8 bytes."""
        if any(len(n) > 255 for n in self.names):
            return None
        if not self.parts:
            types = (np.uint64, np.uint64, np.uint8, np.uint8, np.float64, np.float64)
            empty: list[Any] = [np.zeros(0, dtype=t) for t in types]
            return LevelVector((), (), *empty)
        words, kinds, statuses, walls, peaks = (np.concatenate(c) for c in zip(*self.parts, strict=True))
        self.parts.clear()
        order = np.argsort(words[:, 0])
        keys = words[order, 0]
        if np.any(keys[1:] == keys[:-1]):
            return None
        return LevelVector(
            kind_names=tuple(self.names[0]),
            status_names=tuple(self.names[1]),
            keys=keys,
            checks=words[order, 1],
            kinds=kinds[order].astype(np.uint8),
            statuses=statuses[order].astype(np.uint8),
            walls=np.where(np.isnan(walls), 0.0, walls)[order],
            peaks=peaks[order],
        )


def pack(batches: Iterable[Sequence[Sequence[Any]]]) -> LevelVector | None:
    """Return the vector of a run's (level_hash, kind, status, wall_s, peak_rss_mb) rows, given in batches.

    None if a level hash is not 64 lower-case hex digits (a SHA-256), two of the run's levels share their
    first 8 bytes, or there are over 255 kinds or statuses: such a run is compared in SQL.
    """
    packer = _Packer()
    for rows in batches:
        if rows and not packer.add(rows):
            return None
    return packer.vector()


def _find(vector: LevelVector, keys: npt.NDArray[np.uint64], checks: npt.NDArray[np.uint64]) -> Any:
    """Return (index, found): where each key is in vector, and whether it is there at all.

    Raise Unmatched where a key is there with another check (two levels sharing 64 bits).
    """
    if len(vector) == 0:
        return np.zeros(len(keys), dtype=np.intp), np.zeros(len(keys), dtype=bool)  # never read
    index = np.searchsorted(vector.keys, keys)
    np.minimum(index, len(vector) - 1, out=index)
    found = vector.keys[index] == keys
    if np.any(vector.checks[index[found]] != checks[found]):
        raise Unmatched
    return index, found


def _where(there: Any, values: Any, missing: float) -> Any:
    """Return values (a fresh array, changed in place) with missing where there is False."""
    values[~there] = missing
    return values


class _Sums:
    """The groups' count, wall sums and largest peaks, indexed by code: kind, then each run's status."""

    def __init__(self, runs: int, size: int) -> None:
        self.count = np.zeros(size, dtype=np.int64)
        self.walls = np.zeros((runs, size), dtype=np.float64)
        self.peaks = np.full((runs, size), np.nan, dtype=np.float64)

    def add(self, code: Any, j: int, walls: Any, peaks: Any) -> None:
        self.walls[j] += np.bincount(code, weights=walls, minlength=self.count.size)
        np.fmax.at(self.peaks[j], code, peaks)  # fmax: a NaN (no peak measured) never wins


@dataclass(frozen=True)
class _Legend:
    """Each vector's kind and status indexes as the codes' digits: base, and a lookup per vector."""

    base: int
    kind_of: list[npt.NDArray[np.int64]]
    status_of: list[npt.NDArray[np.int64]]


def cells(vectors: Sequence[LevelVector]) -> list[dict[str, Any]]:
    """Return the compare aggregate's rows over the vectors' runs: kind, status0.., n, w0.., p0...

    The rows figures.compare_pairs' SQL aggregate returns (one per kind and combination of statuses,
    status None where a run lacks the level, p None where no peak was measured), in code order.
    The cells of vectors[i] at levels no earlier run has are joined to the later runs', as there.
    Raise Unmatched if two levels share a 64-bit prefix, OverflowError past MAX_CODES codes.
    """
    n = len(vectors)
    kind_names = sorted({k for v in vectors for k in v.kind_names})
    status_names = sorted({s for v in vectors for s in v.status_names})
    base = len(status_names) + 1  # status digit 0: the run lacks the level
    size = len(kind_names) * base**n
    if size > MAX_CODES:
        raise OverflowError(f"{size} codes")
    legend = _Legend(
        base,
        [np.array([kind_names.index(k) for k in v.kind_names], dtype=np.int64) for v in vectors],
        [np.array([status_names.index(s) + 1 for s in v.status_names], dtype=np.int64) for v in vectors],
    )
    sums = _Sums(n, size)
    # seen[j]: which of run j's levels an earlier run has. A level's earliest run joins it to every
    # later run that has it, so the join marks them there, and no run's levels are looked up in the
    # earlier runs' again (each pair of runs is searched once, from the earlier side).
    seen = [np.zeros(len(v), dtype=bool) for v in vectors]
    for i, first in enumerate(vectors):
        # A slice at a time: the arrays made on the way take a few megabytes, not tens.
        for start in range(0, len(first), CHUNK):
            new = ~seen[i][start : start + CHUNK]
            piece = first.part(start, start + CHUNK)
            _add_part(sums, vectors, i, piece if new.all() else piece.part_where(new), legend, seen)
    return _rows(sums, n, base, kind_names, status_names)


def _add_part(
    sums: _Sums, vectors: Sequence[LevelVector], i: int, piece: LevelVector, legend: _Legend, seen: list[Any]
) -> None:
    """Add the cells of piece (levels of vectors[i] no earlier run has) joined to later runs', marked seen."""
    code = legend.kind_of[i][piece.kinds]
    joined = []
    for j, other in enumerate(vectors):
        code *= legend.base
        if j < i or len(other) == 0:  # lacks every level of this part: status digit 0
            continue
        if j == i:
            code += legend.status_of[j][piece.statuses]
        else:
            index, there = _find(other, piece.keys, piece.checks)
            code += _where(there, legend.status_of[j][other.statuses[index]], 0)
            seen[j][index[there]] = True
            joined.append((j, index, there))
    sums.count += np.bincount(code, minlength=sums.count.size)
    sums.add(code, i, piece.walls, piece.peaks)
    for j, index, there in joined:
        walls, peaks = vectors[j].walls[index], vectors[j].peaks[index]
        sums.add(code, j, _where(there, walls, 0.0), _where(there, peaks, np.nan))


def _rows(
    sums: _Sums, n: int, base: int, kind_names: list[str], status_names: list[str]
) -> list[dict[str, Any]]:
    """Decode the codes of the groups that have cells into the aggregate's rows."""
    rows = []
    for code in np.flatnonzero(sums.count):
        row: dict[str, Any] = {"n": int(sums.count[code])}
        rest = int(code)
        for j in reversed(range(n)):
            rest, digit = divmod(rest, base)
            row[f"status{j}"] = status_names[digit - 1] if digit else None
            row[f"w{j}"] = float(sums.walls[j, code])
            peak = float(sums.peaks[j, code])
            row[f"p{j}"] = None if np.isnan(peak) else peak
        row["kind"] = kind_names[rest]
        rows.append(row)
    return rows
