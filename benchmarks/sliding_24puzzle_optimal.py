"""Korf & Felner's 50 twenty-four-puzzles solved optimally by `pdb-6666` (IDA*, 6-6-6-6 tables).

Usage: nice python -m benchmarks.sliding_24puzzle_optimal [--ids 1,5,...] [--time-limit 600]
       nice python -m benchmarks.sliding_24puzzle_optimal --walks 4 --walk-moves 150 [--against OTHER.so]
Appends one JSON line per instance to benchmarks/results/sliding_24puzzle_optimal.jsonl as it
finishes (a long run can be stopped at any time) and rewrites sliding_24puzzle_optimal.md from
all the lines. The two 127.5 MB tables are built first (or read from the cache) and timed apart.
Every answer is checked with the kind's verify and its length against the published optimum; a
board not solved within the limit gets a projected time from its published node count (where
one is known) and the node rate of the attempts.
"""

from __future__ import annotations

import json
import os
import random
import resource
import time
from pathlib import Path

from benchmarks.harness import RESULTS, parser
from benchmarks.sliding_common import KORF_FELNER50, Instance, read_korf, sliding_set, walk
from packsolve.budget import Budget
from packsolve.puzzles import get_kind
from packsolve.puzzles.sliding import pdb as sliding_pdb

# Published node counts for the first ten (Korf & Taylor's) instances with a 6-6-6-6 database:
# https://domslee.com/2021/11/25/solving-the-24-puzzle (nodes *generated*, last iteration left
# out). Korf & Felner's own per-instance table (AIJ 134, 2002) is not available here.
PUBLISHED_GENERATED = {
    "1": 3_949_323_558,
    "2": 373_302_608_938,
    "3": 68_097_975_369,
    "4": 75_528_769_943,
    "5": 6_508_216_548,
    "6": 127_858_033_287,
    "7": 330_453_737_334,
    "8": 74_382_671_211,
    "9": 492_114_567_189,
    "10": 10_172_974_643_392,
}


def attempt(inst: Instance, limit: float) -> dict[str, object]:
    """Solve one board with pdb-6666 under a wall-clock limit; return its record."""
    kind = get_kind("sliding")
    board = kind.parse({"tiles": list(inst.tiles)})
    cpu0, start = time.process_time(), time.perf_counter()
    out = kind.solvers["pdb-6666"](board, Budget(limit))
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu0
    ok = out.solution is not None and kind.verify(board, out.solution) is None
    length = len(out.solution) if ok else None
    return {
        "id": inst.ident,
        "optimal": inst.optimal,
        "status": out.status.value,
        "length": length,
        "verified": ok,
        "nodes": out.nodes,
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "load": round(os.getloadavg()[0], 1),
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }


def rates(records: list[dict]) -> tuple[float, float, int]:
    """Return (our expanded nodes per CPU second, our expanded / the published generated nodes, how many
    boards that ratio is from), over each board's latest attempt (the current build's)."""
    latest = {str(r["id"]): r for r in records}
    rate_cpu = sum(float(r["cpu_s"]) for r in latest.values())
    rate = sum(int(r["nodes"]) for r in latest.values()) / rate_cpu if rate_cpu else 0.0
    # The published counts are another program's generated nodes: scale them by what our expanded
    # nodes came to on the boards solved here that have a published count.
    ratios = [
        int(r["nodes"]) / PUBLISHED_GENERATED[i]
        for i, r in latest.items()
        if r["status"] == "solved" and i in PUBLISHED_GENERATED
    ]
    return rate, (sum(ratios) / len(ratios) if ratios else 1.0), len(ratios)


def report(records: list[dict], out: Path, build: str) -> None:
    """Rewrite the Markdown report: every attempt, the node rate and projections from the latest ones."""
    rate, ratio, counted = rates(records)
    lines = [
        "# Korf & Felner's 24-puzzles, optimal by `pdb-6666`",
        "",
        f"Tables: {build}. Node rate over the latest attempt of each board: {rate / 1e6:.2f} M nodes "
        f"per CPU second. Our expanded nodes / published generated nodes on the solved boards with a "
        f"published count: {ratio:.3f} (from {counted}); projections = published x that / our rate.",
        "",
        "| id | published optimum | status | length | verified | nodes | wall s | CPU s | M nodes / CPU s "
        "| load | when | published nodes generated | projected CPU s at our rate |",
        "| --- | ---: | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |",
    ]
    for r in records:
        published = PUBLISHED_GENERATED.get(str(r["id"]))
        node_rate = int(r["nodes"]) / float(r["cpu_s"]) / 1e6 if float(r["cpu_s"]) else 0.0
        projected = (
            f"{published * ratio / rate:,.0f}" if published and rate and r["status"] != "solved" else "-"
        )
        lines.append(
            f"| {r['id']} | {r['optimal']} | {r['status']} | {r['length'] or '-'} | {r['verified']} | "
            f"{int(r['nodes']):,} | {r['wall_s']} | {r['cpu_s']} | {node_rate:.2f} | {r['load']} | "
            f"{r['when']} | "
            f"{f'{published:,}' if published else '-'} | {projected} |"
        )
    lines += [
        "",
        "Nodes are states expanded (the published counts are states generated, last iteration left "
        "out, by another program). Solved = the answer passes `verify` and its length equals the "
        "published optimum. A board attempted again keeps its earlier rows (older builds).",
    ]
    out.write_text("\n".join(lines) + "\n")


