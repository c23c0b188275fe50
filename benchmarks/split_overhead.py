"""The work a split level costs against the unsplit search (issue 38): Korf's 100 fifteen-puzzles, `pdb`.

Usage: nice python -m benchmarks.split_overhead [--parts 16] [--first N] [--speedup-heuristic linear-conflict]
Writes benchmarks/results/split_overhead.md. With --twenty-four 38,40,...: only those of Korf and
Felner's 24-puzzles, `pdb-6666`, into benchmarks/results/split_overhead_24.md.

Per instance: the unsplit IDA* (the kind's solver, in this process), the parts one after another
with the shared bound (packsolve.splitting.solve_split, processes=1) and on a 2-process pool
(processes=2). Nodes are the load-independent measure (the split's frontier counted in); CPU is
this process's and its pool's; wall times depend on the machine's load. Then the 2-process
speed-up on single searches of a few seconds. Boards from ../shared/benchmarks (SOURCES.md).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterable
from pathlib import Path

from benchmarks.harness import machine_line
from benchmarks.sliding_common import KORF100, KORF_FELNER50, read_korf, sliding_set
from packsolve.api import Budget, Status
from packsolve.puzzles import get_kind
from packsolve.splitting import SplitRun, solve_split

RESULTS = Path(__file__).resolve().parent / "results"
# Processes the speed-up is simulated for, from the parts' measured CPU times.
SIMULATED = (2, 8, 16, 64)
KIND = get_kind("sliding")


def _board(tiles: tuple[int, ...]):
    n = 5 if len(tiles) == 25 else 4
    return KIND.parse({"tiles": [list(tiles[r * n : r * n + n]) for r in range(n)]})


def _unsplit(board, heuristic: str) -> tuple[int, int, float, float]:
    solve = KIND.solver(heuristic)[1]
    cpu0, wall0 = time.process_time(), time.monotonic()
    out = solve(board, Budget())
    assert out.status is Status.SOLVED and KIND.verify(board, out.solution) is None
    return len(out.solution), out.nodes, time.process_time() - cpu0, time.monotonic() - wall0


def _split(
    board, heuristic: str, parts: int, processes: int
) -> tuple[int, int, float, float, int, int, SplitRun]:
    run = solve_split(KIND, board, heuristic, parts=parts, processes=processes)
    out = run.outcome
    assert out.status is Status.SOLVED, out.message
    assert KIND.verify(board, out.solution) is None
    count = len(run.split.parts) if run.split else 1
    return len(out.solution), out.nodes, out.stats.cpu_s, out.stats.wall_s, count, run.rounds, run


def simulated_makespan(run: SplitRun, processes: int) -> float:
    """Return the CPU seconds the parts' rounds would take on this many processes, from their measured CPU.

    Optimistic about the last round: the parts measured one after another stopped at once behind the
    one that found the answer, side by side they would run until it does (scheduled_makespan).
    """
    return scheduled_makespan([(part_run.window, part_run.cpu_s) for part_run in run.runs], processes)


def scheduled_makespan(parts: Iterable[tuple[object, float]], processes: int) -> float:
    """Return the seconds parts ((their round, CPU seconds), in the order handed out) take on this many
    processes: each round's parts go, in order, to the process free first (as the pool and the
    workers hand them out); a round ends with its last part."""
    total = 0.0
    rounds: dict[object, list[float]] = {}
    for key, cpu in parts:
        rounds.setdefault(key, []).append(cpu)
    for times in rounds.values():
        free = [0.0] * processes
        for t in times:
            i = free.index(min(free))
            free[i] += t
        total += max(free)
    return total


def simulated_makespan_ahead(run: SplitRun, processes: int) -> float:
    """Return the CPU seconds the parts' rounds would take on this many processes with parts run ahead
    (combining.Handout.ahead), from their CPU measured one after another: a process that would wait
    idle for the end of a round of one bound (from the second round on) runs a part that ended it and
    has a run in the next round; the next round then leaves that part out. As optimistic about the last
    round as simulated_makespan."""
    runs = [
        (r.index, r.window, r.window is not None and r.window[0] == r.window[1], r.cpu_s) for r in run.runs
    ]
    return ahead_makespan(runs, processes)


def ahead_makespan(runs: Iterable[tuple[int, object, bool, float]], processes: int) -> float:
    """Return the seconds runs ((part index, its round, whether the round's window is one bound, CPU
    seconds), in the order handed out) take on this many processes: each round's parts in order to the
    process free first; a process with nothing of its round left and the round still running takes the
    first part (by index) of the next round whose run in this one has ended, where this round's window
    is one bound and not the first."""
    rounds: dict[object, dict[int, float]] = {}
    one_bound: dict[object, bool] = {}
    for index, key, single, cpu in runs:
        rounds.setdefault(key, {})[index] = cpu
        one_bound[key] = one_bound.get(key, True) and single
    order = list(rounds.items())
    free = [0.0] * processes
    done: dict[tuple[int, int], float] = {}  # (round, part) -> when it ends
    start = 0.0  # when the round begins: the one before it has ended
    for r, (key, parts) in enumerate(order):
        queue = [i for i in sorted(parts) if (r, i) not in done]
        following = order[r + 1][1] if r + 1 < len(order) else {}
        may_go_ahead = r >= 1 and one_bound[key] and bool(following)
        while True:
            p = free.index(min(free))
            t = max(free[p], start)
            if queue:
                i = queue.pop(0)
                done[(r, i)] = free[p] = t + parts[i]
                continue
            ends = [done[(r, i)] for i in parts]
            if t >= max(ends):
                break
            ready = (
                [
                    i
                    for i in sorted(following)
                    if (r + 1, i) not in done and (i not in parts or done[(r, i)] <= t)
                ]
                if may_go_ahead
                else []
            )
            if ready:
                done[(r + 1, ready[0])] = free[p] = t + following[ready[0]]
            else:
                free[p] = min(e for e in ends if e > t)  # idle until one of the round's parts ends
        start = max(done[(r, i)] for i in parts)
    return max(done.values(), default=0.0)


def cpu_makespan(run: SplitRun) -> float:
    """Return the CPU seconds of a pool's run were each process on a core of its own: per round, the
    largest CPU time one process spent on that round's parts; summed over the rounds."""
    by_round: dict[object, dict[int, float]] = {}
    for part_run in run.runs:
        per = by_round.setdefault(part_run.window, {})
        per[part_run.pid] = per.get(part_run.pid, 0.0) + part_run.cpu_s
    return sum(max(per.values()) for per in by_round.values())


