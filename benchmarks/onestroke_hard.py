"""The hardest one-stroke levels we found, default heuristic against CP-SAT (one worker), one run.

`results/onestroke_hard_levels.jsonl` holds levels found by random hunting
(tens of thousands of generated, start-moved, cell-toggled and random-obstacle levels
up to 22x22): each once took the pruned search more than a second or hit the
20 s limit during development, or needed search to prove it impossible. They
are the adversarial end of the distribution, kept as a regression set. hunted-17..19
were 20 s timeouts for the pruned search until forced chains could not close and the
degree test ran again on what forced edges leave (2026-12-01): now every end of
each is refuted at its root. hunted-20..22 (found 2026-12-01) were decided by neither
the default `portfolio` nor CP-SAT within 30 s, and CP-SAT refuted hunted-23..26 faster,
until the ends' root checks probed (each open edge tried removed and forced): now every
end of hunted-20..26 is refuted at its root, and CP-SAT still decides none of hunted-20..22.

Usage: nice .venv/bin/python -m benchmarks.onestroke_hard [--time-limit 20]
Writes benchmarks/results/onestroke_hard.md.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from benchmarks import onestroke_common
from benchmarks.harness import RESULTS, machine_line, parser
from benchmarks.onestroke_common import KIND, fmt_run, run, warm_up

HEURISTICS = ["portfolio", "prune", "cpsat"]


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--time-limit", type=float, default=20.0)
    ap.add_argument("--cpu", action="store_true", help="report process CPU seconds instead of wall seconds")
    ap.add_argument("--out", default=str(RESULTS / "onestroke_hard.md"))
    ap.add_argument("--only", default="", help="comma-separated level names (default: every level)")
    args = ap.parse_args()
    only = {name for name in args.only.split(",") if name}
    if args.cpu:
        onestroke_common.CLOCK = time.process_time
    warm_up(HEURISTICS)
    rows, totals, decided = [], dict.fromkeys(HEURISTICS, 0.0), dict.fromkeys(HEURISTICS, 0)
    for line in (RESULTS / "onestroke_hard_levels.jsonl").read_text().splitlines():
        data = json.loads(line)
        if only and data["name"] not in only:
            continue
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
        f"CP-SAT with one worker; runs under 1 s are the fastest of 3. Machine: {machine_line('one used')}. "
        f"Seconds: {'process CPU' if args.cpu else 'wall'}.",
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
