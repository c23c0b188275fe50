"""How the pruned one-stroke search scales: nodes and node throughput against level size, as a plot.

For each size from 6x6 to 22x22 it generates levels (``packsolve generate``,
fixed seed) and solves them with the default heuristic under a real Budget,
CP-SAT (one worker) beside it for the time panel.

Usage: nice .venv/bin/python -m benchmarks.onestroke_growth [--per-size 8] [--time-limit 20]
Writes benchmarks/results/onestroke_growth.png and onestroke_growth.md.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import matplotlib

from benchmarks.harness import RESULTS, cpu_model, machine_line, parser, publish

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from benchmarks.onestroke_common import KIND, Run, run, warm_up
from packsolve.budget import Budget
from packsolve.puzzles.onestroke.generate import generate

SIDES = list(range(6, 23, 2))


def throughput(level: Any, seconds: float = 0.3) -> float:
    """Return nodes per second of the default solver on level, solving it again and again for `seconds`.

    One solve of a generated level takes milliseconds, below what one timing on a
    shared machine can resolve; repeating it gives a stable rate, setup included.
    """
    solve = KIND.solvers["prune"]
    nodes, t0 = 0, time.perf_counter()
    while True:
        nodes += solve(level, Budget(time_limit=60)).nodes
        elapsed = time.perf_counter() - t0
        if elapsed >= seconds:
            return nodes / elapsed


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--per-size", type=int, default=8)
    ap.add_argument("--time-limit", type=float, default=20.0)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--no-cpsat", action="store_true")
    args = ap.parse_args()
    heuristics = ["prune"] + ([] if args.no_cpsat else ["cpsat"])
    warm_up(heuristics)
    points = []  # (cells, heuristic, Run)
    by_side: dict[int, list[tuple[int, str, Run]]] = {}
    rate_of: dict[int, list[tuple[int, float]]] = {}  # side -> (cells, nodes per second)
    for side in SIDES:
        for data in generate(f"{side}x{side}", args.per_size, seed=args.seed * 1000 + side):
            level = KIND.parse(data)
            for h in heuristics:
                point = (len(level.cells()), h, run(level, h, args.time_limit))
                points.append(point)
                by_side.setdefault(side, []).append(point)
            rate_of.setdefault(side, []).append((len(level.cells()), throughput(level)))
        print(side, flush=True)
    plot(points, rate_of)
    table(args, heuristics, points, by_side, rate_of)


def plot(points: list[tuple[int, str, Run]], rate_of: dict[int, list[tuple[int, float]]]) -> None:
    """Draw nodes, throughput and seconds against level size into onestroke_growth.png."""
    prune = [(c, r) for c, h, r in points if h == "prune"]
    timed = [pair for side in SIDES for pair in rate_of[side]]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    ax = axes[0]
    ax.scatter([c for c, _ in prune], [r.nodes for _, r in prune], s=12, label="prune: nodes")
    ax.plot([c for c, _ in prune], [c for c, _ in prune], "k:", lw=1, label="nodes = cells (no backtracking)")
    ax.set_yscale("log")
    ax.set_xlabel("open cells")
    ax.set_ylabel("nodes expanded")
    ax.set_title("Node count against level size")
    ax.legend()
    ax = axes[1]
    ax.scatter([c for c, _ in timed], [rate for _, rate in timed], s=12, color="tab:green")
    ax.set_ylim(bottom=0)
    ax.set_xlabel("open cells")
    ax.set_ylabel("nodes / second")
    ax.set_title("Throughput of the pruned solver (whole solve calls)")
    ax = axes[2]
    for h, colour in (("prune", "tab:blue"), ("cpsat", "tab:red")):
        pts = [(c, r.seconds) for c, hh, r in points if hh == h]
        if pts:
            ax.scatter([c for c, _ in pts], [s for _, s in pts], s=12, color=colour, label=h)
    ax.set_yscale("log")
    ax.set_xlabel("open cells")
    ax.set_ylabel("seconds")
    ax.set_title("Time per level")
    ax.legend()
    sides = f"{SIDES[0]}x{SIDES[0]}..{SIDES[-1]}x{SIDES[-1]}"
    fig.suptitle(f"One-stroke, generated levels {sides} — {cpu_model()}")
    fig.tight_layout()
    RESULTS.mkdir(parents=True, exist_ok=True)
    fig.savefig(RESULTS / "onestroke_growth.png", dpi=110)


def table(
    args: argparse.Namespace,
    heuristics: list[str],
    points: list[tuple[int, str, Run]],
    by_side: dict[int, list[tuple[int, str, Run]]],
    rate_of: dict[int, list[tuple[int, float]]],
) -> None:
    """Write and print the table of onestroke_growth.md: per side, prune's nodes, seconds and rate."""
    prune = [(c, r) for c, h, r in points if h == "prune"]
    out = [
        "# One-stroke: growth of the pruned search with level size",
        "",
        f"{args.per_size} generated levels per side (seed {args.seed}), limit {args.time_limit:g} s. "
        f"Plot: `onestroke_growth.png`. Machine: {machine_line('one used')}.",
        "",
        "| side | cells (median) | prune nodes (median / max) | prune s (total) | prune nodes/s (median) |"
        + (" cpsat s (total) |" if not args.no_cpsat else ""),
        "| --- | --- | --- | --- | --- |" + (" --- |" if not args.no_cpsat else ""),
    ]
    for side in SIDES:
        mine = [(c, r) for c, h, r in by_side[side] if h == "prune"]
        rate = f"{statistics.median(r for _, r in rate_of[side]):,.0f}"
        line = (
            f"| {side} | {statistics.median(c for c, _ in mine):.0f} | "
            f"{statistics.median(r.nodes for _, r in mine):.0f} / {max(r.nodes for _, r in mine)} | "
            f"{sum(r.seconds for _, r in mine):.3f} | {rate} |"
        )
        if not args.no_cpsat:
            cp = [r.seconds for c, h, r in by_side[side] if h == "cpsat"]
            line += f" {sum(cp):.2f} |"
        out.append(line)
    statuses = {h: sum(r.status in ("solved",) for c, hh, r in points if hh == h) for h in heuristics}
    out += ["", "Solved: " + ", ".join(f"{h} {n}/{len(prune)}" for h, n in statuses.items())]
    publish("\n".join(out) + "\n", RESULTS / "onestroke_growth.md")


if __name__ == "__main__":
    main()
