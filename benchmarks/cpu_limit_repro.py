"""Do results stay the same when the machine is busy? The same pack solved twice under --cpu-limit, once
as the machine is and once with a CPU hog on every core; the same under --time-limit for contrast.

  python -m benchmarks.cpu_limit_repro                      # results in benchmarks/results/cpu_limit_repro.md
  python -m benchmarks.cpu_limit_repro --levels 300 --limit 0.5 --tiny 2000

The pack: the first --levels puzzles of tdoku's magictour top1465 (the public sudoku sets, see
benchmarks/public_data.py) with the weak `plain` heuristic (first empty cell, no propagation):
its CPU times spread on both sides of a half-second limit, so a level near the limit may change
status when the clock it is judged by changes. Each of the four solves (`packsolve solve
--jobs 2` into a fresh SQLite file) runs the whole pack; the loaded ones start `yes > /dev/null`
once per core first (stopped after). Per limit: the share of levels whose status is the same in
both solves, and the median difference of a level's CPU time between them (relative to the
first), over the levels both decided and over all.

--tiny N: the cost of a cgroup per attempt, N tiny coins levels solved locally with cgroups and with
PACKSOLVE_NO_CGROUPS=1 (the rusage path), alternately, best of 3 (only where cgroups can be used).
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from benchmarks.harness import RESULTS, machine, parser, public_data, publish
from benchmarks.harness.commands import run_packsolve

SET = ("sudoku", "tdoku_puzzles3_magictour_top1465.txt")
DECIDED = ("solved", "no_solution")


def pack_of(count: int, folder: Path) -> Path:
    """Write the first count puzzles of the set as a JSON-lines pack in folder; return its path."""
    grids = []
    for line in public_data(*SET).read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            grids.append(line[:81])
        if len(grids) == count:
            break
    pack = folder / "magictour.jsonl"
    pack.write_text("".join(json.dumps({"kind": "sudoku", "grid": g}) + "\n" for g in grids))
    return pack


@contextmanager
def hogs() -> Iterator[int]:
    """Run `yes > /dev/null` once per core while inside; yield how many."""
    procs = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(os.cpu_count() or 1)]
    try:
        time.sleep(1.0)  # they are running before the solve starts
        yield len(procs)
    finally:
        for p in procs:
            p.kill()
            p.wait()


def solve(folder: Path, pack: Path, name: str, limit: list[str]) -> dict[str, dict]:
    """Solve the pack into a fresh database; return {level hash: its exported attempt}."""
    env = {"PACKSOLVE_DATABASE_URL": f"sqlite:///{folder / (name + '.db')}"}
    run_packsolve(["solve", str(pack), "--heuristic", "plain", "--jobs", "2", "-q", *limit], env)
    out, _, _, _ = run_packsolve(["export", "latest"], env)
    return {r["level_hash"]: r for r in map(json.loads, out.splitlines())}


def compared(a: dict[str, dict], b: dict[str, dict]) -> dict[str, float]:
    """Return the share of equal statuses and the median relative CPU difference between two solves."""
    same = sum(a[h]["status"] == b[h]["status"] for h in a)
    both = [h for h in a if a[h]["status"] in DECIDED and b[h]["status"] in DECIDED]

    def diff(hs: list[str]) -> float:
        rel = [abs(b[h]["cpu_s"] - a[h]["cpu_s"]) / a[h]["cpu_s"] for h in hs if a[h]["cpu_s"]]
        return statistics.median(rel) if rel else float("nan")

    return {
        "same": same / len(a),
        "changed": len(a) - same,
        "cpu_diff_decided": diff(both),
        "cpu_diff_all": diff(list(a)),
        "decided": (
            sum(r["status"] in DECIDED for r in a.values()),
            sum(r["status"] in DECIDED for r in b.values()),
        ),
        "wall": (sum(r["wall_s"] for r in a.values()), sum(r["wall_s"] for r in b.values())),
        "cpu": (sum(r["cpu_s"] for r in a.values()), sum(r["cpu_s"] for r in b.values())),
    }


def tiny(folder: Path, count: int) -> dict[str, float] | None:
    """Return the best seconds of solving count tiny levels with and without cgroups (None: none here)."""
    from packsolve.execution import cgroups

    if cgroups.mode() != cgroups.CGROUP_V1:
        return None
    pack = folder / "tiny.jsonl"
    pack.write_text(
        "".join(
            json.dumps({"kind": "coins", "notes": [i % 7 + 1, 3, 5], "target": 8 + i % 5}) + "\n"
            for i in range(count)
        )
    )
    best = {"cgroup-v1": float("inf"), "rusage": float("inf")}
    for rep in range(3):
        for way, extra in (("cgroup-v1", {}), ("rusage", {"PACKSOLVE_NO_CGROUPS": "1"})):
            env = {"PACKSOLVE_DATABASE_URL": f"sqlite:///{folder / f'tiny-{way}-{rep}.db'}", **extra}
            _, _, wall, _ = run_packsolve(
                ["solve", str(pack), "--jobs", "2", "-q", "--time-limit", "10"], env
            )
            best[way] = min(best[way], wall)
    return best


def percent(share: float) -> str:
    """Return share as a percentage; a dash where there was nothing to measure (NaN)."""
    return "—" if share != share else f"{100 * share:.1f} %"


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--levels", type=int, default=300)
    p.add_argument("--limit", default="0.5", help="the CPU (or wall) limit per level, seconds")
    p.add_argument("--tiny", type=int, default=2000, help="tiny levels for the cgroup cost (0: skip)")
    p.add_argument("--out", type=Path, default=RESULTS / "cpu_limit_repro.md")
    args = p.parse_args()

    folder = Path(tempfile.mkdtemp(prefix="bench-cpu-limit-"))
    loads: dict[str, float] = {}
    try:
        pack = pack_of(args.levels, folder)
        results = {}
        for option in ("--cpu-limit", "--time-limit"):
            limit = [option, args.limit]
            loads[f"{option} as is"] = os.getloadavg()[0]
            as_is = solve(folder, pack, f"{option[2:]}-as-is", limit)
            with hogs() as n_hogs:
                loaded = solve(folder, pack, f"{option[2:]}-loaded", limit)
                loads[f"{option} loaded"] = os.getloadavg()[0]
            results[option] = compared(as_is, loaded)
        cost = tiny(folder, args.tiny) if args.tiny else None
    finally:
        shutil.rmtree(folder, ignore_errors=True)

    from packsolve.execution import cgroups

    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# Reproducibility under load: --cpu-limit against --time-limit",
        "",
        f"`{' '.join(['python -m benchmarks.cpu_limit_repro', *sys.argv[1:]])}`, {when}; {machine()}; "
        f"measured by {cgroups.mode()}. {args.levels} sudoku (magictour top1465, first {args.levels}), "
        f"heuristic `plain`, `solve --jobs 2`, limit {args.limit} s; loaded: {n_hogs} × `yes > /dev/null`. "
        "Load average (1 min) at each solve: " + ", ".join(f"{k} {v:.1f}" for k, v in loads.items()) + ".",
        "",
        "| limit | same status | changed | median CPU difference (decided by both) | (all levels) "
        "| decided as is / loaded | CPU s as is / loaded | wall s as is / loaded |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for option, r in results.items():
        lines.append(
            f"| `{option} {args.limit}` | {100 * r['same']:.1f} % | {r['changed']} "
            f"| {percent(r['cpu_diff_decided'])} "
            f"| {percent(r['cpu_diff_all'])} | {r['decided'][0]} / {r['decided'][1]} "
            f"| {r['cpu'][0]:.0f} / {r['cpu'][1]:.0f} | {r['wall'][0]:.0f} / {r['wall'][1]:.0f} |"
        )
    if cost is not None:
        lines += [
            "",
            f"Cost of a cgroup per attempt: {args.tiny} tiny coins levels, `solve --jobs 2`, best of 3: "
            f"cgroup-v1 {cost['cgroup-v1']:.2f} s, rusage (PACKSOLVE_NO_CGROUPS=1) {cost['rusage']:.2f} s "
            f"({100 * (cost['cgroup-v1'] / cost['rusage'] - 1):+.1f} %).",
        ]
    lines.append("")
    publish("\n".join(lines), args.out)


if __name__ == "__main__":
    main()
