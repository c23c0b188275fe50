"""Hunt for one-stroke levels the default heuristic finds hard: random candidates until time runs out.

Candidates, 10x10 to 22x22: generated levels (keeping 20-100 % of the path),
the same with the start moved, two cells blocked, two cells opened, start
moved and two cells blocked, and random-obstacle grids. Every candidate is
solved with the default heuristic under a 20 s Budget; found paths are checked
with verify. Prints each level that took over a second, timed out, or needed
more than 50 nodes to refute, then a summary. Levels worth keeping go into
results/onestroke_hard_levels.jsonl by hand.

Usage: nice .venv/bin/python -m benchmarks.onestroke_hunt [--seconds 300] [--seed 21]
"""

from __future__ import annotations

import json
import random
import time
from collections import Counter

from benchmarks.harness import parser
from benchmarks.onestroke_ablation import obstacles
from benchmarks.onestroke_common import KIND
from benchmarks.onestroke_generated import toggle_pair
from packsolve.budget import Budget
from packsolve.puzzles.onestroke.generate import generate, move_start


def candidates(rng: random.Random) -> list[dict]:
    side = rng.choice([10, 12, 14, 16, 18, 20, 22])
    keep = rng.choice([0.2, 0.4, 0.6, 0.9])
    level = generate(f"{side}x{side}", 1, rng.randrange(10**9), keep=(keep, 1.0))[0]
    moved = move_start(level, rng)
    found = [
        move_start(level, rng),
        toggle_pair(level, ".", "#", rng),
        toggle_pair(level, "#", ".", rng),
        obstacles(side, rng.choice([0.01, 0.03, 0.06, 0.1]), rng),
        toggle_pair(moved, ".", "#", rng) if moved else None,
    ]
    return [lv for lv in found if lv]


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--seconds", type=float, default=300)
    ap.add_argument("--seed", type=int, default=21)
    ap.add_argument("--time-limit", type=float, default=20.0)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    solve = KIND.solvers[KIND.default]
    tally: Counter[str] = Counter()
    stop = time.monotonic() + args.seconds
    while time.monotonic() < stop:
        for data in candidates(rng):
            level = KIND.parse(data)
            t0 = time.perf_counter()
            out = solve(level, Budget(time_limit=args.time_limit))
            seconds = time.perf_counter() - t0
            status = str(out.status)
            if status == "solved" and KIND.verify(level, out.solution) is not None:
                status = "wrong"
            tally[status] += 1
            if (
                status not in ("solved", "no_solution")
                or seconds > 1
                or (status == "no_solution" and out.nodes > 50)
            ):
                cells = len(level.cells())
                print(status, cells, out.nodes, f"{seconds:.3f}", json.dumps(data["grid"]), flush=True)
    print("checked", sum(tally.values()), dict(tally))


if __name__ == "__main__":
    main()
