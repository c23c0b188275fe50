"""Generated one-stroke levels up to 22x22: every heuristic and CP-SAT (one worker) under one time limit.

Feasible levels come from ``packsolve generate onestroke`` (backbite paths cut
at a random length). Candidate infeasible ones are derived from them three
ways that keep the colour counts possible, so parity alone cannot refute them:
the start moved to another cell of the right colour, two open cells of
opposite colours blocked, two blocked cells of opposite colours opened. Which
of those really have no path is whatever a solver proves (both usually agree).

Usage: nice .venv/bin/python -m benchmarks.onestroke_generated [--time-limit 20] [--seed 2026]
Writes benchmarks/results/onestroke_generated.md and onestroke_generated_levels.jsonl.
"""

from __future__ import annotations

import json
import random
from typing import Any

from benchmarks.harness import RESULTS, machine_line, parser
from benchmarks.onestroke_common import KIND, Run, fmt_run, run, warm_up
from packsolve.puzzles.onestroke.generate import generate, move_start

HEURISTICS = ["prune", "warnsdorff", "plain", "cpsat"]
SIZES = ["6x6", "10x10", "14x14", "18x18", "22x22"]


def toggle_pair(level: dict[str, Any], old: str, new: str, rng: random.Random) -> dict[str, Any] | None:
    """Return the level with one cell of each colour turned from old to new, or None if impossible."""
    rows = [list(row) for row in level["grid"]]
    for colour in (0, 1):
        cells = [
            (r, c)
            for r, row in enumerate(rows)
            for c, ch in enumerate(row)
            if ch == old and (r + c) % 2 == colour
        ]
        if not cells:
            return None
        r, c = rng.choice(cells)
        rows[r][c] = new
    return {"kind": "onestroke", "grid": ["".join(row) for row in rows]}


def levels(seed: int, per_size: int) -> list[tuple[str, str, dict[str, Any]]]:
    """Return (name, family, level JSON): per size, feasible ones and one derived candidate of each family."""
    rng = random.Random(seed)
    out = []
    for size in SIZES:
        made = generate(size, per_size, seed=rng.randrange(2**31), keep=(0.6, 1.0))
        for i, level in enumerate(made):
            out.append((f"{size}-{i}", "generated", level))
        derived = [
            ("moved-start", move_start(made[0], rng)),
            ("blocked-2", toggle_pair(made[1 % per_size], ".", "#", rng)),
            ("opened-2", toggle_pair(made[2 % per_size], "#", ".", rng)),
        ]
        out += [(f"{size}-{family}", family, lv) for family, lv in derived if lv is not None]
    return out


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--time-limit", type=float, default=20.0)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--per-size", type=int, default=3)
    args = ap.parse_args()
    warm_up(HEURISTICS)
    suite = levels(args.seed, args.per_size)
    RESULTS.mkdir(parents=True, exist_ok=True)
    with (RESULTS / "onestroke_generated_levels.jsonl").open("w") as f:
        for name, family, level in suite:
            f.write(json.dumps({**level, "name": name, "family": family}) + "\n")
    results: dict[str, dict[str, Run]] = {}
    rows = []
    for name, family, data in suite:
        level = KIND.parse(data)
        results[name] = {h: run(level, h, args.time_limit) for h in HEURISTICS}
        cells = [name, family, str(len(level.cells()))] + [fmt_run(results[name][h]) for h in HEURISTICS]
        rows.append(cells)
        print(" | ".join(cells), flush=True)
    decided = {"solved", "no_solution"}
    out = [
        f"# One-stroke: generated levels up to 22x22, {args.time_limit:g} s limit",
        "",
        f"Seed {args.seed}, {args.per_size} generated levels per size plus three derived candidates of "
        f"possibly infeasible levels per size (levels in `onestroke_generated_levels.jsonl`). One process, "
        f"one core, each solver under a real `Budget(time_limit={args.time_limit:g})`; CP-SAT with one "
        f"worker; runs under 1 s are the fastest of 3. Every solution checked with `verify`. "
        f"Machine: {machine_line('one used')}.",
        "",
        "| heuristic | solved | proved infeasible | timeout | wrong | total seconds |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for h in HEURISTICS:
        runs = [results[name][h] for name, _, _ in suite]
        count = {s: sum(r.status == s for r in runs) for s in ("solved", "no_solution", "timeout", "wrong")}
        total = sum(r.seconds for r in runs)
        counts = " | ".join(str(count[s]) for s in ("solved", "no_solution", "timeout", "wrong"))
        out.append(f"| {h} | {counts} | {total:.2f} |")
    both = [
        n
        for n, _, _ in suite
        if results[n]["prune"].status in decided and results[n]["cpsat"].status in decided
    ]
    agree = all(results[n]["prune"].status == results[n]["cpsat"].status for n in both)
    out += [
        "",
        f"prune and CP-SAT agree on every level both decided: {'yes' if agree else 'NO'} "
        f"({len(both)} levels).",
        "",
        "Per level: nodes / seconds (CP-SAT nodes are its branches); TIMEOUT at the limit.",
        "",
        "| level | family | cells | " + " | ".join(HEURISTICS) + " |",
        "| --- | --- | --- | " + " | ".join("---" for _ in HEURISTICS) + " |",
    ]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    (RESULTS / "onestroke_generated.md").write_text("\n".join(out) + "\n")
    print("\n".join(out[:14]))


if __name__ == "__main__":
    main()
