"""Several heuristics in one run against one run per heuristic: makespan, and the virtual best solver.

Issue 36 item 2's measure: a matrix run (`packsolve solve --heuristic a,b,c`, every level once with
each heuristic, level by level) against the separate runs of each heuristic on the same levels, on
the same machine, each `packsolve solve` a child process timed from start to exit (the goal: the
matrix not slower than the separate runs together). The separate runs are the places of the
--heuristic text (`sudoku=plain+dlx` runs `sudoku=plain`, then `sudoku=dlx`). The runs alternate
matrix-first and separate-first over --rounds rounds, each into a fresh SQLite database; the figures
are the medians. The virtual best solver (`report matrix RUN`: the best heuristic per level, against
the best single one) is the matrix run's, and the matrix run's cells are checked against the
separate runs' (status and nodes, where a node limit makes them repeatable).

Usage: nice .venv/bin/python -m benchmarks.heuristic_matrix [--pack DIR ... | --magictour N]
       [--heuristic TEXT] [--time-limit 5] [--node-limit N] [--jobs 2] [--rounds 1]
Writes benchmarks/results/heuristic_matrix.md.
"""

from __future__ import annotations

import json
import statistics
import tempfile
from pathlib import Path

from benchmarks.cpu_limit_repro import pack_of
from benchmarks.harness import RESULTS, ROOT, machine_line, markdown_table, parser, publish, run_packsolve
from packsolve.request import HeuristicMatrix

DECIDED = ("solved", "no_solution")
PACKS = [ROOT / "examples" / "packs" / name for name in ("sudoku", "sliding", "onestroke")]
HEURISTIC = "sudoku=plain+dlx+propagate,sliding=astar+idastar+pdb,onestroke=plain+warnsdorff+portfolio"


def places(text: str) -> list[str]:
    """Return the one-heuristic --heuristic text of each place of a matrix text, in order."""
    matrix = HeuristicMatrix.parse(text)
    width = max([len(matrix.common), *(len(names) for _, names in matrix.per_kind)])
    out = []
    for i in range(width):
        parts = [matrix.common[i] or "default"] if i < len(matrix.common) else []
        parts += [f"{kind}={names[i]}" for kind, names in matrix.per_kind if i < len(names)]
        out.append(",".join(parts) or "default")
    return out


def solve(db: Path, packs: list[Path], heuristic: str, limits: list[str], label: str) -> tuple[float, dict]:
    """Run `packsolve solve` into db; return its wall seconds and its export by (level hash, heuristic)."""
    env = {"PACKSOLVE_DATABASE_URL": f"sqlite:///{db}"}
    args = ["solve", *map(str, packs), "--heuristic", heuristic, *limits, "-q", "--label", label]
    _, _, wall, _ = run_packsolve(args, env)
    out, _, _, _ = run_packsolve(["export", label, "--format", "jsonl"], env)
    records = [json.loads(line) for line in out.splitlines()]
    return wall, {(r["level_hash"], r["heuristic"]): (r["status"], r["nodes"]) for r in records}


