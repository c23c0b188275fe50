"""Every heuristic on the 3x3 boards of algs4's 8-puzzle tests: all optimal, nodes per heuristic.

Usage: python -m benchmarks.sliding_8puzzle   (writes benchmarks/results/sliding_8puzzle.md)
The algs4 boards put the blank last; they are turned half a round and renumbered
into the blank-top-left goal, which keeps every optimal length.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

from benchmarks.harness import RESULTS, markdown_table, parser
from benchmarks.sliding_common import ALGS4, read_algs4, sliding_set
from packsolve.budget import Budget
from packsolve.puzzles import get_kind

HEURISTICS = ["plain", "astar", "idastar", "linear-conflict", "pdb", "pdb-663", "weighted"]


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--out", type=Path, default=RESULTS / "sliding_8puzzle.md")
    args = ap.parse_args()
    kind = get_kind("sliding")
    boards = read_algs4(sliding_set(ALGS4))
    summary, per_board = (
        [],
        {b.ident: [b.ident, b.optimal if b.optimal is not None else "unsolvable"] for b in boards},
    )
    for h in HEURISTICS:
        nodes, seconds, right, longer = [], 0.0, 0, []
        for inst in boards:
            board = kind.parse({"tiles": list(inst.tiles)})
            start = time.perf_counter()
            out = kind.solvers[h](board, Budget(60))
            seconds += time.perf_counter() - start
            if inst.optimal is None:
                ok = out.status.value == "no_solution"
                cell = "no_solution" if ok else f"**{out.status.value}**"
            else:
                ok = out.status.value == "solved" and kind.verify(board, out.solution) is None
                length = len(out.solution) if out.solution is not None else None
                if ok and length != inst.optimal:
                    longer.append(length / inst.optimal)
                    ok = h == "weighted"  # bounded-suboptimal by design
                nodes.append(out.nodes)
                cell = f"{out.nodes}" + ("" if length == inst.optimal else f" (len {length})")
            right += ok
            per_board[inst.ident].append(cell)
        optimal_count = sum(1 for b in boards if b.optimal is not None) - len(longer)
        summary.append(
            [
                h,
                f"{right}/{len(boards)}",
                f"{optimal_count}/{sum(1 for b in boards if b.optimal is not None)}",
                sum(nodes),
                f"{statistics.mean(nodes):.0f}",
                max(nodes),
                f"{seconds:.2f}",
                f"{max(longer):.2f}" if longer else "1.00",
            ]
        )
    text = [
        "# 8-puzzle: every heuristic on the 3x3 boards of algs4_8puzzle_testing.txt",
        "",
        f"{len(boards)} boards ({sum(1 for b in boards if b.optimal is None)} unsolvable); measured "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, in process. Nodes = states expanded.",
        "",
        markdown_table(
            [
                "heuristic",
                "correct",
                "optimal length",
                "nodes total",
                "nodes mean",
                "nodes max",
                "seconds total",
                "worst length ratio",
            ],
            summary,
        ),
        "",
        "## Nodes per board",
        "",
        markdown_table(["board", "optimal", *HEURISTICS], list(per_board.values())),
        "",
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(text))
    print("\n".join(text[:12]))


if __name__ == "__main__":
    main()
