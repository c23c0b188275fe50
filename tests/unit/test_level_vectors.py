"""Level vectors: packing a run's attempts, and compare's grouped cells from them against a plain join."""

from __future__ import annotations

import hashlib
import math
import random
from typing import Any

import pytest

from packsolve.figures.level_vectors import Unmatched, cells, pack

Row = tuple[str, str, str, float | None, float | None]


def digest(n: int) -> str:
    return hashlib.sha256(str(n).encode()).hexdigest()


def random_rows(rng: random.Random, levels: list[int]) -> list[Row]:
    rows = []
    for n in levels:
        wall = None if rng.random() < 0.1 else rng.uniform(0.0, 20.0)
        peak = None if rng.random() < 0.2 else rng.uniform(1.0, 500.0)
        kind = ["onestroke", "sudoku", "sliding"][n % 3]
        rows.append((digest(n), kind, rng.choice(["solved", "timeout", "error", "wrong"]), wall, peak))
    return rows


def joined(runs: list[list[Row]]) -> dict[tuple[Any, ...], dict[str, Any]]:
    """The aggregate's rows keyed by (kind, status0, ...): the rows of each run at levels no earlier
    run had, joined to the later runs' (the SQL's UNION ALL of LEFT JOINs), grouped."""
    by_hash = [{r[0]: r for r in rows} for rows in runs]
    out: dict[tuple[Any, ...], dict[str, Any]] = {}
    for i, rows in enumerate(runs):
        for h, kind, *_ in rows:
            if any(h in by_hash[j] for j in range(i)):
                continue
            cells_ = [by_hash[j].get(h) if j >= i else None for j in range(len(runs))]
            key = (kind, *(c[2] if c else None for c in cells_))
            group = out.setdefault(key, {"n": 0, **{f"w{j}": 0.0 for j in range(len(runs))}})
            group["n"] += 1
            for j, c in enumerate(cells_):
                group[f"w{j}"] += (c[3] or 0.0) if c else 0.0
                if c and c[4] is not None:
                    group[f"p{j}"] = max(group.get(f"p{j}", c[4]), c[4])
    return out


@pytest.mark.parametrize("seed", range(6))
def test_the_cells_equal_a_plain_join_of_overlapping_disjoint_and_partial_runs(seed: int) -> None:
    rng = random.Random(seed)
    pool = list(range(300))
    levels = [rng.sample(pool, rng.randint(0, 200)) for _ in range(3)]
    levels.append(levels[0][: len(levels[0]) // 2])  # a part of the first run
    levels.append([n + 1000 for n in levels[1]])  # none of any other run
    runs = [random_rows(rng, ls) for ls in levels]
    for picked in ([0, 1], [1, 0], [0, 3], [3, 4], [0, 1, 2], [4, 2, 3], [2, 2]):
        chosen = [runs[p] for p in picked]
        vectors = [pack([rows[:50], rows[50:]]) for rows in chosen]  # in two batches
        assert all(v is not None for v in vectors)
        want = joined(chosen)
        got = {(r["kind"], *(r[f"status{j}"] for j in range(len(picked)))): r for r in cells(vectors)}  # type: ignore[arg-type]
        assert got.keys() == want.keys(), picked
        for key, group in want.items():
            assert got[key]["n"] == group["n"]
            for j in range(len(picked)):
                assert math.isclose(got[key][f"w{j}"], group[f"w{j}"], rel_tol=1e-12, abs_tol=1e-12)
                assert got[key][f"p{j}"] == group.get(f"p{j}")


def test_a_run_is_not_packed_when_a_hash_is_not_a_sha256_or_two_share_their_prefix() -> None:
    good = ("a" * 64, "sudoku", "solved", 1.0, 2.0)
    assert pack([[good]]) is not None
    assert pack([[good, ("z" * 64, "sudoku", "solved", 1.0, 2.0)]]) is None  # not hex
    assert pack([[good, ("ab" * 16, "sudoku", "solved", 1.0, 2.0)]]) is None  # not 64 digits
    assert pack([[good, ("B" * 64, "sudoku", "solved", 1.0, 2.0)]]) is None  # "B" * 64 and "b" * 64 differ
    assert pack([[good, ("a" * 16 + "b" * 48, "sudoku", "solved", 1.0, 2.0)]]) is None  # same 8 bytes
    empty = pack([])
    assert empty is not None and len(empty) == 0


def test_two_levels_sharing_their_64_bit_prefix_across_runs_are_never_joined() -> None:
    one = pack([[("a" * 16 + "b" * 48, "sudoku", "solved", 1.0, 2.0)]])
    other = pack([[("a" * 16 + "c" * 48, "sudoku", "timeout", 3.0, 4.0)]])
    assert one is not None and other is not None
    with pytest.raises(Unmatched):
        cells([one, other])
