"""The default one-stroke solver of two source trees, level by level, on the real, generated and growth sets.

The no-regression check of a change to the pruned search: each tree's `portfolio`
solves every level of the 75 real levels, the generated set
(`results/onestroke_generated_levels.jsonl`) and the growth set (`onestroke_growth`'s
levels, --per-size 5, seed 7) in a child process of its own (PYTHONPATH at that
tree's src), the fastest of --repeats solves in process CPU seconds; the children
alternate old, new, old, new ... for --rounds rounds and each level keeps its
fastest time, so the load of a shared machine falls on both alike.

Usage: nice .venv/bin/python -m benchmarks.onestroke_compare --old ../main [--rounds 3] [--repeats 15]
Writes benchmarks/results/onestroke_compare.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.harness import RESULTS, ROOT, machine_line, markdown_table, parser
from benchmarks.harness.machine import shown_path

SLOWER = 1.10  # the bound: no level more than 10 % slower


def levels() -> list[dict[str, object]]:
    """Return every level of the three sets as {"name", "set", "grid"}."""
    from benchmarks.onestroke_common import read_real_levels
    from packsolve.puzzles.onestroke.generate import generate

    out: list[dict[str, object]] = [
        {"name": name, "set": "real", "grid": rows} for name, rows, _ in read_real_levels()
    ]
    for line in (RESULTS / "onestroke_generated_levels.jsonl").read_text().splitlines():
        data = json.loads(line)
        out.append({"name": data["name"], "set": "generated", "grid": data["grid"]})
    for side in range(6, 23, 2):  # onestroke_growth's sizes and seeds
        for i, data in enumerate(generate(f"{side}x{side}", 5, seed=7 * 1000 + side)):
            out.append({"name": f"{side}x{side}-{i}", "set": "growth", "grid": data["grid"]})
    return out


def worker(levels_file: str, out_file: str, repeats: int) -> None:
    """Solve every level with the packsolve this process imports; write name -> [status, nodes, CPU s]."""
    from packsolve.budget import Budget
    from packsolve.puzzles import get_kind

    kind = get_kind("onestroke")
    solve = kind.solvers["portfolio"]
    solve(kind.parse({"grid": ["S..", "..."]}), Budget(time_limit=10))  # imports before the clock
    result = {}
    for line in Path(levels_file).read_text().splitlines():
        data = json.loads(line)
        level, best = kind.parse(data), float("inf")
        for _ in range(repeats):
            t0 = time.process_time()
            out = solve(level, Budget(time_limit=60))
            best = min(best, time.process_time() - t0)
        result[data["name"]] = [str(out.status), out.nodes, best]
    Path(out_file).write_text(json.dumps(result))


def measure(tree: Path, levels_file: Path, repeats: int) -> dict[str, list]:
    """Run the worker against tree's sources in a child process; return its results."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        env = {**os.environ, "PYTHONPATH": f"{tree / 'src'}{os.pathsep}{ROOT}"}
        args = [sys.executable, "-m", "benchmarks.onestroke_compare", "--worker", str(levels_file), out.name]
        subprocess.run([*args, "--repeats", str(repeats)], env=env, cwd=ROOT, check=True)
        return json.loads(Path(out.name).read_text())


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--old", type=Path, help="the other tree (a checkout with its C extension built)")
    ap.add_argument("--new", type=Path, default=ROOT)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)  # the children's entry point
    ap.add_argument("--out", type=Path, default=RESULTS / "onestroke_compare.md")
    args = ap.parse_args()
    if args.worker:
        worker(args.worker[0], args.worker[1], args.repeats)
        return
    if args.old is None:
        ap.error("--old is required: the checkout to compare with, e.g. --old ../main")
    suite = levels()
    best: dict[str, dict[str, list]] = {"old": {}, "new": {}}
    with tempfile.TemporaryDirectory() as tmp:
        levels_file = Path(tmp) / "levels.jsonl"
        levels_file.write_text("".join(json.dumps(d) + "\n" for d in suite))
        for _ in range(args.rounds):
            for which, tree in (("old", args.old), ("new", args.new)):
                for name, run in measure(tree, levels_file, args.repeats).items():
                    kept = best[which].setdefault(name, run)
                    kept[2] = min(kept[2], run[2])
    print(report(args, suite, best["old"], best["new"]))


def report(
    args: argparse.Namespace, suite: list[dict[str, object]], old: dict[str, list], new: dict[str, list]
) -> str:
    """Write and return the Markdown report: totals per set, then every level."""
    rows, totals = [], {}
    for d in suite:
        name, o, n = str(d["name"]), old[str(d["name"])], new[str(d["name"])]
        t = totals.setdefault(str(d["set"]), [0.0, 0.0, 0, 0.0])
        t[0], t[1] = t[0] + o[2], t[1] + n[2]
        ratio = n[2] / o[2] if o[2] > 0 else 1.0
        t[2] += ratio > SLOWER
        t[3] = max(t[3], ratio)
        same = "" if (o[0], o[1]) == (n[0], n[1]) else " (differs)"
        rows.append(
            [
                d["set"],
                name,
                f"{o[0]} {o[1]:,} / {o[2]:.4f}",
                f"{n[0]} {n[1]:,} / {n[2]:.4f}{same}",
                f"{ratio:.2f}",
            ]
        )
    summary = [[s, f"{t[0]:.3f}", f"{t[1]:.3f}", t[2], f"{t[3]:.2f}"] for s, t in totals.items()]
    text = "\n\n".join(
        [
            "# One-stroke: the default solver of two trees, level by level",
            f"`portfolio`, old = {shown_path(args.old)}, new = {shown_path(args.new)}; fastest of "
            f"{args.repeats} solves x {args.rounds} alternating rounds, process CPU seconds. "
            f"Machine: {machine_line('one used')}.",
            markdown_table(
                ["set", "old total s", "new total s", f"levels new/old > {SLOWER}", "worst new/old"], summary
            ),
            markdown_table(
                ["set", "level", "old: status nodes / s", "new: status nodes / s", "new/old"], rows
            ),
        ]
    )
    args.out.write_text(text + "\n")
    return text


if __name__ == "__main__":
    main()
