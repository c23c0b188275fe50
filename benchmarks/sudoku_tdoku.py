"""Sudoku C loops against tdoku, the fastest published solver, on the public hard collections.

Run from the repository root with tdoku built outside the repository (never vendored):

    git clone https://github.com/t-dillon/tdoku ../tdoku   # or any snapshot of it
    cd ../tdoku && mkdir build && cd build && cmake .. && make tdoku_shared run_benchmark
    PACKSOLVE_TDOKU=../tdoku/build nice .venv/bin/python benchmarks/sudoku_tdoku.py

Both sides count solutions up to two over a whole set with the loop in C: packsolve's
``band-configs`` through ``packsolve.native.sudoku_bands.count_batch(..., configs=True)`` (one call
per pass, timed around the call; ``band-triads``, the same call without ``configs``, is timed too),
tdoku through its own ``run_benchmark`` (``-r0``: the set as it is, in file
order; ``-n``: one pass is the set; tdoku times its passes itself and reports microseconds per
puzzle). Each side repeats passes for the same number of seconds and reports the mean pass; the
two alternate, round after round, and each keeps its best round, the machine being shared.
Every answer of both packsolve loops is checked with the kind's ``verify``; tdoku's solution counts
are checked, puzzle by puzzle, against packsolve's through ``libtdoku_shared.so`` (outside the clock).
``propagate``'s C loop is timed too (one pass, a C call per puzzle from Python), for the record.
Writes benchmarks/results/sudoku_tdoku.md.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from public_data import public_data

from packsolve.native import sudoku as per_cell
from packsolve.native import sudoku_bands
from packsolve.puzzles.sudoku.kind import KIND, parse, read_lines

SETS = {
    "top95": "norvig_top95.txt",
    "top1465": "tdoku_puzzles3_magictour_top1465.txt",
    "forum1106": "tdoku_puzzles6_forum_hardest_1106.txt",
    "17clue": "royle_17clue_49151_norvig.txt",
}
RESULTS = Path(__file__).resolve().parent / "results"
ENV = "PACKSOLVE_TDOKU"


@dataclass(frozen=True)
class Row:
    """One set: packsolve's loops and tdoku's, best round each, in seconds for the whole set."""

    set: str
    puzzles: int
    configs_s: float
    configs_nodes: int
    bands_s: float
    bands_nodes: int
    propagate_s: float
    tdoku_s: float
    tdoku_guesses: float


def read_set(name: str) -> list[str]:
    """Return the grids of a public set ('.' for blanks), read by the kind's own line reader."""
    grids = []
    for _, item in read_lines(public_data("sudoku", SETS[name]).read_text()):
        if isinstance(item, Exception):
            raise SystemExit(f"{name}: {item}")
        grids.append(item["grid"])
    return grids


def packed(grids: list[str]) -> bytes:
    return b"".join(bytes(0 if ch == "." else int(ch) for ch in grid) for grid in grids)


def checked_counts(grids: list[str], configs: bool) -> tuple[bytes, int]:
    """Return a band loop's solution counts and nodes; exit if any answer fails the kind's verify."""
    name = "band-configs" if configs else "band-triads"
    counts, solutions, nodes = sudoku_bands.count_batch(packed(grids), 2, configs)
    for i, grid in enumerate(grids):
        if not counts[i]:
            raise SystemExit(f"{name} found no solution for {grid}")
        answer = solutions[i * 81 : (i + 1) * 81].decode()
        if (why := KIND.verify(parse({"grid": grid}), answer)) is not None:
            raise SystemExit(f"{name} answer to {grid} fails verify: {why}")
    return counts, nodes


def tdoku_counts(library: Path, grids: list[str]) -> list[int]:
    """Return tdoku's solution counts (up to 2) through its shared library."""
    lib = ctypes.CDLL(str(library))
    solve = lib.TdokuSolverDpllTriadSimd
    solve.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint32, ctypes.c_char_p, ctypes.c_void_p]
    solve.restype = ctypes.c_size_t
    out, guesses = ctypes.create_string_buffer(82), ctypes.c_size_t()
    return [solve(grid.encode(), 2, 0, out, ctypes.byref(guesses)) for grid in grids]


def time_bands(data: bytes, seconds: float, configs: bool) -> float:
    """Return the mean time of one pass over the set, passes repeated for at least seconds (as tdoku's)."""
    passes, t0 = 0, time.perf_counter()
    while True:
        sudoku_bands.count_batch(data, 2, configs)
        passes += 1
        elapsed = time.perf_counter() - t0
        if elapsed >= seconds:
            return elapsed / passes


def time_propagate(cells: list[bytes]) -> float:
    count = per_cell.count
    t0 = time.perf_counter()
    for c in cells:
        count(c, 2, -1, -1.0)
    return time.perf_counter() - t0


