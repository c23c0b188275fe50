"""The packs the pipeline benchmark runs: trivial levels (solved sudokus) and CPU-bound ones."""

from __future__ import annotations

import random
from pathlib import Path

from benchmarks.harness import public_data


def solved_grids(n: int, seed: int = 10) -> list[str]:
    """Return n distinct solved sudokus: symmetries (digits, rows, columns, transpose) of known solutions."""
    base = []
    for line in public_data("sudoku", "tdoku_test_puzzles.txt").read_text().splitlines():
        parts = line.strip().split(":")
        if len(parts) >= 3 and len(parts[2]) == 81:
            base.append(parts[2])
    rng = random.Random(seed)
    out: dict[str, None] = {}
    while len(out) < n:
        g = rng.choice(base)
        digits = dict(zip("123456789", rng.sample("123456789", 9), strict=True))
        rows = [b * 3 + r for b in rng.sample(range(3), 3) for r in rng.sample(range(3), 3)]
        cols = [b * 3 + c for b in rng.sample(range(3), 3) for c in rng.sample(range(3), 3)]
        if rng.random() < 0.5:
            grid = "".join(digits[g[r * 9 + c]] for r in rows for c in cols)
        else:
            grid = "".join(digits[g[r * 9 + c]] for c in cols for r in rows)
        out[grid] = None
    return list(out)


def write_pack(path: Path, grids: list[str]) -> Path:
    """Write one grid a line to path; return path."""
    path.write_text("".join(g + "\n" for g in grids))
    return path


def cpu_bound_pack(path: Path, n: int) -> Path:
    """Hard sudokus for the plain heuristic: with a node limit every level is the same fixed work."""
    lines = [
        ln.split(":")[0].strip()[:81]
        for ln in public_data("sudoku", "tdoku_puzzles6_forum_hardest_1106.txt").read_text().splitlines()
        if ln.strip() and not ln.startswith("#")
    ]
    return write_pack(path, lines[:n])
