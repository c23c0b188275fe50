"""Floodfill: nodes and seconds per heuristic over generated images of growing size, against SciPy.

Run from the repository root: nice .venv/bin/python -m benchmarks.floodfill
Writes benchmarks/results/floodfill.md. Peer: scipy.ndimage.label (C connected-component
labelling) on the same image, timed from the parsed image to the filled count; the ratio
column is default seconds / peer seconds measured in the same run.
"""

from __future__ import annotations

import statistics
import time

import numpy as np
from scipy import ndimage

from benchmarks.harness import RESULTS, machine_line, parser, publish
from benchmarks.scaling_table import Contest, run_heuristics, scaling_table
from packsolve.puzzles import get_kind

KIND = get_kind("floodfill")
SIZES = ["16x16", "32x32", "64x64", "128x128", "500x500", "1000x1000", "2000x2000"]
COUNT, SEED, TIME_LIMIT = 2, 1, 10.0
HEURISTICS = ["plain", "stack", "scanline"]


def peer_count(img) -> int:
    """Return the size of the click's 4-connected component by SciPy's labelling."""
    r, c = img.click
    if isinstance(img.rows[0], str):
        pixels = np.frombuffer("".join(img.rows).encode("ascii"), dtype=np.uint8).reshape(
            img.height, img.width
        )
        same = pixels == ord(img.rows[r][c])
    else:
        pixels = np.array(img.rows)
        same = pixels == img.rows[r][c]
    labels, _ = ndimage.label(same)  # the default structure is 4-connectivity
    return int((labels == labels[r, c]).sum())


def measure() -> list[dict]:
    rows, contest = [], Contest(KIND, HEURISTICS, TIME_LIMIT)
    for size in SIZES:
        levels = [KIND.parse(d) for d in KIND.generate(size, COUNT, SEED)]
        peer_secs, truth = [], []
        for level in levels:
            start = time.perf_counter()
            truth.append(peer_count(level))
            peer_secs.append(time.perf_counter() - start)

        def check(i: int, level: object, fill: dict, size: str = size, truth: list = truth) -> None:
            assert fill["count"] == truth[i], size

        rows += run_heuristics(contest, size, levels, check, statistics.mean(peer_secs))
    return rows


def table(rows: list[dict]) -> str:
    return scaling_table(rows, "image", "SciPy", 3)


def main() -> None:
    parser(__doc__).parse_args()
    rows = measure()
    text = f"""# floodfill benchmark

`nice .venv/bin/python -m benchmarks.floodfill` — {COUNT} generated images per size
(`packsolve generate floodfill --size HxW --seed {SEED}`: background 0 with 30% noise of colours 1-3,
the click on the background, so the fill is the large percolation cluster), time limit {TIME_LIMIT:g} s per
attempt, run in-process on {machine_line("one used")} while other jobs shared
the 2 cores. A node is one pixel filled. Every count is checked against SciPy's `ndimage.label`;
ratio = mean seconds of the heuristic / mean seconds of SciPy on the same images (both from the parsed image).

{table(rows)}
"""
    publish(text, RESULTS / "floodfill.md")


if __name__ == "__main__":
    main()
