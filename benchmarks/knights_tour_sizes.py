"""The default heuristic on every n x n from 5 to 500 (random starts), closed on every even n, and n = 1000.

Run from the repository root: nice .venv/bin/python -m benchmarks.knights_tour_sizes [MAX_N]
Writes benchmarks/results/knights_tour_sizes.md and knights_tour_sizes.png.
"""

from __future__ import annotations

import random
import time

from benchmarks.harness import RESULTS, parser
from packsolve.budget import Budget
from packsolve.outcome import Status
from packsolve.puzzles import get_kind

KIND = get_kind("knights_tour")
TIME_LIMIT = 60.0


def random_start(n: int, rng: random.Random) -> list[int]:
    """Return a random square; on odd boards one of the majority colour (the others have no tour)."""
    r, c = rng.randrange(n), rng.randrange(n)
    if n % 2 and (r + c) % 2:
        c = c - 1 if c else c + 1
    return [r, c]


def attempt(n: int, start: list[int], closed: bool) -> tuple[bool, float, float, int]:
    """Return (verified tour?, solve seconds, verify seconds, nodes)."""
    board = KIND.parse({"size": n, "start": start, "closed": closed})
    t = time.perf_counter()
    out = KIND.solvers[KIND.default](board, Budget(time_limit=TIME_LIMIT))
    solve_s = time.perf_counter() - t
    t = time.perf_counter()
    ok = out.status is Status.SOLVED and KIND.verify(board, out.solution) is None
    return ok, solve_s, time.perf_counter() - t, out.nodes


def main() -> None:
    p = parser(__doc__)
    p.add_argument("max_n", type=int, nargs="?", default=500, help="the largest n [default: 500]")
    max_n = p.parse_args().max_n
    rng = random.Random(2026)
    rows = {False: [], True: []}
    failures = []
    for n in range(5, max_n + 1):
        start = random_start(n, rng)
        for closed in (False, True):
            if closed and (n % 2 or n < 6):
                continue
            ok, solve_s, _, nodes = attempt(n, start, closed)
            rows[closed].append((n, ok, solve_s, nodes))
            if not ok:
                failures.append((n, start, closed))
                print("FAILED", n, start, closed, flush=True)
        if n % 50 == 0:
            print(f"n={n} done", flush=True)
    big = []
    for closed in (False, True):
        start = random_start(1000, rng)
        ok, solve_s, verify_s, nodes = attempt(1000, start, closed)
        big.append((closed, start, ok, solve_s, verify_s, nodes))
        print("n=1000", closed, ok, f"{solve_s:.2f}s", flush=True)

    def summary(closed: bool) -> str:
        rs = rows[closed]
        solved = sum(ok for _, ok, _, _ in rs)
        total = sum(s for _, _, s, _ in rs)
        worst = max(rs, key=lambda x: x[2])
        return (
            f"| {'closed, even n' if closed else 'open'} | {rs[0][0]}..{rs[-1][0]} | {solved} / {len(rs)} | "
            f"{total:.1f} | {worst[2]:.2f} (n = {worst[0]}) | {sum(x[3] for x in rs)} |"
        )

    lines = [
        f"# Knight's tour: default heuristic (`{KIND.default}`) on every n x n, n = 5..{max_n}, and n = 1000",
        "",
        "One core, random start per n (seed 2026; majority colour on odd n), each tour checked by verify.",
        "",
        "| tours | n | solved | solve s (sum) | slowest s | nodes (sum) |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
        summary(False),
        summary(True),
        "",
        "| n = 1000 | start | verified | solve s | verify s | nodes |",
        "| --- | --- | --- | ---: | ---: | ---: |",
    ]
    for closed, start, ok, solve_s, verify_s, nodes in big:
        lines.append(
            f"| {'closed' if closed else 'open'} | {start} | {ok} | {solve_s:.2f} | {verify_s:.2f} "
            f"| {nodes} |"
        )
    lines += ["", f"Failures: {failures or 'none'}"]
    (RESULTS / "knights_tour_sizes.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(7, 4))
        for closed, label in ((False, "open"), (True, "closed")):
            ax.plot([x[0] for x in rows[closed]], [x[2] for x in rows[closed]], ".", ms=3, label=label)
        ax.set_xlabel("n (board n x n)")
        ax.set_ylabel("solve seconds")
        ax.set_title(f"knights_tour `{KIND.default}`: time grows with n^2 (linear in squares)")
        ax.legend()
        fig.tight_layout()
        fig.savefig(RESULTS / "knights_tour_sizes.png", dpi=110)
    except ImportError:
        pass


if __name__ == "__main__":
    main()
