"""Coins: nodes and seconds per heuristic over generated packs of growing size.

Run from the repository root: nice .venv/bin/python -m benchmarks.coins
Writes benchmarks/results/coins.md. Peer: OR-Tools CP-SAT (benchmarks/peers/coins_cpsat.py,
one worker) on the same levels; the ratio column is heuristic seconds / CP-SAT seconds. Every
answer is also checked by verify (an independent big-int bitset proof of optimality).
"""

from __future__ import annotations

import time

from benchmarks.harness import RESULTS, machine_line, parser, publish
from benchmarks.peers.coins_cpsat import fewest_notes
from benchmarks.scaling_table import Contest, run_heuristics, scaling_table
from packsolve.puzzles import get_kind

KIND = get_kind("coins")
SIZES = ["10", "15", "20", "25", "30", "40", "60:10000", "100:100000", "200:1000000", "400:1000000"]
COUNT, SEED, TIME_LIMIT, PEER_LIMIT = 3, 1, 2.0, 20.0
HEURISTICS = ["plain", "prune", "bnb", "dp", "auto"]


def measure() -> list[dict]:
    rows = []
    contest = Contest(
        KIND, HEURISTICS, TIME_LIMIT, (RuntimeError, MemoryError), lambda exc: f"error ({type(exc).__name__})"
    )
    for size in SIZES:
        levels = [KIND.parse(d) for d in KIND.generate(size, COUNT, SEED)]
        answers: dict[int, int] = {}
        peer_secs = []
        for i, level in enumerate(levels):
            start = time.perf_counter()
            try:
                answers[i] = fewest_notes(list(level.notes), level.target, PEER_LIMIT)
            except TimeoutError:
                continue
            peer_secs.append(time.perf_counter() - start)

        def check(i: int, level: object, solution: dict, size: str = size, answers: dict = answers) -> None:
            count = solution["count"]
            assert answers.setdefault(i, count) == count, (size, i)
            assert KIND.verify(level, solution) is None

        rows += run_heuristics(contest, size, levels, check, peer_secs)
    return rows


def table(rows: list[dict]) -> str:
    return scaling_table(rows, "notes[:max]", "CP-SAT", 4, peer_limit=PEER_LIMIT)


def main() -> None:
    parser(__doc__).parse_args()
    rows = measure()
    text = f"""# coins benchmark

`nice .venv/bin/python -m benchmarks.coins` — {COUNT} generated levels per size
(`packsolve generate coins --size N[:MAX] --seed {SEED}`: N notes drawn from 1..MAX, default 10000; the target
is the sum of a random subset, so every level has an answer), time limit {TIME_LIMIT:g} s per attempt, run
in-process on {machine_line("one used")} while other jobs shared the 2 cores.
A node is one state expanded: a recursion call for plain/prune/bnb, one (note, sum) cell for the DP.
Every answer is checked by `verify` (independent optimality proof) and against CP-SAT's optimum
(OR-Tools {__import__("ortools").__version__}, one worker; ratio = heuristic mean s / CP-SAT mean s).
A heuristic that solves none of a size is not run on larger ones.

{table(rows)}
"""
    publish(text, RESULTS / "coins.md")


if __name__ == "__main__":
    main()