def time_tdoku(run_benchmark: Path, path: Path, n: int, seconds: int) -> tuple[float, float]:
    """Return tdoku's (seconds for the whole set, guesses per puzzle) from one run_benchmark call."""
    cmd = [str(run_benchmark), "-s", "tdoku", "-r0", "-n", str(n), "-t", str(seconds), "-w", "1", str(path)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    row = next(line for line in out.splitlines() if line.startswith("|tdoku"))
    fields = [f.strip().replace(",", "").replace("'", "") for f in row.split("|")[1:-1]]
    usec, guesses = float(fields[2]), float(fields[4])
    return usec * n / 1e6, guesses


def measure(name: str, build: Path, rounds: int, seconds: int) -> Row:
    grids = read_set(name)
    counts, configs_nodes = checked_counts(grids, configs=True)
    triads_counts, nodes = checked_counts(grids, configs=False)
    theirs = tdoku_counts(build / "libtdoku_shared.so", grids)
    for ours, loop in ((counts, "band-configs"), (triads_counts, "band-triads")):
        if list(ours) != theirs:
            differ = sum(a != b for a, b in zip(ours, theirs, strict=True))
            raise SystemExit(f"{name}: tdoku and {loop} disagree on {differ} solution counts")
    data = packed(grids)
    cells = [data[i : i + 81] for i in range(0, len(data), 81)]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{name}.txt"  # tdoku reads '.' blanks only, one puzzle a line
        path.write_text("\n".join(grids) + "\n")
        configs = bands = prop = tdoku = float("inf")
        guesses = 0.0
        for _ in range(rounds):
            configs = min(configs, time_bands(data, seconds, configs=True))
            bands = min(bands, time_bands(data, seconds, configs=False))
            prop = min(prop, time_propagate(cells))
            t, guesses = time_tdoku(build / "run_benchmark", path, len(grids), seconds)
            tdoku = min(tdoku, t)
    return Row(name, len(grids), configs, configs_nodes, bands, nodes, prop, tdoku, guesses)


def machine() -> str:
    lines = Path("/proc/cpuinfo").read_text().splitlines()
    model = next((ln.split(":", 1)[1].strip() for ln in lines if "model name" in ln), "?")
    load = os.getloadavg()[0]
    return f"{os.cpu_count()} cores ({model}), Python {sys.version.split()[0]}, load average {load:.1f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tdoku", default=os.environ.get(ENV), help=f"tdoku's build directory (or ${ENV})")
    ap.add_argument("--sets", default=",".join(SETS), help="comma-separated: " + ",".join(SETS))
    ap.add_argument("--rounds", type=int, default=5, help="alternating rounds; the best of each side is kept")
    ap.add_argument("--seconds", type=int, default=2, help="tdoku's own test time per round")
    ap.add_argument("--out", default=str(RESULTS / "sudoku_tdoku.md"))
    args = ap.parse_args(argv)
    if not args.tdoku:
        ap.error(f"give tdoku's build directory with --tdoku or ${ENV}")
    build = Path(args.tdoku)
    rows = []
    for name in args.sets.split(","):
        row = measure(name, build, args.rounds, args.seconds)
        rows.append(row)
        print(
            f"{name:10} {row.puzzles:6} configs {row.configs_s:8.4f} s  triads {row.bands_s:8.4f} s  "
            f"propagate {row.propagate_s:8.4f} s  tdoku {row.tdoku_s:8.4f} s  "
            f"ratio {row.configs_s / row.tdoku_s:5.2f}",
            flush=True,
        )
    lines = [
        "# Sudoku: band-configs (and band-triads) against tdoku, counting solutions to two",
        "",
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {machine()}.",
        f"`{' '.join(sys.argv)}`; tdoku build: `{os.path.relpath(build)}`.",
        "",
        "| set | puzzles | band-configs s | nodes | tdoku s | tdoku guesses / puzzle | band-configs / tdoku "
        "| band-triads s | nodes | band-triads / tdoku | propagate s (a C call per puzzle) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| {r.set} | {r.puzzles:,} | {r.configs_s:.4f} | {r.configs_nodes:,} | {r.tdoku_s:.4f} | "
            f"{r.tdoku_guesses:.2f} | {r.configs_s / r.tdoku_s:.2f}x | {r.bands_s:.4f} | {r.bands_nodes:,} | "
            f"{r.bands_s / r.tdoku_s:.2f}x | {r.propagate_s:.4f} |"
        )
    lines += [
        "",
        f"Best of {args.rounds} alternating rounds; in a round each side repeats passes over the set for "
        f"{args.seconds} s and gives the mean pass (tdoku: its run_benchmark, after a 1 s warm-up). "
        "Every band-configs and band-triads answer passed `verify`; tdoku's solution counts (up to 2) "
        "equal both loops' on every puzzle.",
    ]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
