"""The hardest one-stroke levels we found, default heuristic against CP-SAT (one worker), one run.

`results/onestroke_hard_levels.jsonl` holds levels found by random hunting
(tens of thousands of generated, start-moved, cell-toggled and random-obstacle levels
up to 22x22): each once took the pruned search more than a second or hit the
20 s limit during development, or needed search to prove it impossible. They
are the adversarial end of the distribution, kept as a regression set; hunted-17..19
are still 20 s timeouts for the pruned search (CP-SAT refutes them in 0.1 s), which
the default `portfolio` hands to CP-SAT after 400 nodes per cell; hunted-20 (found
2026-12-01) was decided by neither within 30 s.

Usage: nice .venv/bin/python benchmarks/onestroke_hard.py [--time-limit 20]
Writes benchmarks/results/onestroke_hard.md.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import onestroke_common
from onestroke_common import KIND, RESULTS, fmt_run, machine, run, warm_up

HEURISTICS = ["portfolio", "prune", "cpsat"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--time-limit", type=float, default=20.0)
    ap.add_argument("--cpu", action="store_true", help="report process CPU seconds instead of wall seconds")
    ap.add_argument("--out", default=str(RESULTS / "onestroke_hard.md"))
    args = ap.parse_args()
    if args.cpu:
        onestroke_common.CLOCK = time.process_time
    warm_up(HEURISTICS)
    rows, totals, decided = [], dict.fromkeys(HEURISTICS, 0.0), dict.fromkeys(HEURISTICS, 0)
    for line in (RESULTS / "onestroke_hard_levels.jsonl").read_text().splitlines():
        data = json.loads(line)
        level = KIND.parse(data)
        cells = [data["name"], f"{len(data['grid'][0])}x{len(data['grid'])}", str(len(level.cells()))]
        for h in HEURISTICS:
            r = run(level, h, args.time_limit)
            totals[h] += r.seconds
            decided[h] += r.status in ("solved", "no_solution")
            cells.append(fmt_run(r))
        rows.append(cells)
        print(" | ".join(cells), flush=True)
    out = [
        "# One-stroke: the hardest levels found (regression set)",
        "",
        f"{len(rows)} levels from `onestroke_hard_levels.jsonl`; limit {args.time_limit:g} s; one process, "
        f"CP-SAT with one worker; runs under 1 s are the fastest of 3. Machine: {machine()}. "
        f"Seconds: {'process CPU' if args.cpu else 'wall'}; "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average {os.getloadavg()[0]:.1f}.",
        "",
        "| heuristic | decided | total seconds |",
        "| --- | --- | --- |",
    ]
    out += [f"| {h} | {decided[h]} / {len(rows)} | {totals[h]:.2f} |" for h in HEURISTICS]
    out += [
        "",
        "| level | size | cells | " + " | ".join(HEURISTICS) + " |",
        "| --- | --- | --- | " + " | ".join("---" for _ in HEURISTICS) + " |",
    ]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    Path(args.out).write_text("\n".join(out) + "\n")
    print("\n".join(out[:9]))


if __name__ == "__main__":
    main()
