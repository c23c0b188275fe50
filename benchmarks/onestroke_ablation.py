"""What each pruning test of the default one-stroke search buys: the search with one test switched off.

Levels: generated ones and candidates derived from them (start moved, two cells
blocked, two opened) plus random-obstacle grids, all 18x18. Each configuration
runs under the same node cap; a level is "decided" when the search finds a path
or proves there is none within it.

Usage: nice .venv/bin/python -m benchmarks.onestroke_ablation [--count 10] [--node-limit 200000]
Writes benchmarks/results/onestroke_ablation.md.
"""

from __future__ import annotations

import random
import time

from benchmarks.harness import RESULTS, machine_line, parser
from benchmarks.onestroke_common import KIND
from benchmarks.onestroke_generated import toggle_pair
from packsolve.budget import Budget, BudgetExhausted
from packsolve.puzzles.hamilton.prune import (
    PRUNE_ALL,
    PRUNE_CUT,
    PRUNE_DEAD,
    PRUNE_DEGREE,
    PRUNE_FORCED,
    PRUNE_PARITY,
    PRUNE_PROBE,
    pruned_search,
)
from packsolve.puzzles.onestroke.generate import generate, move_start
from packsolve.puzzles.onestroke.kind import problem

CONFIGS = {
    "all tests + portfolio (default)": (PRUNE_ALL, True),
    "one complete run (no restarts, no end splitting)": (PRUNE_ALL, False),
    "no degree relaxation": (PRUNE_ALL & ~PRUNE_DEGREE, True),
    "no forced edges": (PRUNE_ALL & ~PRUNE_FORCED, True),
    "no probing of the ends' roots": (PRUNE_ALL & ~PRUNE_PROBE, True),
    "no cut vertices": (PRUNE_ALL & ~PRUNE_CUT, True),
    "no parity": (PRUNE_ALL & ~PRUNE_PARITY, True),
    "connectivity + dead ends only": (PRUNE_DEAD, True),
}


def obstacles(side: int, density: float, rng: random.Random) -> dict:
    rows = [["#" if rng.random() < density else "." for _ in range(side)] for _ in range(side)]
    cells = [(r, c) for r in range(side) for c in range(side) if rows[r][c] == "."]
    black = sum((r + c) % 2 == 0 for r, c in cells)
    ok = {0, 1} if 2 * black == len(cells) else ({0} if 2 * black > len(cells) else {1})
    r, c = rng.choice([x for x in cells if (x[0] + x[1]) % 2 in ok])
    rows[r][c] = "S"
    return {"kind": "onestroke", "grid": ["".join(row) for row in rows]}


def suite(count: int, seed: int) -> dict[str, list[dict]]:
    rng = random.Random(seed)
    made = generate("18x18", count, seed, keep=(0.3, 1.0))
    return {
        "generated": made,
        "start moved": [lv for lv in (move_start(m, rng) for m in made) if lv],
        "2 cells blocked": [lv for lv in (toggle_pair(m, ".", "#", rng) for m in made) if lv],
        "2 cells opened": [lv for lv in (toggle_pair(m, "#", ".", rng) for m in made) if lv],
        "random obstacles": [obstacles(18, rng.choice([0.02, 0.05, 0.1]), rng) for _ in range(count)],
    }


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--count", type=int, default=10)
    ap.add_argument("--node-limit", type=int, default=200_000)
    ap.add_argument("--seed", type=int, default=99)
    args = ap.parse_args()
    families = suite(args.count, args.seed)
    header = "| configuration | " + " | ".join(families) + " | total nodes | seconds |"
    out = [
        "# One-stroke: ablation of the pruning tests",
        "",
        f"18x18 levels, {args.count} per family (seed {args.seed}); node cap {args.node_limit:,} per level. "
        f"Cells: decided (solved or proved none) / levels. Machine: {machine_line('one used')}.",
        "",
        header,
        "|" + " --- |" * (len(families) + 3),
    ]
    for name, (prune, restarts) in CONFIGS.items():
        cells, nodes, t0 = [], 0, time.perf_counter()
        for levels in families.values():
            decided = 0
            for data in levels:
                p, _ = problem(KIND.parse(data))
                budget = Budget(node_limit=args.node_limit)
                try:
                    pruned_search(p, budget, prune=prune, restarts=restarts)
                    decided += 1
                except BudgetExhausted:
                    pass
                nodes += budget.nodes
            cells.append(f"{decided}/{len(levels)}")
        out.append(f"| {name} | " + " | ".join(cells) + f" | {nodes:,} | {time.perf_counter() - t0:.1f} |")
        print(out[-1], flush=True)
    (RESULTS / "onestroke_ablation.md").write_text("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
