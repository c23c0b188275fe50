"""One hard level on a local pool, whole against split into parts (`solve --split-after`, issue 38).

Per instance of Korf's fifteen-puzzles (or, with --twenty-four, Korf and Felner's 24-puzzles), into a
fresh SQLite database: `packsolve solve` of the one level whole (which gives it a history), then
with `--split-after` below that history (so it is split: parts the pool's processes share), then
whole again (not with --whole-once); each a child process on --jobs processes. The figures are the
attempts' own: wall time (the level's, from its first part's start for the split one), CPU time (its
parts' summed) and nodes; the whole run's wall is the median of its two. The answer's length must be
the published optimal one. Tables a heuristic needs (pdb-6666) are built by the first solve, before
its attempt's clock.

Usage: nice .venv/bin/python -m benchmarks.split_local [--ids 7,3] [--heuristic linear-conflict]
       [--twenty-four 38 --heuristic pdb-6666] [--jobs 2]
Writes benchmarks/results/split_local.md (split_local_24.md with --twenty-four; --out NAME instead).
"""

from __future__ import annotations

import json
import re
import statistics
import tempfile
from pathlib import Path

from benchmarks.harness import RESULTS, machine_line, markdown_table, parser, publish, run_packsolve
from benchmarks.sliding_common import KORF100, KORF_FELNER50, read_korf, sliding_set


def attempt(env: dict[str, str], pack: Path, args: list[str]) -> dict:
    """Run `packsolve solve PACK ARGS`; return its one attempt's export record."""
    out, _, _, _ = run_packsolve(["solve", str(pack), *args, "-q", "--format", "json"], env)
    run = json.loads(out)["run"]
    records, _, _, _ = run_packsolve(["export", str(run), "--format", "jsonl"], env)
    [record] = [json.loads(line) for line in records.splitlines()]
    return record


def one(
    ident: str, optimal: int | None, tiles: tuple[int, ...], heuristic: str, jobs: str, again: bool = True
) -> list[object]:
    """Solve one instance whole, split, whole again (unless not again); return its table row."""
    n = 5 if len(tiles) == 25 else 4
    with tempfile.TemporaryDirectory() as tmp:
        pack = Path(tmp) / "level.jsonl"
        pack.write_text(
            json.dumps({"kind": "sliding", "tiles": [list(tiles[r * n : r * n + n]) for r in range(n)]})
        )
        env = {"PACKSOLVE_DATABASE_URL": f"sqlite:///{tmp}/bench.db"}
        args = ["--heuristic", heuristic, "-j", jobs, "--time-limit", "7200"]
        first = attempt(env, pack, args)
        split = attempt(env, pack, [*args, "--split-after", f"{max(first['wall_s'] / 4, 0.001):.3f}"])
        second = attempt(env, pack, args) if again else first
    return row(ident, heuristic, optimal, (first, split, second))


HEADER = (
    "id",
    "heuristic",
    "length",
    "whole: wall / CPU s",
    "whole: nodes",
    "split: wall / CPU s",
    "split: × nodes",
    "parts, rounds",
    "speed-up (wall)",
)


def row(ident: str, heuristic: str, optimal: int | None, records: tuple[dict, dict, dict]) -> list[object]:
    """Return the table row of one instance from its three attempts' records (whole, split, whole again),
    each checked solved at the optimal length, the split one by its parts."""
    first, split, again = records
    for record in records:
        assert record["status"] == "solved" and record["length"] == optimal, record
    assert "parts' answers" in split["message"], split["message"]
    whole_wall = statistics.median([first["wall_s"], again["wall_s"]])
    whole_cpu = statistics.median([first["cpu_s"], again["cpu_s"]])
    parts, rounds = parts_and_rounds(split["message"])
    return [
        ident,
        heuristic,
        optimal,
        f"{whole_wall:.2f} / {whole_cpu:.2f}",
        f"{first['nodes']:,}",
        f"{split['wall_s']:.2f} / {split['cpu_s']:.2f}",
        f"{split['nodes'] / first['nodes']:.3f}",
        f"{parts}, {rounds} rounds",
        f"**{whole_wall / split['wall_s']:.2f}**",
    ]


def parts_and_rounds(message: str | None) -> tuple[str, str]:
    """Return how many parts and rounds a split level's message says it ran ("-" for what it does not
    say: a level not split, or one that ended otherwise)."""
    found = re.search(r"of (\d+) parts'.* in (\d+) rounds", message or "") or re.search(
        r"part \d+ of (\d+)()", message or ""
    )
    return (found.group(1), found.group(2) or "-") if found else ("-", "-")


def write(title: str, command: str, rows: list[list[object]], path: Path) -> None:
    """Publish the table of rows under title, with the machine and the command that made it."""
    text = "\n".join(
        ["# " + title, "", machine_line(), "", f"`{command}`", "", markdown_table(HEADER, rows), ""]
    )
    publish(text, path)


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--ids", default="7,3", help="Korf's fifteen-puzzles, by id (comma-separated)")
    ap.add_argument("--twenty-four", default="", help="instead: Korf and Felner's 24-puzzles, by id")
    ap.add_argument(
        "--heuristic", default=None, help="default: linear-conflict (pdb-6666 with --twenty-four)"
    )
    ap.add_argument("--jobs", default="2")
    ap.add_argument("--out", default=None, help="the results file's name [split_local.md, split_local_24.md]")
    ap.add_argument("--whole-once", action="store_true", help="run each level whole once, not twice")
    opts = ap.parse_args()
    listed, wanted = (KORF_FELNER50, opts.twenty_four) if opts.twenty_four else (KORF100, opts.ids)
    heuristic = opts.heuristic or ("pdb-6666" if opts.twenty_four else "linear-conflict")
    by_id = {i.ident: i for i in read_korf(sliding_set(listed))}
    rows = [
        one(ident, by_id[ident].optimal, by_id[ident].tiles, heuristic, opts.jobs, not opts.whole_once)
        for ident in (w.strip() for w in wanted.split(","))
    ]
    command = "python -m benchmarks.split_local " + (
        f"--twenty-four {opts.twenty_four}" if opts.twenty_four else f"--ids {opts.ids}"
    )
    if opts.out:
        command += f" --out {opts.out}"
    if opts.whole_once:
        command += " --whole-once"
    write(
        "One hard level on a local pool: whole against split into parts",
        f"{command} --heuristic {heuristic} --jobs {opts.jobs}",
        rows,
        RESULTS / (opts.out or ("split_local_24.md" if opts.twenty_four else "split_local.md")),
    )


if __name__ == "__main__":
    main()
