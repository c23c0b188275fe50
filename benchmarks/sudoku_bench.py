"""Sudoku solver loop against Norvig's solver and Glucose 4, on the public hard collections.

Run from the repository root (python-sat needed for the Glucose column):

    PYTHONPATH=src:benchmarks nice .venv/bin/python benchmarks/sudoku_bench.py

Only the solver loop is timed: puzzles are read and parsed first, then each
solver gets one puzzle at a time and the clock runs around that call alone.
Every answer is checked with the kind's verify (Norvig's and Glucose's too);
an answer that fails it does not count as solved. packsolve's heuristics
count solutions up to two (they prove uniqueness); Norvig and Glucose stop at
the first solution. Writes benchmarks/results/sudoku.md and sudoku_totals.png.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from public_data import public_data

from packsolve.budget import Budget
from packsolve.outcome import Status
from packsolve.puzzles.sudoku.kind import KIND, Sudoku, parse, read_lines

SETS = {
    "top95": "norvig_top95.txt",
    "hardest11": "norvig_hardest11.txt",
    "top1465": "tdoku_puzzles3_magictour_top1465.txt",
    "forum1106": "tdoku_puzzles6_forum_hardest_1106.txt",
    "17clue": "royle_17clue_49151_norvig.txt",
}
RESULTS = Path(__file__).resolve().parent / "results"
SOLVERS = ("propagate", "dlx", "plain", "norvig", "glucose")


@dataclass(frozen=True)
class Row:
    """One (set, solver) line of the table."""

    set: str
    solver: str
    puzzles: int
    solved: int
    timeouts: int
    total_s: float
    cpu_s: float
    mean_ms: float
    max_ms: float
    nodes: int


def read_set(name: str) -> list[Sudoku]:
    """Return the puzzles of a public set, read by the kind's own line reader."""
    text = public_data("sudoku", SETS[name]).read_text()
    levels = []
    for _, item in read_lines(text):
        if isinstance(item, Exception):
            raise SystemExit(f"{name}: {item}")
        levels.append(parse(item))
    return levels


def packsolve_solver(heuristic: str, limit: float | None) -> Callable[[Sudoku], tuple[str | None, int, bool]]:
    solve = KIND.solvers[heuristic]

    def run(level: Sudoku) -> tuple[str | None, int, bool]:
        out = solve(level, Budget(time_limit=limit))
        return out.solution, out.nodes, out.status == Status.TIMEOUT

    return run


def peer_solver(peer: object) -> Callable[[Sudoku], tuple[str | None, int, bool]]:
    def run(level: Sudoku) -> tuple[str | None, int, bool]:
        solution = peer.solve(level.grid)  # type: ignore[attr-defined]
        return solution, peer.nodes, False  # type: ignore[attr-defined]

    return run


def measure(set_name: str, solver: str, levels: list[Sudoku], plain_limit: float) -> Row:
    """Return the row of one solver on one set; the clock runs around each solve call only."""
    peer = None
    if solver == "norvig":
        from peers.sudoku_norvig import Norvig

        peer = Norvig()
        run = peer_solver(peer)
    elif solver == "glucose":
        from peers.sudoku_glucose import Glucose

        peer = Glucose()  # the CNF is built once per set, outside the clock
        run = peer_solver(peer)
    else:
        run = packsolve_solver(solver, plain_limit if solver == "plain" else None)
    times, nodes, solved, timeouts = [], 0, 0, 0
    cpu0 = time.process_time()
    for level in levels:
        if solver == "norvig":
            peer.nodes = 0  # type: ignore[union-attr]
        t0 = time.perf_counter()
        solution, n, timed_out = run(level)
        times.append(time.perf_counter() - t0)
        nodes += n
        timeouts += timed_out
        if solution is not None and KIND.verify(level, solution) is None:
            solved += 1
    cpu = time.process_time() - cpu0
    if solver == "glucose":
        peer.close()  # type: ignore[union-attr]
    return Row(
        set_name,
        solver,
        len(levels),
        solved,
        timeouts,
        sum(times),
        cpu,
        statistics.fmean(times) * 1e3,
        max(times) * 1e3,
        nodes,
    )


