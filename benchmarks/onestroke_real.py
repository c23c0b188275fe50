"""The 75 real one-stroke levels: every heuristic and CP-SAT in one run, each solution verified.

Usage: nice .venv/bin/python -m benchmarks.onestroke_real [--time-limit 20]
Writes benchmarks/results/onestroke_real.md.
"""

from __future__ import annotations

from benchmarks.harness import RESULTS, machine_line, parser
from benchmarks.onestroke_common import KIND, fmt_run, read_real_levels, run, warm_up

HEURISTICS = ["prune", "warnsdorff", "plain", "cpsat"]


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--time-limit", type=float, default=20.0)
    args = ap.parse_args()
    warm_up(HEURISTICS)
    levels = read_real_levels()
    rows, totals, solved = [], dict.fromkeys(HEURISTICS, 0.0), dict.fromkeys(HEURISTICS, 0)
    for name, grid, paths in levels:
        level = KIND.parse({"grid": grid})
        cells = [name, str(len(level.cells())), str(paths)]
        for h in HEURISTICS:
            best = run(level, h, args.time_limit)
            totals[h] += best.seconds
            solved[h] += best.status == "solved" and bool(best.verified)
            cells.append(fmt_run(best))
        rows.append(cells)
        print(" | ".join(cells), flush=True)
    out = [
        "# One-stroke: the 75 real levels",
        "",
        f"Sources: `../shared/benchmarks/onestroke/*.txt`. Time limit {args.time_limit:g} s per level, "
        f"fastest of 3 runs for runs under 1 s, one process, every solver under a real `Budget`; every "
        f"solution checked with `verify`. Machine: {machine_line('one used')}.",
        "",
        "| heuristic | solved + verified | total seconds | CP-SAT seconds / these |",
        "| --- | --- | --- | --- |",
    ]
    for h in HEURISTICS:
        ratio = totals["cpsat"] / totals[h] if totals[h] else float("inf")
        out.append(f"| {h} | {solved[h]} / {len(levels)} | {totals[h]:.3f} | {ratio:.3g} |")
    out += [
        "",
        "Per level: nodes / seconds (nodes of CP-SAT are its branches).",
        "",
        "| level | cells | paths | " + " | ".join(HEURISTICS) + " |",
        "| --- | --- | --- | " + " | ".join("---" for _ in HEURISTICS) + " |",
    ]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "onestroke_real.md").write_text("\n".join(out) + "\n")
    print("\n".join(out[:12]))


if __name__ == "__main__":
    main()
