"""Shared helpers of the sliding-tile benchmarks: reading the public sets, the peer, tables."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from benchmarks.public_data import public_data

# The published instance lists, files of the data sets' sliding_puzzle/ (found when a benchmark runs).
KORF100 = "korf100_15puzzle.txt"
KORF_FELNER50 = "korf_felner50_24puzzle.txt"
ALGS4 = "algs4_8puzzle_testing.txt"


def sliding_set(name: str) -> Path:
    """Return the path of one of the published lists (KORF100, ...) in the public data sets."""
    return public_data("sliding_puzzle", name)


@dataclass(frozen=True)
class Instance:
    """One published instance: its id, the published optimal length (None: unsolvable), the tiles."""

    ident: str
    optimal: int | None
    tiles: tuple[int, ...]


def read_korf(path: Path) -> list[Instance]:
    """Return the instances of a Korf-style list (id optimal t0..tn, blank top-left already)."""
    out = []
    for line in path.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split()
        out.append(Instance(parts[0], int(parts[1]), tuple(int(x) for x in parts[2:])))
    return out


def blank_last_to_first(tiles: tuple[int, ...]) -> tuple[int, ...]:
    """Return the board with goal 1..n-1 then blank turned into our goal (blank first).

    Rotating the board half a turn and renaming tile t as N*N - t maps one goal
    onto the other and keeps adjacency, so optimal lengths are unchanged.
    """
    size = len(tiles)
    out = [0] * size
    for p, t in enumerate(tiles):
        out[size - 1 - p] = size - t if t else 0
    return tuple(out)


def read_algs4(path: Path, n: int = 3) -> list[Instance]:
    """Return the N x N boards of the algs4 test list, converted to the blank-top-left goal."""
    out = []
    for line in path.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split()
        if int(parts[1]) != n:
            continue
        optimal = None if parts[2] == "unsolvable" else int(parts[2])
        tiles = tuple(int(x) for x in parts[3:])
        out.append(Instance(parts[0], optimal, blank_last_to_first(tiles)))
    return out


PEER_SCRIPT = """
import json, sys, time
import numpy as np
import slidingpuzzle as sp
n, tiles = json.loads(sys.argv[1])
board = np.array(tiles, dtype=int).reshape(n, n)
start = time.perf_counter()
result = sp.search(board, "a*", heuristic=sp.linear_conflict_distance)
print(json.dumps({"length": len(result.solution), "expanded": result.expanded,
                  "seconds": time.perf_counter() - start}))
"""


def run_peer(tiles: tuple[int, ...], timeout: float) -> dict[str, float] | None:
    """Return the slidingpuzzle package's A* (linear conflict) result on a board, None on timeout.

    The peer's goal puts the blank last, so the board is turned into that form
    first; it runs in a child process so a timeout can stop it.
    """
    n = int(round(len(tiles) ** 0.5))
    size = n * n
    theirs = [0] * size
    for p, t in enumerate(tiles):
        theirs[size - 1 - p] = size - t if t else 0
    try:
        proc = subprocess.run(
            [sys.executable, "-c", PEER_SCRIPT, json.dumps([n, theirs])],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return None
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-2000:])
    return json.loads(proc.stdout)


def walk(n: int, moves: int, rng: random.Random) -> list[int]:
    """Return the N x N board a random walk of the blank from the goal reaches (never straight back)."""
    tiles, blank, last = list(range(n * n)), 0, -1
    for _ in range(moves):
        near = [q for q in (blank - n, blank + n) if 0 <= q < n * n]
        near += [q for q in (blank - 1, blank + 1) if 0 <= q < n * n and q // n == blank // n]
        p = rng.choice([q for q in near if q != last])
        tiles[blank], tiles[p] = tiles[p], 0
        last, blank = blank, p
    return tiles
