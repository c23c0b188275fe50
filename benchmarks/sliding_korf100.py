"""Korf's 100 fifteen-puzzles by `pdb` and `pdb-663` through `packsolve solve --jobs 2`; a peer.

Usage: nice python -m benchmarks.sliding_korf100 [--jobs 2] [--peer-ids 82,79,...] [--peer-timeout 60]
Writes benchmarks/results/sliding_korf100.md.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.harness import RESULTS, ROOT, markdown_table, parser
from benchmarks.sliding_common import KORF100, Instance, read_korf, run_peer, sliding_set


def build_tables(cache: Path, strong: bool) -> list[tuple[str, float, float]]:
    """Build the 4x4 pattern tables into an empty cache; return (group, wall s, CPU s) per table."""
    os.environ["PACKSOLVE_CACHE_DIR"] = str(cache)
    from packsolve.puzzles.sliding import pdb as sliding_pdb

    out = []
    groups = sliding_pdb.STRONG_PARTITIONS[4] if strong else sliding_pdb.PARTITIONS[4]
    for group in groups:
        cpu = time.process_time()
        _, seconds = sliding_pdb.ensure_table(4, group)
        out.append(("-".join(map(str, group)), seconds, time.process_time() - cpu))
    return out


def run_pipeline(work: Path, cache: Path, jobs: int, heuristic: str) -> tuple[list[dict], float]:
    """Run `packsolve solve` on the list (linked as a .slide file); return export records and wall s."""
    pack = work / "korf100.slide"
    if not pack.exists():
        pack.symlink_to(sliding_set(KORF100))
    db = f"sqlite:///{work / (heuristic + '.db')}"
    env = {**os.environ, "PACKSOLVE_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT / "src")}
    cli = [sys.executable, "-m", "packsolve"]
    start = time.perf_counter()
    subprocess.run(
        [
            *cli,
            "solve",
            str(pack),
            "--kind",
            "sliding",
            "--heuristic",
            heuristic,
            "--jobs",
            str(jobs),
            "--time-limit",
            "900",
            "-q",
            "--database-url",
            db,
        ],
        check=True,
        env=env,
        cwd=work,
        stdout=subprocess.DEVNULL,
    )
    wall = time.perf_counter() - start
    out = subprocess.run(
        [*cli, "export", "latest", "--format", "jsonl", "--database-url", db],
        check=True,
        env=env,
        cwd=work,
        capture_output=True,
        text=True,
    )
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()], wall


def plot_nodes(records_by_heuristic: dict[str, list[dict]], path: Path) -> None:
    """Save a PNG of nodes per instance (sorted, log scale), one line per heuristic."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for heuristic, records in records_by_heuristic.items():
        nodes = sorted(max(1, r["nodes"] or 0) for r in records)
        label = f"{heuristic} ({sum(nodes) / 1e6:.0f} M total)"
        ax.plot(range(1, len(nodes) + 1), nodes, marker=".", label=label)
    ax.set_yscale("log")
    ax.set_xlabel("instances, sorted by nodes")
    ax.set_ylabel("nodes expanded")
    ax.set_title("Korf's 100 fifteen-puzzles, optimal IDA*")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def against_peer(instances: list[Instance], timeout: float) -> list[list[object]]:
    """Return a table row per instance: our `pdb` and the peer on the same board, in this process."""
    from packsolve.budget import Budget
    from packsolve.puzzles import get_kind

    kind = get_kind("sliding")
    rows: list[list[object]] = []
    for inst in instances:
        board = kind.parse({"tiles": list(inst.tiles)})
        start = time.perf_counter()
        ours = kind.solvers["pdb"](board, Budget(600))
        ours_s = time.perf_counter() - start
        peer = run_peer(inst.tiles, timeout)
        if peer is None:
            peer_cell, ratio, length = f"> {timeout:g} s (not finished)", f"> {timeout / ours_s:,.0f}x", "-"
        else:
            peer_cell = f"{peer['seconds']:.1f} s, {peer['expanded']} expanded"
            ratio, length = f"{peer['seconds'] / ours_s:,.0f}x", peer["length"]
        ours_cells = [inst.optimal, len(ours.solution), f"{ours_s:.3f}", ours.nodes]
        rows.append([inst.ident, *ours_cells, length, peer_cell, ratio])
    return rows


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--peer-ids", default="55,42,79,16", help="Korf ids to give the slidingpuzzle peer")
    ap.add_argument("--peer-timeout", type=float, default=60.0)
    ap.add_argument("--out", type=Path, default=RESULTS / "sliding_korf100.md")
    args = ap.parse_args()
    instances = read_korf(sliding_set(KORF100))
    by_id = {i.ident: i for i in instances}

    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        cache = work / "cache"
        for heuristic, strong in (("pdb", False), ("pdb-663", True)):
            builds = build_tables(cache, strong)
            records, wall = run_pipeline(work, cache, args.jobs, heuristic)
            runs[heuristic] = (builds, records, wall)

        peer_rows = against_peer([by_id[x] for x in args.peer_ids.split(",") if x], args.peer_timeout)

    def rows_of(records: list[dict]) -> tuple[list[list[object]], int, float, int]:
        rows, nodes_total, cpu_total, ok = [], 0, 0.0, 0
        # A .slide line's id names its level FILE:ID.
        for rec in sorted(records, key=lambda r: int(r["level"].rsplit(":", 1)[1])):
            ident = rec["level"].rsplit(":", 1)[1]
            inst = by_id[ident]
            match = rec["status"] == "solved" and rec["length"] == inst.optimal
            ok += match
            nodes_total += rec["nodes"] or 0
            cpu_total += rec["cpu_s"] or 0.0
            rate = rec["nodes"] / rec["cpu_s"] if rec["cpu_s"] else 0
            rows.append(
                [
                    ident,
                    inst.optimal,
                    rec["length"],
                    "yes" if match else "**NO**",
                    rec["nodes"],
                    f"{rec['wall_s']:.3f}",
                    f"{rec['cpu_s']:.3f}",
                    f"{rate / 1e6:.1f}",
                ]
            )
        return rows, nodes_total, cpu_total, ok

    text = [
        "# Korf's 100 fifteen-puzzles: `pdb` (5-5-5) and `pdb-663` (6-6-3), C IDA*, mirrored lookup",
        "",
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on this 2-core machine (shared with",
        "other engineers' jobs: wall times include their load), through `packsolve solve --kind sliding "
        f"--heuristic H --jobs {args.jobs} --time-limit 900` (local pool + SQLite), pattern tables built "
        "first into an empty cache and timed apart.",
        "",
        "| heuristic | optimal (published length) | pipeline wall, all 100 | solver CPU | nodes | "
        "M nodes / CPU s | table build wall (CPU) |",
        "|---|---|---|---|---|---|---|",
    ]
    sections = []
    for heuristic, (builds, records, wall) in runs.items():
        rows, nodes_total, cpu_total, ok = rows_of(records)
        build_wall = sum(w for _, w, _ in builds)
        build_cpu = sum(c for _, _, c in builds)
        text.append(
            f"| `{heuristic}` | **{ok} / {len(instances)}** | **{wall:.1f} s** | {cpu_total:.1f} s | "
            f"{nodes_total:,} | {nodes_total / max(cpu_total, 1e-9) / 1e6:.1f} | "
            f"{build_wall:.1f} s ({build_cpu:.1f} s) |"
        )
        sections += [
            "",
            f"## Per instance, `{heuristic}`",
            "",
            "Tables: " + ", ".join(f"{g}: {w:.1f} s wall, {c:.1f} s CPU" for g, w, c in builds),
            "",
            markdown_table(
                ["id", "published", "found", "optimal?", "nodes", "wall s", "cpu s", "M nodes/s"], rows
            ),
        ]
    text += [
        "",
        "Target: all 100 optimal within 15 minutes wall through the pipeline.",
        "",
        "## Peer: `slidingpuzzle` 0.1.5 (PyPI) A* with linear conflict vs our `pdb`, same boards, same run",
        "",
        markdown_table(
            ["id", "optimal", "ours", "ours s", "ours nodes", "peer length", "peer", "speed-up"], peer_rows
        ),
        *sections,
        "",
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    plot = args.out.with_name(args.out.stem + "_nodes.png")
    plot_nodes({h: records for h, (_, records, _) in runs.items()}, plot)
    text.insert(
        text.index("Target: all 100 optimal within 15 minutes wall through the pipeline."),
        f"![nodes per instance]({plot.name})\n",
    )
    args.out.write_text("\n".join(text))
    print("\n".join(text[:12]))


if __name__ == "__main__":
    main()
