"""What running a solver as an external program costs per level, against the same algorithm built in
and against GNU parallel running the same program once per level.

  python -m benchmarks.external_overhead                  # results in benchmarks/results/external_overhead.md
  python -m benchmarks.external_overhead --levels 200 --reps 5

The program is examples/solvers/knight.c (Warnsdorff's knight's tour with backtracking, built
here with its Makefile), the built-in is the heuristic `warnsdorff`: the same algorithm, node for
node (checked on every level). Levels are small knight's tours (5x5 to 12x12 boards, starts the
built-in solves in a few milliseconds), so the figures are the per-level overhead, not search.

Three views, each run alternately --reps times and reported as the best run:
- execution path: execute_attempts on the whole pack in this process (one solver child, no
  database): built-in vs external program, and a plain loop of subprocess.run as the floor of
  starting a process per level;
- end to end: `packsolve solve PACK --jobs J` into a fresh SQLite file, built-in vs external;
- GNU parallel: `parallel -j J bin/knight {} ::: FILES` (no limits, no checks, no database).
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.harness import RESULTS, ROOT, machine, parser, publish

PACKSOLVE = [sys.executable, "-m", "packsolve"]


def levels(count: int) -> list[dict]:
    """Return count distinct knight's tours (5x5 to 12x12) the built-in warnsdorff solves in 20,000 nodes."""
    from packsolve.api import Budget, Status
    from packsolve.puzzles import get_kind

    kind = get_kind("knights_tour")
    out = []
    for rows in range(5, 13):
        for cols in range(rows, 13):
            for r in range(rows):
                for c in range(cols):
                    level = {"kind": "knights_tour", "rows": rows, "cols": cols, "start": [r, c]}
                    board = kind.parse(level)
                    outcome = kind.solvers["warnsdorff"](board, Budget(None, 20_000))
                    if outcome.status is Status.SOLVED:
                        out.append({**kind.canonical(board), "kind": "knights_tour"})
                    if len(out) == count:
                        return out
    raise SystemExit(f"only {len(out)} levels found; ask for fewer with --levels")


def execution_path(pack: list[dict], program, reps: int) -> dict[str, float]:
    """Return the best seconds of the pack through execute_attempts (built-in, external) and a bare loop."""
    from packsolve.execution import AttemptSpec, Limits, execute_attempts
    from packsolve.levels import canonical_json

    limits = Limits(60.0)
    builtin = [AttemptSpec("knights_tour", "warnsdorff", lv, limits) for lv in pack]
    external = [AttemptSpec("knights_tour", program.name, lv, limits, program) for lv in pack]
    binary = str(Path(program.base) / "bin" / "knight")
    folder = Path(tempfile.mkdtemp(prefix="bench-levels-"))
    files = []
    for i, lv in enumerate(pack):
        files.append(folder / f"{i}.json")
        files[-1].write_text(canonical_json(lv))
    best = {"built-in": float("inf"), "external": float("inf"), "subprocess loop": float("inf")}
    nodes: dict[str, list[int]] = {}
    for _ in range(reps):
        for name, specs in (("built-in", builtin), ("external", external)):
            start = time.perf_counter()
            outcomes = list(execute_attempts(specs))
            elapsed = time.perf_counter() - start
            assert all(o.status.value == "solved" for o in outcomes), {o.status for o in outcomes}
            nodes[name] = [o.nodes for o in outcomes]
            if elapsed < best[name]:
                # Inside the solver: the attempts' own wall times (the search; for the program, its run).
                best[name], best[f"{name} inside"] = elapsed, sum(o.stats.wall_s for o in outcomes)
        start = time.perf_counter()
        for f in files:
            subprocess.run([binary, str(f)], stdout=subprocess.DEVNULL, check=True)
        best["subprocess loop"] = min(best["subprocess loop"], time.perf_counter() - start)
    assert nodes["built-in"] == nodes["external"], "the C program and the built-in disagree on node counts"
    shutil.rmtree(folder)
    return best


def end_to_end(tmp: Path, pack_file: Path, toml: Path, jobs: int, reps: int) -> dict[str, float]:
    """Return the best wall seconds of `packsolve solve` on the pack, built-in and external."""
    best = {"built-in": float("inf"), "external": float("inf")}
    runs = {
        "built-in": ["--heuristic", "warnsdorff"],
        "external": ["--heuristic", "warnsdorff-c", "--solvers", str(toml)],
    }
    for rep in range(reps):
        for name, extra in runs.items():
            db = tmp / f"{name}-{rep}.db"
            env = {**os.environ, "PACKSOLVE_DATABASE_URL": f"sqlite:///{db}"}
            subprocess.run([*PACKSOLVE, "db", "upgrade"], env=env, check=True, capture_output=True)
            start = time.perf_counter()
            res = subprocess.run(
                [*PACKSOLVE, "solve", str(pack_file), "-q", "--jobs", str(jobs), "--format", "json", *extra],
                env=env,
                capture_output=True,
                text=True,
            )
            wall = time.perf_counter() - start
            if res.returncode != 0:
                raise RuntimeError(res.stderr[-2000:])
            summary = json.loads(res.stdout)
            assert summary["counts"] == {"solved": summary["total"]}, summary["counts"]
            best[name] = min(best[name], wall)
    return best