def one_round(packs: list[Path], text: str, limits: list[str], matrix_first: bool) -> dict:
    """Run the matrix and the separate runs (in the order asked), each into a fresh database."""
    with tempfile.TemporaryDirectory() as tmp:
        matrix_db, separate_db = Path(tmp) / "matrix.db", Path(tmp) / "separate.db"

        def matrix() -> tuple[float, dict]:
            return solve(matrix_db, packs, text, limits, "matrix")

        def separate() -> tuple[float, dict]:
            walls, cells = 0.0, {}
            for i, place in enumerate(places(text)):
                wall, got = solve(separate_db, packs, place, limits, f"alone-{i}")
                walls, cells = walls + wall, cells | got
            return walls, cells

        first, second = (matrix, separate) if matrix_first else (separate, matrix)
        a, b = first(), second()
        (m_wall, m_cells), (s_wall, s_cells) = (a, b) if matrix_first else (b, a)
        env = {"PACKSOLVE_DATABASE_URL": f"sqlite:///{matrix_db}"}
        report, _, _, _ = run_packsolve(["report", "matrix", "matrix", "--format", "json"], env)
        both = [k for k in m_cells if k in s_cells]
        decided = [k for k in both if m_cells[k][0] in DECIDED and s_cells[k][0] in DECIDED]
        return {
            "matrix_s": m_wall,
            "separate_s": s_wall,
            "same": m_cells == s_cells,
            "same_status": sum(m_cells[k][0] == s_cells[k][0] for k in both),
            "decided_both": len(decided),
            "same_decided": sum(m_cells[k] == s_cells[k] for k in decided),
            "attempts": len(m_cells),
            "vbs": json.loads(report)["virtual_best"],
        }


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--pack", type=Path, action="append", help="a pack (several: all); default: mixed")
    ap.add_argument("--heuristic", default=HEURISTIC)
    ap.add_argument("--time-limit", default="5")
    ap.add_argument("--node-limit", default=None)
    ap.add_argument("--jobs", default="2")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument(
        "--magictour",
        type=int,
        default=0,
        help="instead of --pack: the first N sudokus of magictour top1465 (the reproducibility pack)",
    )
    opts = ap.parse_args()
    packs = opts.pack or PACKS
    if opts.magictour:
        packs = [pack_of(opts.magictour, Path(tempfile.mkdtemp(prefix="packsolve-matrix-")))]
    limits = ["--time-limit", opts.time_limit, "-j", opts.jobs]
    limits += ["--node-limit", opts.node_limit] if opts.node_limit else []
    rounds = [one_round(packs, opts.heuristic, limits, i % 2 == 0) for i in range(opts.rounds)]
    matrix_s = statistics.median(r["matrix_s"] for r in rounds)
    separate_s = statistics.median(r["separate_s"] for r in rounds)
    vbs = rounds[-1]["vbs"]
    rows = [
        ("attempts", rounds[-1]["attempts"]),
        ("matrix run, wall s (median)", f"{matrix_s:.2f}"),
        ("separate runs together, wall s (median)", f"{separate_s:.2f}"),
        ("matrix / separate", f"{matrix_s / separate_s:.3f}"),
        ("cells equal to the separate runs' (every round)", all(r["same"] for r in rounds)),
        ("cells of the same status (last round)", f"{rounds[-1]['same_status']} of {rounds[-1]['attempts']}"),
        (
            "cells decided in both: same status and nodes (last round)",
            f"{rounds[-1]['same_decided']} of {rounds[-1]['decided_both']}",
        ),
        ("VBS: levels every place ran, decided", f"{vbs['levels']}, {vbs['decided']}"),
        ("VBS PAR-2 s", vbs["par2_s"]),
        (
            f"best single ({vbs['single']}): decided, PAR-2 s",
            f"{vbs['single_decided']}, {vbs['single_par2_s']}",
        ),
        ("VBS saves", f"{vbs['saves_s']} s ({vbs['saves_pct']} %)"),
    ]
    command = "python -m benchmarks.heuristic_matrix " + " ".join(
        [*(f"--pack {p}" for p in opts.pack or []), f"--heuristic '{opts.heuristic}'", *limits[:2]]
        + ([f"--magictour {opts.magictour}"] if opts.magictour else [])
        + ([f"--node-limit {opts.node_limit}"] if opts.node_limit else [])
        + [f"--jobs {opts.jobs}", f"--rounds {opts.rounds}"]
    )
    text = "\n".join(
        [
            "# Several heuristics in one run against one run per heuristic",
            "",
            machine_line(),
            "",
            f"`{command}`",
            "",
            markdown_table(("figure", "value"), rows),
            "",
        ]
    )
    publish(text, RESULTS / "heuristic_matrix.md")


if __name__ == "__main__":
    main()
