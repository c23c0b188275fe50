"""One hard level on workers, whole against split into parts (`submit --split-after`, issue 38).

A redis-server and a SQLite database of the benchmark's own, one `packsolve worker -c JOBS`. Per
instance of Korf's fifteen-puzzles (or, with --twenty-four, Korf and Felner's 24-puzzles): `packsolve
submit --wait` of the one level whole (which gives it a history), then with `--split-after` below
that history (its worker processes share the parts: one leads, the others help through calls on the
queue), then whole again. The figures are the attempts' own: wall time (the level's, from its claim
for the split one), CPU time (its parts' summed) and nodes; the whole run's wall is the median of its
two. The answer's length must be the published optimal one. Tables a heuristic needs (pdb-6666) are
built by the worker before the first attempt's clock.

Usage: nice .venv/bin/python -m benchmarks.split_workers [--ids 7,3] [--heuristic linear-conflict]
       [--twenty-four 38 --heuristic pdb-6666] [--jobs 2]
Writes benchmarks/results/split_workers.md (split_workers_24.md with --twenty-four).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from benchmarks.harness import (
    RESULTS,
    parser,
    redis_server,
    run_packsolve,
)
from benchmarks.harness.commands import PACKSOLVE
from benchmarks.sliding_common import KORF100, KORF_FELNER50, read_korf, sliding_set
from benchmarks.split_local import row, write


def attempt(env: dict[str, str], pack: Path, args: list[str]) -> dict:
    """Run `packsolve submit PACK ARGS --wait`; return its one attempt's export record."""
    out, _, _, _ = run_packsolve(["submit", str(pack), *args, "--wait"], env)
    run = out.strip().splitlines()[-1]
    records, _, _, _ = run_packsolve(["export", run, "--format", "jsonl"], env)
    [record] = [json.loads(line) for line in records.splitlines()]
    return record


def one(
    env: dict[str, str], work: Path, ident: str, optimal: int | None, tiles: tuple[int, ...], heuristic: str
) -> list[object]:
    """Solve one instance on the worker whole, split, whole again; return its table row."""
    n = 5 if len(tiles) == 25 else 4
    pack = work / f"level-{ident}.jsonl"
    pack.write_text(
        json.dumps({"kind": "sliding", "tiles": [list(tiles[r * n : r * n + n]) for r in range(n)]})
    )
    args = ["--heuristic", heuristic, "--time-limit", "7200"]
    first = attempt(env, pack, args)
    split = attempt(env, pack, [*args, "--split-after", f"{max(first['wall_s'] / 4, 0.001):.3f}"])
    again = attempt(env, pack, args)
    return row(ident, heuristic, optimal, (first, split, again))


@contextmanager
def workers(work: Path, broker: str, jobs: str, count: int = 1) -> Iterator[dict[str, str]]:
    """Yield the environment of a SQLite database in work and count `packsolve worker -c JOBS` on the
    broker, ready; stop them after the block."""
    env = {
        "PACKSOLVE_DATABASE_URL": f"sqlite:///{work}/bench.db",
        "PACKSOLVE_BROKER_URL": broker,
        "PACKSOLVE_QUEUE": "split-bench",
    }
    run_packsolve(["db", "upgrade"], env)
    started: list[subprocess.Popen[bytes]] = []
    try:
        for n in range(count):
            with (work / f"worker-{n}.log").open("w") as log:
                started.append(
                    subprocess.Popen(
                        [*PACKSOLVE, "worker", "-c", jobs, "-n", f"bench{n}@split"],
                        env={**os.environ, **env},
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
                )
        for n in range(count):
            while " ready." not in (work / f"worker-{n}.log").read_text():
                time.sleep(0.2)
        yield env
    finally:
        for worker in started:
            os.killpg(worker.pid, signal.SIGTERM)
        for worker in started:
            worker.wait(60)


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--ids", default="7,3", help="Korf's fifteen-puzzles, by id (comma-separated)")
    ap.add_argument("--twenty-four", default="", help="instead: Korf and Felner's 24-puzzles, by id")
    ap.add_argument(
        "--heuristic", default=None, help="default: linear-conflict (pdb-6666 with --twenty-four)"
    )
    ap.add_argument("--jobs", default="2", help="the worker's processes")
    opts = ap.parse_args()
    listed, wanted = (KORF_FELNER50, opts.twenty_four) if opts.twenty_four else (KORF100, opts.ids)
    heuristic = opts.heuristic or ("pdb-6666" if opts.twenty_four else "linear-conflict")
    by_id = {i.ident: i for i in read_korf(sliding_set(listed))}
    with tempfile.TemporaryDirectory() as tmp, redis_server() as broker:
        work = Path(tmp)
        with workers(work, broker, opts.jobs) as env:
            rows = [
                one(env, work, ident, by_id[ident].optimal, by_id[ident].tiles, heuristic)
                for ident in (w.strip() for w in wanted.split(","))
            ]
    command = "python -m benchmarks.split_workers " + (
        f"--twenty-four {opts.twenty_four}" if opts.twenty_four else f"--ids {opts.ids}"
    )
    write(
        f"One hard level on a worker of {opts.jobs} processes: whole against split into parts",
        f"{command} --heuristic {heuristic} --jobs {opts.jobs}",
        rows,
        RESULTS / ("split_workers_24.md" if opts.twenty_four else "split_workers.md"),
    )


if __name__ == "__main__":
    main()
