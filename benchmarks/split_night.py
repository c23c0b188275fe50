"""A night's makespan with and without splitting its hard levels (`solve --split-after`, issue 38).

The night, all 24-puzzles solved optimally with pdb-6666: --small random boards (walks of the blank from
the goal, --moves long, seeded: a second or so each, some much less, some several) and, last in the
pack, the --hard Korf-Felner instances. The same pack is solved on --jobs processes whole, then with
--split-after, then whole again (not with --whole-once), each a first night: a fresh SQLite database,
no history, so a level is split only once it runs past --split-after (split_plans.Probe); then a
second night in the first whole night's database, with `--split-after share` (the levels expected past
each process's share of the night, from that history, split). The makespan is the
`packsolve solve` command's wall time, and the lower bound is the whole nights' CPU time (the
attempts', median of the two) over the processes. Tables a heuristic needs (pdb-6666) are built
before the clock (`packsolve kinds --prepare`). Every answer is verified; the 24-puzzles' lengths
must be the published optimal ones.

Usage: nice .venv/bin/python -m benchmarks.split_night [--small 40] [--moves 100] [--hard 30,44]
       [--split-after 10] [--jobs 2] [--whole-once] [--out NAME]
Writes benchmarks/results/split_night.md (--out NAME instead).
"""

from __future__ import annotations

import json
import random
import statistics
import tempfile
from pathlib import Path

from benchmarks.harness import RESULTS, machine_line, markdown_table, parser, publish, run_packsolve
from benchmarks.sliding_common import KORF_FELNER50, read_korf, sliding_set, walk

HEURISTIC = "pdb-6666"


def night_pack(path: Path, small: int, moves: int, hard: list[tuple[int, ...]], seed: int = 1) -> None:
    """Write the night: small random 5x5 boards (seeded walks of moves), then the hard ones."""
    rng = random.Random(seed)
    boards = [walk(5, moves, rng) for _ in range(small)] + [list(t) for t in hard]
    with path.open("w") as f:
        for b in boards:
            f.write(json.dumps({"kind": "sliding", "tiles": [b[r * 5 : r * 5 + 5] for r in range(5)]}) + "\n")


def night(pack: Path, jobs: str, split_after: float | str | None, db: Path) -> tuple[float, list[dict]]:
    """Solve the pack into the SQLite database db; return (the command's wall s, the attempts' records)."""
    env = {"PACKSOLVE_DATABASE_URL": f"sqlite:///{db}"}
    args = ["solve", str(pack), "--heuristic", HEURISTIC, "-j", jobs, "--time-limit", "7200"]
    if split_after is not None:
        args += ["--split-after", str(split_after)]
    out, _, wall, _ = run_packsolve([*args, "-q", "--format", "json"], env)
    run = json.loads(out)["run"]
    records, _, _, _ = run_packsolve(["export", str(run), "--format", "jsonl"], env)
    return wall, [json.loads(line) for line in records.splitlines()]


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--small", type=int, default=40, help="random 24-puzzles (walks) before the hard ones")
    ap.add_argument("--moves", type=int, default=100, help="each walk's length")
    ap.add_argument("--hard", default="30,44", help="Korf-Felner 24-puzzles, by id, last in the pack")
    ap.add_argument("--split-after", type=float, default=10.0)
    ap.add_argument("--jobs", default="2")
    ap.add_argument("--whole-once", action="store_true", help="run the night whole once, not twice")
    ap.add_argument("--out", default="split_night.md", help="the results file's name [split_night.md]")
    opts = ap.parse_args()
    by_id = {i.ident: i for i in read_korf(sliding_set(KORF_FELNER50))}
    hard = [by_id[h.strip()] for h in opts.hard.split(",")]
    run_packsolve(["kinds", "--prepare", "sliding", HEURISTIC, "--size", "5"], {})  # before any clock
    with tempfile.TemporaryDirectory() as tmp:
        pack = Path(tmp) / "night.jsonl"
        night_pack(pack, opts.small, opts.moves, [h.tiles for h in hard])
        first = Path(tmp) / "first.db"
        whole_wall, whole = night(pack, opts.jobs, None, first)
        split_wall, split = night(pack, opts.jobs, opts.split_after, Path(tmp) / "split.db")
        if opts.whole_once:
            again_wall, again = whole_wall, whole
        else:
            again_wall, again = night(pack, opts.jobs, None, Path(tmp) / "again.db")
        # A second night, the first one's history known: the levels past each process's share split.
        share_wall, share = night(pack, opts.jobs, "share", first)
    for records in (whole, split, again, share):
        assert all(r["status"] == "solved" for r in records), [r for r in records if r["status"] != "solved"]
        lengths = [r["length"] for r in records[-len(hard) :]]
        assert lengths == [h.optimal for h in hard], lengths
    jobs = int(opts.jobs)
    cpu = statistics.median([sum(r["cpu_s"] for r in whole), sum(r["cpu_s"] for r in again)])  # one if once
    bound = cpu / jobs
    makespan = statistics.median([whole_wall, again_wall])
    split_levels = [r for r in split if "split after" in (r["message"] or "")]
    last = [records[-len(hard) :] for records in (whole, split, share)]
    hard_rows = [
        [f"24-puzzle {h.ident}", *(f"{r['wall_s']:.1f}" for r in rs), h.optimal]
        for h, *rs in zip(hard, *last, strict=True)
    ]
    rows = [
        ["whole", f"{makespan:.1f}", f"{makespan / bound:.2f}", "-"],
        [
            f"--split-after {opts.split_after:g}",
            f"{split_wall:.1f}",
            f"{split_wall / bound:.2f}",
            f"{len(split_levels)} level(s) split",
        ],
        [
            "second night, --split-after share",
            f"{share_wall:.1f}",
            f"{share_wall / bound:.2f}",
            f"{sum(1 for r in share if 'parts' in (r['message'] or ''))} level(s) split",
        ],
    ]
    text = "\n".join(
        [
            "# A night with and without splitting its hard levels",
            "",
            machine_line(),
            "",
            f"`python -m benchmarks.split_night --small {opts.small} --moves {opts.moves} --hard {opts.hard} "
            f"--split-after {opts.split_after:g} --jobs {opts.jobs}"
            + (" --whole-once" if opts.whole_once else "")
            + ("" if opts.out == "split_night.md" else f" --out {opts.out}")
            + "`",
            "",
            f"{len(whole)} levels, {cpu:.1f} CPU s in all (the whole night's; the median of two unless "
            f"--whole-once): lower bound {bound:.1f} s on {jobs} processes.",
            "",
            markdown_table(("night", "makespan s", "× lower bound", "split"), rows),
            "",
            markdown_table(
                ("hard level", "whole: wall s", "split: wall s", "share night: wall s", "length"), hard_rows
            ),
            "",
        ]
    )
    publish(text, RESULTS / opts.out)


if __name__ == "__main__":
    main()
