"""How many cores would solve all 50 of Korf and Felner's 24-puzzles in one night, split (issue 38).

Reads what was measured (no search is run): each board's CPU time with `pdb-6666` where it was solved
(benchmarks/results/sliding_24puzzle_optimal.jsonl, one core; split_cluster.md, its parts' CPU), and
for every other board the largest of what it is known to need: its projection from the fit over the
boards solved (sliding_24puzzle_projection.md: a lower bound, the boards solved being the easy ones
of each iteration count), the CPU it already spent unsolved (a floor), and its projection from the
published node count where there is one (sliding_24puzzle_optimal: our expanded / their generated
nodes on the boards solved with one, at our node rate). The night's CPU is their sum times the
splitting's CPU overhead (--overhead: the parts' CPU over the whole search's, the worst measured on
24-puzzles by default), over the night's length; the board that needs the most must also be done in
the night by the cores it is split across (the speed-up it needs is printed: compare it with the
simulated speed-ups of split_overhead --twenty-four).

Usage: python -m benchmarks.split_projection [--night-hours 8] [--overhead 1.18]
Writes benchmarks/results/split_projection.md.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

from benchmarks.harness import RESULTS, markdown_table, parser, publish, utc_now
from benchmarks.sliding_24puzzle_optimal import PUBLISHED_GENERATED, rates

# How far the fit's projections may fall short, for the line that says what that would change.
FIT_SLACK = 5.0


def _number(cell: str) -> float | None:
    digits = cell.replace("~", "").replace(",", "").strip()
    return float(digits) if re.fullmatch(r"[0-9.]+", digits) else None


def table_rows(path: Path) -> list[list[str]]:
    """Return the cells of the rows of a Markdown table in path (its header and rule left out)."""
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in path.read_text().splitlines()]
    return [r for r in rows[2:] if len(r) > 2 and r[0].isdigit()] if rows else []


def estimates() -> dict[str, tuple[float, str]]:
    """Return {board id: (CPU seconds it needs, where that figure comes from)} for all 50 boards."""
    records = [
        json.loads(line) for line in (RESULTS / "sliding_24puzzle_optimal.jsonl").read_text().splitlines()
    ]
    rate, ratio, _ = rates(records)
    out: dict[str, tuple[float, str]] = {}
    floors: dict[str, float] = {}
    for r in records:
        ident = str(r["id"])
        if r["status"] == "solved":
            out[ident] = (float(r["cpu_s"]), "solved, one core")
        else:
            floors[ident] = max(floors.get(ident, 0.0), float(r["cpu_s"]))
    cluster = RESULTS / "split_cluster.md"
    for row in table_rows(cluster) if cluster.exists() else []:
        ident, result, cpu = row[0], row[2], _number(row[5])
        if "solved" in result and cpu is not None:
            out[ident] = (cpu, "solved split, its parts' CPU")
        elif cpu is not None:
            floors[ident] = max(floors.get(ident, 0.0), cpu)
    for row in table_rows(RESULTS / "sliding_24puzzle_projection.md"):
        ident, fitted = row[0], _number(row[5])
        if ident in out or fitted is None:
            continue
        candidates = [(fitted, "fit (a lower bound)")]
        if ident in floors:
            candidates.append((floors[ident], "spent unsolved (a floor)"))
        if ident in PUBLISHED_GENERATED and rate:
            candidates.append((PUBLISHED_GENERATED[ident] * ratio / rate, "published node count"))
        out[ident] = max(candidates)
    return out


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--night-hours", type=float, default=8.0)
    ap.add_argument(
        "--overhead",
        type=float,
        default=1.18,
        help="the parts' CPU over the whole search's (1.18: 24-puzzle #30 on workers, the worst measured)",
    )
    opts = ap.parse_args()
    need = estimates()
    assert len(need) == 50, sorted(need)
    night_s = opts.night_hours * 3600
    total = sum(cpu for cpu, _ in need.values())
    # A board solved split counts its parts' CPU as it is: the overhead is in it already.
    split = sum(cpu for cpu, source in need.values() if source.startswith("solved split"))
    night_cpu = (total - split) * opts.overhead + split
    cores = math.ceil(night_cpu / night_s)
    fitted = sum(cpu for cpu, source in need.values() if source.startswith("fit"))
    slack_cores = math.ceil((night_cpu + (FIT_SLACK - 1) * fitted * opts.overhead) / night_s)
    largest_id, (largest, _) = max(need.items(), key=lambda kv: kv[1][0])
    by_source: dict[str, list[float]] = {}
    for cpu, source in need.values():
        by_source.setdefault(source, []).append(cpu)
    rows = [
        [source, len(cpus), f"{sum(cpus) / 3600:.1f}", f"{max(cpus) / 3600:.2f}"]
        for source, cpus in sorted(by_source.items(), key=lambda kv: -sum(kv[1]))
    ]
    text = "\n".join(
        [
            "# All 50 Korf-Felner 24-puzzles in one night, split: a projection",
            "",
            f"{utc_now()}, from the measured results (no search run). "
            f"`python -m benchmarks.split_projection --night-hours {opts.night_hours:g} "
            f"--overhead {opts.overhead:g}`",
            "",
            markdown_table(("CPU need from", "boards", "CPU h", "largest board h"), rows),
            "",
            f"In all **{total / 3600:.1f} CPU hours**; times {opts.overhead:g} for the split's overhead "
            f"(but the boards solved split), {night_cpu / 3600:.1f} h: **{cores} cores** for a night "
            f"of {opts.night_hours:g} h if the parts kept every core busy. The largest, #{largest_id}, "
            f"needs {largest / 3600:.1f} h alone: within the night it must be split across cores that "
            f"give it a speed-up of **{largest * opts.overhead / night_s:.1f}x** at least. The fit's "
            f"boards are the weakest figures: were each to need {FIT_SLACK:g}x its fit (the boards "
            f"stopped unsolved needed 2-5x theirs), the night would need {slack_cores} cores.",
            "",
            "Per board (CPU s): "
            + ", ".join(f"#{i} {cpu:,.0f}" for i, (cpu, _) in sorted(need.items(), key=lambda kv: -kv[1][0]))
            + ".",
            "",
        ]
    )
    publish(text, RESULTS / "split_projection.md")


if __name__ == "__main__":
    main()
