"""The default heuristic on random thin rectangles (short side 3..11, long side up to 1000), open and closed.

Run from the repository root: nice .venv/bin/python -m benchmarks.knights_tour_rectangles
Writes benchmarks/results/knights_tour_rectangles.md.
"""

from __future__ import annotations

import random
import time
from collections import defaultdict

from benchmarks.harness import RESULTS, parser
from packsolve.budget import Budget
from packsolve.outcome import Status
from packsolve.puzzles import get_kind

KIND = get_kind("knights_tour")
OUT = RESULTS / "knights_tour_rectangles.md"
TIME_LIMIT = 10.0
LEVELS = 300


def main() -> None:
    parser(__doc__).parse_args()
    rng = random.Random(7)
    by_side: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    seconds: dict[int, float] = defaultdict(float)
    timeouts = []
    for _ in range(LEVELS):
        m = rng.randint(3, 11)
        n = rng.choice([rng.randint(m, 60), rng.randint(60, 1000)])
        rows, cols = (m, n) if rng.random() < 0.5 else (n, m)
        closed = rng.random() < 0.4
        start = [rng.randrange(rows), rng.randrange(cols)]
        board = KIND.parse({"rows": rows, "cols": cols, "start": start, "closed": closed})
        t = time.perf_counter()
        out = KIND.solvers[KIND.default](board, Budget(time_limit=TIME_LIMIT))
        seconds[m] += time.perf_counter() - t
        if out.status is Status.SOLVED and KIND.verify(board, out.solution) is not None:
            raise SystemExit(f"wrong tour on {rows}x{cols} from {start}")
        by_side[m][out.status.value] += 1
        if out.status is Status.TIMEOUT:
            timeouts.append(f"{rows}x{cols} {start}{' closed' if closed else ''}")
    lines = [
        "# Knight's tour: default heuristic on random thin rectangles",
        "",
        f"{LEVELS} levels (seed 7): short side 3..11, long side up to 1000, random start (any colour),",
        f"40% closed; {TIME_LIMIT:g} s budget each, one core; every tour checked by verify. `no_solution`",
        "rows are the theorems (colour, Schwenk, 4-wide middle lines) or exhaustive search on tiny boards.",
        "",
        "| short side | levels | solved | no_solution | timeout | seconds |",
        "| ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for m in sorted(by_side):
        st = by_side[m]
        lines.append(
            f"| {m} | {sum(st.values())} | {st['solved']} | {st['no_solution']} | {st['timeout']} "
            f"| {seconds[m]:.1f} |"
        )
    lines += ["", f"Timeouts: {', '.join(timeouts) or 'none'}"]
    OUT.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
