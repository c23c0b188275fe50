"""Euler: nodes and seconds per heuristic over generated multigraphs of growing size, against NetworkX.

Run from the repository root: nice .venv/bin/python -m benchmarks.euler
Writes benchmarks/results/euler.md. Peer: networkx.eulerian_path on a MultiGraph built from the
same edges (build + path timed); its walk is checked by our verify too. The ratio column is
default seconds / peer seconds measured in the same run.
"""

from __future__ import annotations

import statistics
import time

import networkx as nx

from benchmarks.harness import RESULTS, machine_line, parser, publish
from benchmarks.scaling_table import Contest, run_heuristics, scaling_table
from packsolve.puzzles import get_kind

KIND = get_kind("euler")
SIZES = ["8", "12", "16", "24", "32", "48", "64", "1000", "10000", "100000"]
COUNT, SEED, TIME_LIMIT = 3, 1, 5.0
HEURISTICS = ["plain", "hierholzer"]


def peer_walk(graph) -> list:
    """Return NetworkX's Euler walk of the level as a vertex list."""
    g = nx.MultiGraph()
    g.add_edges_from(graph.edges)
    edges = list(nx.eulerian_path(g))
    return [edges[0][0], *(v for _, v in edges)]


def measure() -> list[dict]:
    rows, contest = [], Contest(KIND, HEURISTICS, TIME_LIMIT)
    for size in SIZES:
        levels = [KIND.parse(d) for d in KIND.generate(size, COUNT, SEED)]
        peer_secs = []
        for level in levels:
            start = time.perf_counter()
            walk = peer_walk(level)
            peer_secs.append(time.perf_counter() - start)
            assert KIND.verify(level, walk) is None, size

        def check(i: int, level: object, walk: object, size: str = size) -> None:
            assert KIND.verify(level, walk) is None, size

        rows += run_heuristics(contest, size, levels, check, statistics.mean(peer_secs))
    return rows


def table(rows: list[dict]) -> str:
    return scaling_table(rows, "edges", "NetworkX", 4, size_align="---:")


def main() -> None:
    parser(__doc__).parse_args()
    rows = measure()
    text = f"""# euler benchmark

`nice .venv/bin/python -m benchmarks.euler` — {COUNT} generated multigraphs per size
(`packsolve generate euler --size E --seed {SEED}`: one random walk of E steps over max(3, E/3) vertices,
edges shuffled, so an Euler path exists), time limit {TIME_LIMIT:g} s per attempt, run in-process on
{machine_line("one used")} while other jobs shared the 2 cores. A node is one
edge appended to the walk (backtracking counts every try). Every walk, ours and NetworkX's, passes `verify`;
ratio = mean seconds of the heuristic / mean seconds of NetworkX (graph build + eulerian_path).

{table(rows)}
"""
    publish(text, RESULTS / "euler.md")


if __name__ == "__main__":
    main()