def gnu_parallel(tmp: Path, pack: list[dict], binary: Path, jobs: int, reps: int) -> float | None:
    """Return the best wall seconds of GNU parallel running the program once per level file."""
    parallel = shutil.which("parallel")
    if parallel is None:
        return None
    from packsolve.levels import canonical_json

    folder = tmp / "files"
    folder.mkdir()
    files = []
    for i, lv in enumerate(pack):
        files.append(folder / f"{i:05d}.json")
        files[-1].write_text(canonical_json(lv))
    best = float("inf")
    for _ in range(reps):
        start = time.perf_counter()
        subprocess.run(
            [parallel, "-j", str(jobs), "--halt", "now,fail=1", str(binary), "{}", ":::", *map(str, files)],
            stdout=subprocess.DEVNULL,
            check=True,
        )
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--levels", type=int, default=1000)
    p.add_argument("--jobs", type=int, default=2, help="processes for solve and GNU parallel")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--out", type=Path, default=RESULTS / "external_overhead.md")
    args = p.parse_args()

    from packsolve.external.declaration import load_solvers

    tmp = Path(tempfile.mkdtemp(prefix="bench-external-"))
    try:
        example = shutil.copytree(
            ROOT / "examples" / "solvers", tmp / "solvers", ignore=shutil.ignore_patterns("bin")
        )
        subprocess.run(["make", "-C", str(example)], check=True, capture_output=True)
        toml = example / "packsolve.toml"
        program = load_solvers(toml)["warnsdorff-c"]
        pack = levels(args.levels)
        pack_file = tmp / "pack.jsonl"
        pack_file.write_text("".join(json.dumps(lv) + "\n" for lv in pack))
        loads = [os.getloadavg()[0]]
        path = execution_path(pack, program, args.reps)
        loads.append(os.getloadavg()[0])
        e2e = end_to_end(tmp, pack_file, toml, args.jobs, args.reps)
        loads.append(os.getloadavg()[0])
        par = gnu_parallel(tmp, pack, example / "bin" / "knight", args.jobs, args.reps)
        loads.append(os.getloadavg()[0])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    n = len(pack)

    def ms(seconds: float) -> str:
        return f"{1000 * seconds / n:.2f} ms"

    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# External solver overhead per level",
        "",
        f"`{' '.join(['python -m benchmarks.external_overhead', *sys.argv[1:]])}`, {when}; {machine()}; "
        f"load average {min(loads):.1f}–{max(loads):.1f}. {n} knight's tours (5x5 to 12x12), all solved, "
        f"node counts equal between the C program and the built-in `warnsdorff`; best of {args.reps} runs.",
        "",
        "| view | built-in `warnsdorff` | external `warnsdorff-c` | overhead per level | peer |",
        "| --- | ---: | ---: | ---: | ---: |",
        f"| execution path (one solver child, no database) | {ms(path['built-in'])} | {ms(path['external'])} "
        f"| {ms(path['external'] - path['built-in'])} | subprocess.run loop {ms(path['subprocess loop'])} |",
        f"| of which inside the solver (attempts' wall time) | {ms(path['built-in inside'])} "
        f"| {ms(path['external inside'])} | | |",
        f"| `packsolve solve --jobs {args.jobs}` end to end (SQLite) | {ms(e2e['built-in'])} "
        f"| {ms(e2e['external'])} "
        f"| {ms(e2e['external'] - e2e['built-in'])} | "
        + (f"GNU parallel -j {args.jobs} {ms(par)} |" if par is not None else "GNU parallel not installed |"),
        "",
        f"Around the solver (execution path, total minus inside): built-in "
        f"{ms(path['built-in'] - path['built-in inside'])}, "
        f"external {ms(path['external'] - path['external inside'])}. "
        f"external / built-in: {path['external'] / path['built-in']:.1f}x on the execution path, "
        f"{e2e['external'] / e2e['built-in']:.2f}x end to end"
        + (
            f"; packsolve with the program / GNU parallel with it: {e2e['external'] / par:.2f}x"
            if par
            else ""
        )
        + ".",
        "",
    ]
    publish("\n".join(lines), args.out)


if __name__ == "__main__":
    main()
