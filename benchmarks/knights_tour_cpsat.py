"""CP-SAT (AddCircuit, one worker) and packsolve's default side by side on n x n, n = 8..50, same run.

Needs ortools (pip install ortools, or the `bench` extra).
Run from the repository root: nice .venv/bin/python -m benchmarks.knights_tour_cpsat
Writes benchmarks/results/knights_tour_cpsat.md.
"""

from __future__ import annotations

import random
import time

from benchmarks.harness import RESULTS, parser
from benchmarks.peers.knights_tour_cpsat import cpsat_tour
from packsolve.budget import Budget
from packsolve.outcome import Status
from packsolve.puzzles import get_kind

KIND = get_kind("knights_tour")
OUT = RESULTS / "knights_tour_cpsat.md"
TIME_LIMIT = 30.0


def main() -> None:
    p = parser(__doc__)
    p.add_argument("sizes", type=int, nargs="*", help="board sides n [default: 8 to 50]")
    sizes = p.parse_args().sizes or list(range(8, 51))
    rng = random.Random(8)
    lines = [
        "# Knight's tour: CP-SAT (AddCircuit) vs packsolve default, same run, one core each",
        "",
        f"CP-SAT num_workers = 1, {TIME_LIMIT:g} s limit; packsolve `{KIND.default}` under the same limit.",
        "Random start per n (majority colour on odd n); closed tours on even n. Tours checked by verify.",
        "",
        "| n | tour | CP-SAT s | CP-SAT | packsolve s | packsolve | ratio |",
        "| ---: | --- | ---: | --- | ---: | --- | ---: |",
    ]
    tot = {"cp": 0.0, "ps": 0.0, "cp_ok": 0, "ps_ok": 0, "count": 0}
    for n in sizes:
        r, c = rng.randrange(n), rng.randrange(n)
        if n % 2 and (r + c) % 2:
            c = c - 1 if c else c + 1
        for closed in (False, True) if n % 2 == 0 else (False,):
            board = KIND.parse({"size": n, "start": [r, c], "closed": closed})
            t = time.perf_counter()
            status, tour = cpsat_tour(n, n, (r, c), closed, TIME_LIMIT)
            cp_s = time.perf_counter() - t
            cp_ok = tour is not None and KIND.verify(board, tour) is None
            t = time.perf_counter()
            out = KIND.solvers[KIND.default](board, Budget(time_limit=TIME_LIMIT))
            ps_s = time.perf_counter() - t
            ps_ok = out.status is Status.SOLVED and KIND.verify(board, out.solution) is None
            tot["cp"] += cp_s
            tot["ps"] += ps_s
            tot["cp_ok"] += cp_ok
            tot["ps_ok"] += ps_ok
            tot["count"] += 1
            kind = "closed" if closed else "open"
            cp_res = "tour" if cp_ok else status
            ps_res = "tour" if ps_ok else out.status.value
            ratio = cp_s / max(ps_s, 1e-6)
            row = f"| {n} | {kind} | {cp_s:.3f} | {cp_res} | {ps_s:.4f} | {ps_res} | {ratio:.0f}x |"
            print(row, flush=True)
            lines.append(row)
    lines += [
        "",
        f"Totals over {tot['count']} levels: CP-SAT {tot['cp_ok']} tours in {tot['cp']:.1f} s; "
        f"packsolve {tot['ps_ok']} tours in {tot['ps']:.2f} s (CP-SAT / packsolve time: "
        f"{tot['cp'] / max(tot['ps'], 1e-6):.0f}x).",
    ]
    print(lines[-1])
    OUT.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
