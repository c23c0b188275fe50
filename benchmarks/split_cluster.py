"""Korf and Felner's 24-puzzles no single core solved here, split on a cluster of workers (issue 38).

A redis-server and a SQLite database of the benchmark's own, WORKERS `packsolve worker -c JOBS` (each a
node of the cluster). Per board, in the order given: `packsolve submit --wait` of the one level with
`pdb-6666`, `--split-after S` (no history: its first attempt runs whole for S seconds, then is split
into parts every worker process takes) and `--time-limit T` (the level's wall limit). A board solved
must be verified (the worker's `verify`, as always) and of the published optimal length; one not
solved within T is reported with the nodes and CPU its parts spent. The tables are built (or read from
the cache) by the workers before the first attempt's clock.

Usage: nice .venv/bin/python -m benchmarks.split_cluster --ids 41,12,6 [--time-limit 1200]
       [--split-after 5] [--workers 2 --jobs 1]
Writes benchmarks/results/split_cluster.md (--out NAME instead) and prints each board as it ends.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from sqlalchemy import select

from benchmarks.harness import RESULTS, machine_line, markdown_table, parser, publish, redis_server
from benchmarks.sliding_common import KORF_FELNER50, read_korf, sliding_set
from benchmarks.split_local import parts_and_rounds
from benchmarks.split_overhead import SIMULATED, ahead_makespan, scheduled_makespan
from benchmarks.split_workers import attempt, workers
from packsolve.db.models import Part
from packsolve.db.session import get_engine, session_scope

HEADER = (
    "id",
    "optimum",
    "result",
    "length",
    "nodes",
    "CPU s",
    "wall s",
    "parts, rounds",
    "simulated " + " / ".join(map(str, SIMULATED)),
    "with parts ahead",
)


def simulate(env: dict[str, str], record: dict) -> tuple[str, str]:
    """Return the speed-ups its parts' measured CPU times give on SIMULATED processes, scheduled round by
    round (split_overhead.scheduled_makespan) and with parts ahead (ahead_makespan), against their CPU
    summed (the level's whole search, as the parts cost it; the first attempt run whole before the
    split left out)."""
    url = env["PACKSOLVE_DATABASE_URL"]
    with session_scope(get_engine(url)) as session:
        runs = [
            (row.part, row.round, row.window_lo == row.window_hi, row.cpu_s or 0.0)
            for row in session.scalars(
                select(Part)
                .where(Part.run_id == record["run"], Part.level_hash == record["level_hash"])
                .order_by(Part.round, Part.part)
            )
        ]
    total = sum(cpu for *_, cpu in runs)
    if not total:
        return "-", "-"
    barrier = " / ".join(
        f"{total / scheduled_makespan([(r, c) for _, r, _, c in runs], p):.2f}" for p in SIMULATED
    )
    return barrier, " / ".join(f"{total / ahead_makespan(runs, p):.2f}" for p in SIMULATED)


def one(env: dict[str, str], work: Path, inst, split_after: float, time_limit: float) -> list[object]:
    """Submit one board split on the cluster and wait for it; return its table row."""
    tiles = inst.tiles
    pack = work / f"board-{inst.ident}.jsonl"
    pack.write_text(
        json.dumps({"kind": "sliding", "tiles": [list(tiles[r * 5 : r * 5 + 5]) for r in range(5)]})
    )
    record = attempt(
        env,
        pack,
        [
            "--heuristic",
            "pdb-6666",
            "--time-limit",
            f"{time_limit:g}",
            "--split-after",
            f"{split_after:g}",
        ],
    )
    solved = record["status"] == "solved"
    if solved:
        assert record["length"] == inst.optimal, record
    message = record["message"] or ""
    simulated, ahead = simulate(env, record)
    parts, rounds = parts_and_rounds(message)
    row = [
        inst.ident,
        inst.optimal,
        "**solved**, verified" if solved else record["status"],
        record["length"] if solved else "-",
        f"{record['nodes']:,}",
        f"{record['cpu_s']:.0f}",
        f"{record['wall_s']:.0f}",
        f"{parts}, {rounds}",
        simulated,
        ahead,
    ]
    print(" | ".join(str(c) for c in row), "|", message, flush=True)
    return row


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--ids", required=True, help="Korf and Felner's 24-puzzles, by id, in the order to run")
    ap.add_argument("--time-limit", type=float, default=1200.0, help="wall seconds per board")
    ap.add_argument("--split-after", type=float, default=5.0)
    ap.add_argument("--workers", type=int, default=2, help="workers (nodes of the cluster)")
    ap.add_argument("--jobs", default="1", help="processes per worker")
    ap.add_argument("--out", default="split_cluster.md")
    opts = ap.parse_args()
    by_id = {i.ident: i for i in read_korf(sliding_set(KORF_FELNER50))}
    with tempfile.TemporaryDirectory() as tmp, redis_server() as broker:
        work = Path(tmp)
        with workers(work, broker, opts.jobs, opts.workers) as env:
            rows = [
                one(env, work, by_id[ident.strip()], opts.split_after, opts.time_limit)
                for ident in opts.ids.split(",")
            ]
    command = (
        f"python -m benchmarks.split_cluster --ids {opts.ids} --time-limit {opts.time_limit:g} "
        f"--split-after {opts.split_after:g} --workers {opts.workers} --jobs {opts.jobs}"
    )
    text = "\n".join(
        [
            "# Unsolved Korf-Felner 24-puzzles split on a cluster of workers",
            "",
            machine_line(),
            "",
            f"`{command}`",
            "",
            markdown_table(HEADER, rows),
            "",
        ]
    )
    publish(text, RESULTS / opts.out)


if __name__ == "__main__":
    main()