def table(rows: list[Row]) -> str:
    lines = [
        "| set | solver | puzzles | solved | timeouts | total s | cpu s | mean ms | max ms | nodes |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| {r.set} | {r.solver} | {r.puzzles} | {r.solved} | {r.timeouts} | {r.total_s:.3f} | "
            f"{r.cpu_s:.3f} | {r.mean_ms:.3f} | {r.max_ms:.2f} | {r.nodes} |"
        )
    return "\n".join(lines)


def ratios(rows: list[Row], default: str) -> str:
    """Return, per set, how many times faster the default is than each peer (total time)."""
    lines = [f"| set | {default} total s | vs glucose | vs norvig |", "| --- | ---: | ---: | ---: |"]
    by = {(r.set, r.solver): r for r in rows}
    for name in dict.fromkeys(r.set for r in rows):
        ours = by.get((name, default))
        if ours is None:
            continue
        cells = []
        for peer in ("glucose", "norvig"):
            other = by.get((name, peer))
            cells.append(f"{other.total_s / ours.total_s:.1f}x" if other and ours.total_s else "-")
        lines.append(f"| {name} | {ours.total_s:.3f} | {cells[0]} | {cells[1]} |")
    return "\n".join(lines)


def plot(rows: list[Row], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sets = list(dict.fromkeys(r.set for r in rows))
    solvers = list(dict.fromkeys(r.solver for r in rows))
    by = {(r.set, r.solver): r.total_s for r in rows}
    fig, ax = plt.subplots(figsize=(9, 4.5))
    width = 0.8 / len(solvers)
    for k, solver in enumerate(solvers):
        xs = [i + k * width for i, s in enumerate(sets) if (s, solver) in by]
        ys = [by[(s, solver)] for s in sets if (s, solver) in by]
        ax.bar(xs, ys, width, label=solver)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(sets))], sets)
    ax.set_yscale("log")
    ax.set_ylabel("solver loop, total seconds (log)")
    ax.set_title("Sudoku: packsolve heuristics vs Norvig and Glucose 4")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default=",".join(SETS), help="comma-separated: " + ",".join(SETS))
    ap.add_argument("--solvers", default=",".join(SOLVERS))
    ap.add_argument("--plain-sets", default="hardest11,top95", help="sets on which plain runs at all")
    ap.add_argument("--plain-limit", type=float, default=0.5, help="seconds per puzzle for plain")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each small set; the fastest is kept")
    ap.add_argument("--out", default=str(RESULTS / "sudoku.md"))
    args = ap.parse_args(argv)
    rows = []
    plain_sets = set(args.plain_sets.split(","))
    for name in args.sets.split(","):
        levels = read_set(name)
        for solver in args.solvers.split(","):
            if solver == "plain" and name not in plain_sets:
                continue
            # Small sets finish in milliseconds, where one preemption by another job skews the
            # total: they are run several times and the fastest run is kept (the same for all).
            repeat = args.repeat if len(levels) <= 2000 and solver != "plain" else 1
            row = min(
                (measure(name, solver, levels, args.plain_limit) for _ in range(repeat)),
                key=lambda r: r.total_s,
            )
            rows.append(row)
            print(
                f"{name:10} {solver:10} {row.solved}/{row.puzzles} solved  {row.total_s:8.3f} s  "
                f"max {row.max_ms:8.2f} ms  nodes {row.nodes}",
                flush=True,
            )
    default = KIND.default
    report = [
        "# Sudoku: solver loop on the public hard collections",
        "",
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on this 2-core machine "
        "(shared with other jobs: compare rows of one run, not runs).",
        f"`{' '.join(sys.argv)}`",
        "",
        f"Default heuristic `{default}` against the peers (total time ratio, higher is better):",
        "",
        ratios(rows, default),
        "",
        table(rows),
        "",
        "Solved = answers that pass `verify`. packsolve's heuristics count solutions up to 2 "
        "(uniqueness proved); Norvig and Glucose stop at the first. total s sums the wall time of "
        "the solve calls alone; cpu s is the process CPU time of the whole loop, verify calls "
        "included. plain runs with a "
        f"{args.plain_limit:g} s limit per puzzle. Nodes: packsolve = search states expanded, "
        "Norvig = search calls, Glucose = SAT decisions (a fresh solver per run, learning only within "
        f"the set). Sets of up to 2000 puzzles: best of {args.repeat} runs per solver (plain: one run).",
    ]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(report) + "\n")
    plot(rows, out.with_name(out.stem + "_totals.png"))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