def twenty_four(args: argparse.Namespace) -> None:
    """Unsplit, in order and on 2 processes, the given 24-puzzles with pdb-6666; write their table."""
    by_id = {int(i.ident): i for i in read_korf(sliding_set(KORF_FELNER50))}
    heuristic = "pdb-6666"
    rows = []
    for ident in [int(x) for x in args.twenty_four.split(",")]:
        inst = by_id[ident]
        board = _board(inst.tiles)
        prep = KIND.preparation(heuristic, board)
        if prep is not None:
            prep.run()
        length, n0, c0, w0 = _unsplit(board, heuristic)
        l1, n1, c1, _, count, rounds, in_order = _split(board, heuristic, args.parts, 1)
        l2, n2, c2, w2, _, _, pooled = _split(board, heuristic, args.parts, 2)
        assert length == l1 == l2 == inst.optimal, (ident, length, l1, l2, inst.optimal)
        by_cpu = c0 / cpu_makespan(pooled)
        simulated = " / ".join(f"{c0 / simulated_makespan(in_order, p):.2f}" for p in SIMULATED)
        ahead = " / ".join(f"{c0 / simulated_makespan_ahead(in_order, p):.2f}" for p in SIMULATED)
        rows.append((ident, length, count, rounds, n0, n1, n2, c0, c1, c2, w0, w2, by_cpu, simulated, ahead))
        print(
            f"24-puzzle #{ident} {length}: nodes {n0} / {n1 / n0:.3f} / {n2 / n0:.3f}, "
            f"CPU {c0:.1f} / {c1:.1f} / {c2:.1f}, by CPU {by_cpu:.2f}, simulated {simulated}, ahead {ahead}",
            flush=True,
        )
    lines = [
        "# Splitting a 24-puzzle: work against the unsplit search (issue 38)",
        "",
        machine_line(),
        "",
        f"`python -m benchmarks.split_overhead --twenty-four {args.twenty_four} --parts {args.parts}`:"
        " `pdb-6666`, the parts in order and on 2 processes (best of all). Simulated: the unsplit CPU"
        " over the parts' CPU times measured in order, scheduled round by round on P processes"
        " (simulated_makespan); with parts ahead: a process idle at a round's end runs a part of the next"
        " round (simulated_makespan_ahead, as both executors do).",
        "",
        "| id | optimal | parts | rounds | nodes unsplit | × in order | × 2 processes | CPU unsplit s "
        "| CPU in order s | CPU 2 processes s | wall unsplit s | wall 2 processes s | speed-up by CPU "
        "| simulated " + " / ".join(map(str, SIMULATED)) + " | with parts ahead |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for ident, length, count, rounds, n0, n1, n2, c0, c1, c2, w0, w2, by_cpu, simulated, ahead in rows:
        lines.append(
            f"| {ident} | {length} | {count} | {rounds} | {n0:,} | {n1 / n0:.3f} | {n2 / n0:.3f} | {c0:.1f} "
            f"| {c1:.1f} | {c2:.1f} | {w0:.1f} | {w2:.1f} | {by_cpu:.2f} | {simulated} | {ahead} |"
        )
    t0, t1, t2 = (sum(r[i] for r in rows) for i in (4, 5, 6))
    lines += ["", f"In all: {t1 / t0:.3f} × the unsplit nodes in order, {t2 / t0:.3f} × on 2 processes."]
    (args.out or RESULTS / "split_overhead_24.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parts", type=int, default=16)
    ap.add_argument("--first", type=int, default=100, help="the first N of Korf's 100")
    ap.add_argument("--heuristic", default="pdb")
    ap.add_argument("--speedup-heuristic", default="linear-conflict")
    ap.add_argument(
        "--speedup-ids", default="3", help="Korf ids searched with --speedup-heuristic for the speed-up"
    )
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--twenty-four", default="", help="ids of Korf and Felner's 24-puzzles (pdb-6666) only")
    args = ap.parse_args()
    if args.twenty_four:
        twenty_four(args)
        return
    args.out = args.out or RESULTS / "split_overhead.md"
    instances = read_korf(sliding_set(KORF100))[: args.first]
    prep = KIND.preparation(args.heuristic, _board(instances[0].tiles))
    if prep is not None:
        prep.run()
    rows = []
    totals = [0] * 3
    cpus = [0.0] * 3
    for inst in instances:
        board = _board(inst.tiles)
        length, n0, c0, w0 = _unsplit(board, args.heuristic)
        l1, n1, c1, w1, count, rounds, _ = _split(board, args.heuristic, args.parts, 1)
        l2, n2, c2, w2, _, _, _ = _split(board, args.heuristic, args.parts, 2)
        assert length == l1 == l2 == inst.optimal, (inst.ident, length, l1, l2, inst.optimal)
        for i, (n, c) in enumerate(((n0, c0), (n1, c1), (n2, c2))):
            totals[i] += n
            cpus[i] += c
        rows.append((inst.ident, inst.optimal, count, rounds, n0, n1, n2, c0, c1, c2, w0, w2))
        print(
            f"#{inst.ident} {inst.optimal}: {count} parts, nodes {n0} / {n1} ({n1 / n0:.3f}) "
            f"/ {n2} ({n2 / n0:.3f})",
            flush=True,
        )
    hardest = max(rows, key=lambda r: r[4])[0]
    runs = [(hardest, args.heuristic)] + [
        (int(x), args.speedup_heuristic) for x in args.speedup_ids.split(",") if x
    ]
    speed = []
    by_id = {int(i.ident): i for i in read_korf(sliding_set(KORF100))}
    for ident, h in runs:
        board = _board(by_id[int(ident)].tiles)
        length, n0, c0, w0 = _unsplit(board, h)
        l2, n2, c2, w2, count, rounds, pooled = _split(board, h, args.parts, 2)
        by_cpu = c0 / cpu_makespan(pooled)
        assert length == l2 == by_id[int(ident)].optimal
        sims = []
        for p in SIMULATED:
            # At least 8 parts a process, so that the largest part does not set the makespan alone.
            _, _, c1, _, _, _, in_order = _split(board, h, max(args.parts, 8 * p), 1)
            sims.append(c1 / simulated_makespan(in_order, p))
        speed.append((ident, h, length, count, n0, n2, c0, c2, w0, w2, by_cpu, sims))
        print(
            f"speed-up #{ident} {h}: wall {w0:.2f} s -> {w2:.2f} s ({w0 / w2:.2f}x), by CPU {by_cpu:.2f}, "
            f"nodes {n2 / n0:.3f}x, "
            f"simulated {', '.join(f'{x:.2f}' for x in sims)}",
            flush=True,
        )
    big = [r for r in rows if r[4] >= 1_000_000]
    ratios = sorted(r[6] / r[4] for r in rows)
    lines = [
        "# Splitting a level: work against the unsplit search (issue 38)",
        "",
        machine_line(),
        "",
        f"`python -m benchmarks.split_overhead --parts {args.parts} --first {args.first}`:",
        f"Korf's first {len(instances)} fifteen-puzzles, heuristic `{args.heuristic}`,",
        f"at least {args.parts} parts each",
        "(the boards exactly d moves from the start), best of all with the shared bound, in rounds.",
        "",
        "| | nodes | × unsplit | CPU s |",
        "|---|---:|---:|---:|",
        f"| unsplit | {totals[0]:,} | 1 | {cpus[0]:.2f} |",
        f"| parts in order (1 process) | {totals[1]:,} | {totals[1] / totals[0]:.3f} | {cpus[1]:.2f} |",
        f"| parts on 2 processes | {totals[2]:,} | {totals[2] / totals[0]:.3f} | {cpus[2]:.2f} |",
        "",
        "Per instance ratio, 2 processes: "
        + f"max {max(ratios):.2f}, median {ratios[len(ratios) // 2]:.3f}; "
        + f"the {len(big)} instances of at least 1 M nodes unsplit: "
        + f"{sum(r[6] for r in big) / max(1, sum(r[4] for r in big)):.3f} × in all, "
        + f"max {max((r[6] / r[4] for r in big), default=0):.3f}.",
        "",
        "## 2-process speed-up on single searches",
        "",
        "Wall: measured (rough, the machine is shared). By CPU: the unsplit search's CPU over the",
        "2-process run's CPU makespan (each round: the larger of the two processes' CPU in it), what the",
        "run would take with a core per process, less dispatch. Simulated: the parts' CPU times measured",
        "one after another (at least 8 parts a process), scheduled round by round on P processes",
        "(optimistic about the last round): CPU in order / simulated makespan.",
        "",
        "| id | heuristic | length | parts | nodes unsplit | nodes split × | CPU unsplit s | CPU split s "
        "| wall unsplit s | wall split s | speed-up | by CPU | simulated 2 / 8 / 16 / 64 |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for ident, h, length, count, n0, n2, c0, c2, w0, w2, by_cpu, sims in speed:
        lines.append(
            f"| {ident} | `{h}` | {length} | {count} | {n0:,} | {n2 / n0:.3f} | {c0:.2f} | {c2:.2f} "
            f"| {w0:.2f} | {w2:.2f} | {w0 / w2:.2f} | {by_cpu:.2f} | {' / '.join(f'{x:.2f}' for x in sims)} |"
        )
    lines += [
        "",
        "## Per instance",
        "",
        "| id | optimal | parts | rounds | nodes unsplit | in order | 2 processes | × (2 proc) "
        "| CPU unsplit | CPU 2 proc |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for ident, opt, count, rounds, n0, n1, n2, c0, _c1, c2, _w0, _w2 in rows:
        lines.append(
            f"| {ident} | {opt} | {count} | {rounds} | {n0:,} | {n1:,} | {n2:,} | {n2 / n0:.3f} "
            f"| {c0:.3f} | {c2:.3f} |"
        )
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines[:24]))


if __name__ == "__main__":
    main()