def random_walks(count: int, moves: int, seed: int, limit: float, against: Path | None = None) -> list[str]:
    """Solve random-walk 5x5 boards with pdb-6666 and a peer; return table rows.

    The peer is pdb (six 4-tile tables): both are optimal, so their lengths must agree, and the
    node counts show what the bigger tables buy. With `against`, the peer is pdb-6666 run by
    another build of packsolve.native.sliding (say the previous commit's): the same tree, so the
    node counts must agree too, and the CPU seconds compare the two node rates.
    """
    kind = get_kind("sliding")
    peer = _other_build(against) if against else None
    for table in sliding_pdb.load(5, ranked=True).tables:  # fault every page in first: the first board
        view = memoryview(table)  # would pay for the mapping otherwise, whichever solver runs it first
        sum(view[i] for i in range(0, len(view), 4096))
    rng = random.Random(seed)
    name = f"pdb-6666 ({against.name})" if against else "pdb (4-tile)"
    rows = [
        f"| board | pdb-6666 length | nodes | CPU s | {name} length | nodes | CPU s |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for k in range(count):
        board = kind.parse({"tiles": walk(5, moves, rng)})
        cells = [f"walk-{k + 1}"]
        results = []
        for solve in (kind.solvers["pdb-6666"], peer or kind.solvers["pdb"]):
            cpu0 = time.process_time()
            out = solve(board, Budget(limit))
            cpu = time.process_time() - cpu0
            ok = out.solution is not None and kind.verify(board, out.solution) is None
            results.append((len(out.solution) if ok else None, out.nodes))
            cells += [str(results[-1][0] if ok else out.status.value), f"{out.nodes:,}", f"{cpu:.2f}"]
        lengths = [length for length, _ in results]
        if None not in lengths and lengths[0] != lengths[1]:
            raise SystemExit(f"walk {k + 1}: optimal lengths differ {lengths}")
        if peer and None not in lengths and results[0][1] != results[1][1]:
            raise SystemExit(
                f"walk {k + 1}: the two builds expanded {results[0][1]} and {results[1][1]} nodes"
            )
        rows.append("| " + " | ".join(cells) + " |")
        print(rows[-1], flush=True)
    return rows


def _other_build(path: Path):
    """Return a pdb-6666 solver that runs the IDA* of another compiled packsolve.native.sliding."""
    from importlib.machinery import ExtensionFileLoader
    from importlib.util import module_from_spec, spec_from_file_location

    from packsolve.outcome import Outcome, SearchStats, Status
    from packsolve.puzzles.sliding import ida

    loader = ExtensionFileLoader("sliding", str(path))
    spec = spec_from_file_location("sliding", path, loader=loader)
    if spec is None:
        raise SystemExit(f"{path}: not a compiled extension module")
    module = module_from_spec(spec)
    loader.exec_module(module)

    def solve(board, budget: Budget) -> Outcome:
        db = sliding_pdb.load(5, ranked=True)
        deadline = budget.deadline or 0.0
        args = (bytes(board.tiles), 5, ida.PDB, 1, 1, 0, deadline, db.tables, db.groups)
        status, moves, nodes, _ = module.ida_star(*args, ranked=True, maps=db.maps)
        return Outcome(Status.SOLVED if status == 0 else Status.TIMEOUT, moves, SearchStats(nodes=nodes))

    return solve


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--ids", default="", help="instance ids in the order to run (default all)")
    ap.add_argument("--time-limit", type=float, default=600.0, help="wall seconds per board")
    ap.add_argument("--out", type=Path, default=RESULTS / "sliding_24puzzle_optimal.md")
    ap.add_argument("--walks", type=int, default=0, help="solve this many random-walk boards instead")
    ap.add_argument("--walk-moves", type=int, default=60)
    ap.add_argument(
        "--against",
        type=Path,
        help="with --walks: another build of packsolve.native.sliding (.so) as the peer",
    )
    args = ap.parse_args()
    instances = {i.ident: i for i in read_korf(sliding_set(KORF_FELNER50))}
    order = args.ids.split(",") if args.ids else list(instances)
    start, cpu0 = time.perf_counter(), time.process_time()
    db = sliding_pdb.load(5, ranked=True)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    build = (
        f"{len(db.groups)} groups on {len({sliding_pdb.TURNED.get(g, (g, 0))[0] for g in db.groups})} tables "
        f"({sliding_pdb.table_size(5, db.groups[0], ranked=True):,} bytes each), loaded in "
        f"{time.perf_counter() - start:.1f} s wall ({time.process_time() - cpu0:.1f} s CPU; "
        f"{db.build_s:.1f} s of it building), peak RSS {peak_mb:.0f} MB"
    )
    print(build, flush=True)
    if args.walks:
        rows = random_walks(args.walks, args.walk_moves, 24, args.time_limit, args.against)
        peer = f"the build {args.against}" if args.against else "pdb"
        out = args.out.with_name("sliding_24puzzle_walks.md")
        head = (
            f"# Random {args.walk_moves}-move walks on 5x5, pdb-6666 against {peer}\n\nTables: {build}.\n\n"
        )
        out.write_text(head + "\n".join(rows) + "\n")
        return
    raw = args.out.with_suffix(".jsonl")
    for ident in order:
        record = attempt(instances[ident], args.time_limit)
        if record["status"] == "solved" and record["length"] != record["optimal"]:
            raise SystemExit(
                f"#{ident}: length {record['length']} differs from the optimum {record['optimal']}"
            )
        print(json.dumps(record), flush=True)
        with raw.open("a") as fh:
            fh.write(json.dumps(record) + "\n")
        records = [json.loads(line) for line in raw.read_text().splitlines() if line.strip()]
        report(records, args.out, build)


if __name__ == "__main__":
    main()
