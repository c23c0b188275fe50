"""How long the 24-puzzles not solved yet would take `pdb-6666`: projected from the boards solved.

Usage: nice python -m benchmarks.sliding_24puzzle_projection

Reads benchmarks/results/sliding_24puzzle_optimal.jsonl (what sliding_24puzzle_optimal measured),
loads the 6-6-6-6 tables (built once, then cached) and takes every board's start bound: the
heuristic value IDA*'s first iteration starts from, read from the tables as the C search reads
them. IDA* on the 24-puzzle raises its bound by 2 per iteration and each iteration costs about a
constant factor more than the last, so the nodes of a board grow about geometrically with the
number of iterations its optimum needs, (optimum - start bound) / 2 + 1. A least-squares fit of
log(nodes) on that number over the boards solved gives each unsolved board's projected nodes,
and the node rate of the attempts its CPU seconds. The fit's own error is reported
(leave-one-out, over the boards solved) beside it. Before any projection, the start bounds are
checked against the search itself on random-walk boards: their iteration counts must agree.
Writes benchmarks/results/sliding_24puzzle_projection.md.
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from benchmarks.harness import RESULTS, parser
from benchmarks.sliding_common import KORF_FELNER50, read_korf, sliding_set, walk
from packsolve.native import pattern_db, sliding
from packsolve.puzzles.sliding import ida
from packsolve.puzzles.sliding import pdb as sliding_pdb


def start_bound(tiles: Sequence[int], db: sliding_pdb.PatternDatabase) -> int:
    """Return the additive tables' value of the board and of its reflection, the larger (as the search).

    The reflection is the board mirrored in its main diagonal, tile t named as its mirror; a group
    read through a turned table looks its tiles' cells up through the group's map.
    """
    n = db.n
    slot = {t: (g, i) for g, group in enumerate(db.groups) for i, t in enumerate(group)}
    mirror = [(x % n) * n + x // n for x in range(n * n)]
    cells = [list(group) for group in db.groups]
    mirrored = [list(group) for group in db.groups]
    for p, t in enumerate(tiles):
        if t == 0:
            continue
        g, i = slot[t]
        cells[g][i] = _cell(db, g, p)
        g, i = slot[mirror[t]]
        mirrored[g][i] = _cell(db, g, mirror[p])
    value = sum(db.tables[g][pattern_db.rank(n, tuple(cells[g]))] for g in range(len(db.groups)))
    reflected = sum(db.tables[g][pattern_db.rank(n, tuple(mirrored[g]))] for g in range(len(db.groups)))
    return max(value, reflected)


def _cell(db: sliding_pdb.PatternDatabase, g: int, p: int) -> int:
    """Return cell p as group g's table sees it (turned, where the group reads another's table)."""
    return db.maps[g][p] if db.maps is not None and db.maps[g] is not None else p


def iterations(tiles: Sequence[int], db: sliding_pdb.PatternDatabase) -> tuple[int, int]:
    """Return (optimal length, IDA* iterations) of the board, as the C search counts them."""
    status, moves, _, count = sliding.ida_star(
        bytes(tiles), db.n, ida.PDB, 1, 1, 0, 0.0, db.tables, db.groups, ranked=db.ranked, maps=db.maps
    )
    if status != 0 or moves is None:
        raise SystemExit(f"the search did not solve a check board: status {status}")
    return len(moves), count


def check_bounds(db: sliding_pdb.PatternDatabase, boards: int, moves: int, seed: int) -> int:
    """Check start_bound against the search on random walks; return how many boards agreed, or exit."""
    rng = random.Random(seed)
    for k in range(boards):
        tiles = walk(db.n, moves, rng)
        length, count = iterations(tiles, db)
        h = start_bound(tiles, db)
        if h > length or (length - h) % 2 or (length - h) // 2 + 1 != count:
            raise SystemExit(f"walk {k}: start bound {h}, optimum {length}, but {count} iterations")
    return boards


def fit(points: list[tuple[int, int]]) -> tuple[float, float, list[float]]:
    """Fit log(nodes) = a + b * iterations; return a, b and each point's leave-one-out factor.

    The factor is projected / measured nodes of a point with the fit made without it.
    """
    x = np.array([p[0] for p in points], dtype=float)
    y = np.log(np.array([p[1] for p in points], dtype=float))
    b, a = np.polyfit(x, y, 1)
    factors = []
    for k in range(len(points)):
        keep = np.arange(len(points)) != k
        bk, ak = np.polyfit(x[keep], y[keep], 1)
        factors.append(math.exp(ak + bk * x[k] - y[k]))
    return float(a), float(b), factors


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--results", type=Path, default=RESULTS / "sliding_24puzzle_optimal.jsonl")
    ap.add_argument("--out", type=Path, default=RESULTS / "sliding_24puzzle_projection.md")
    ap.add_argument("--check-walks", type=int, default=20, help="random-walk boards to check the bounds on")
    args = ap.parse_args()
    records = [json.loads(line) for line in args.results.read_text().splitlines() if line.strip()]
    latest = {str(r["id"]): r for r in records}
    instances = read_korf(sliding_set(KORF_FELNER50))
    start = time.perf_counter()
    db = sliding_pdb.load(5, ranked=True)
    loaded = time.perf_counter() - start
    checked = check_bounds(db, args.check_walks, 60, 24)
    bound = {i.ident: start_bound(i.tiles, db) for i in instances}
    steps = {i.ident: (int(i.optimal or 0) - bound[i.ident]) // 2 + 1 for i in instances}
    solved = [i for i in instances if latest.get(i.ident, {}).get("status") == "solved"]
    a, b, factors = fit([(steps[i.ident], int(latest[i.ident]["nodes"])) for i in solved])
    cpu = sum(float(r["cpu_s"]) for r in latest.values())
    rate = sum(int(r["nodes"]) for r in latest.values()) / cpu
    spread = sorted(factors)
    lines = [
        "# Korf & Felner's 24-puzzles: projected cost of the boards `pdb-6666` has not solved",
        "",
        f"Tables loaded in {loaded:.1f} s. Start bounds checked against the search's iteration counts "
        f"on {checked} random 60-move walks: all agree. Fit over the {len(solved)} boards solved: "
        f"log(nodes) = {a:.2f} + {b:.3f} x iterations (each iteration {math.exp(b):.1f}x the nodes of "
        f"the one before). Leave-one-out, projected / measured nodes on the boards solved: median "
        f"{spread[len(spread) // 2]:.2f}, from {spread[0]:.2f} to {spread[-1]:.2f}. Node rate of the "
        f"attempts: {rate / 1e6:.2f} M nodes per CPU second.",
        "",
        "| id | optimum | start bound | iterations | nodes (measured, or projected) | CPU s (measured, or "
        "projected) | latest attempt |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    order = sorted(instances, key=lambda i: (steps[i.ident], int(i.ident)))
    for inst in order:
        r = latest.get(inst.ident)
        done = r is not None and r["status"] == "solved"
        nodes = int(r["nodes"]) if done else math.exp(a + b * steps[inst.ident])
        seconds = float(r["cpu_s"]) if done else nodes / rate
        tried = (
            "not attempted"
            if r is None
            else f"{r['status']}, {r['cpu_s']} CPU s"
            if not done
            else "solved (verified, optimal)"
        )
        mark = "" if done else "~"
        lines.append(
            f"| {inst.ident} | {inst.optimal} | {bound[inst.ident]} | {steps[inst.ident]} | "
            f"{mark}{nodes:,.0f} | {mark}{seconds:,.0f} | {tried} |"
        )
    lines += [
        "",
        "~: projected. A board stopped unsolved after T CPU seconds needs more than T whatever its "
        "projection says. Nodes are states expanded.",
    ]
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
