"""Tic-tac-toe: nodes and seconds per heuristic from the empty board of growing m x n, k.

Run from the repository root: nice .venv/bin/python -m benchmarks.tictactoe
Writes benchmarks/results/tictactoe.md. No peer: answers are cross-checked between the
heuristics that finish and against published game values (3x3 draw, 4x4 k=4 draw,
4x5 k=4 draw, 3x4 / 4x4 with k=3 first-player wins).
"""

from __future__ import annotations

import sys
import time

from benchmarks.harness import RESULTS, machine_line, parser, publish
from packsolve.budget import Budget
from packsolve.puzzles import get_kind

KIND = get_kind("tictactoe")
# (rows, cols, k, the published value for the first player)
BOARDS = [
    (3, 3, 3, "draw"),
    (3, 4, 3, "win"),
    (4, 4, 3, "win"),
    (4, 4, 4, "draw"),
    (4, 5, 4, "draw"),
    (5, 5, 4, "draw"),
]
TIME_LIMIT = 20.0
HEURISTICS = ["plain", "memo", "alphabeta"]


def measure() -> list[dict]:
    rows, alive = [], set(HEURISTICS)
    for m, n, k, value in BOARDS:
        level = KIND.parse({"board": ["." * n] * m, "to_move": "X", "k": k})
        answer = None
        for h in HEURISTICS:
            size = f"{m}x{n} k={k}"
            if h not in alive:
                rows.append({"size": size, "heuristic": h, "gave_out": True})
                continue
            start = time.perf_counter()
            out = KIND.solvers[h](level, Budget(time_limit=TIME_LIMIT))
            secs = time.perf_counter() - start
            if out.status == "solved":
                assert out.solution["value"] == value, (size, h, out.solution)
                assert answer in (None, out.solution), (size, h)
                answer = out.solution
            else:
                alive.discard(h)
            value_found = out.solution["value"] if out.solution else "—"
            rows.append(
                {
                    "size": size,
                    "heuristic": h,
                    "status": str(out.status),
                    "nodes": out.nodes,
                    "secs": secs,
                    "value": value_found,
                }
            )
            print(size, h, out.status, out.nodes, f"{secs:.3f}s", file=sys.stderr, flush=True)
    return rows


def table(rows: list[dict]) -> str:
    out = [
        "| board (from empty) | heuristic | outcome | value | nodes | seconds |",
        "|---|---|---|---|---:|---:|",
    ]
    for r in rows:
        if r.get("gave_out"):
            out.append(f"| {r['size']} | {r['heuristic']} | not run: gave out on a smaller board | | | |")
        else:
            out.append(
                f"| {r['size']} | {r['heuristic']} | {r['status']} | {r['value']} | {r['nodes']:,} "
                f"| {r['secs']:.3f} |"
            )
    return "\n".join(out)


def main() -> None:
    parser(__doc__).parse_args()
    rows = measure()
    text = f"""# tictactoe benchmark

`nice .venv/bin/python -m benchmarks.tictactoe` — each board from empty with X to move
(the hardest position of the board), time limit {TIME_LIMIT:g} s per attempt, run in-process on
{machine_line("one used")} while other jobs shared the 2 cores. A node is one
position whose moves are generated. Values are checked against the published ones and across heuristics.

{table(rows)}
"""
    publish(text, RESULTS / "tictactoe.md")


if __name__ == "__main__":
    main()
