"""Korf's 100 fifteen-puzzles by `pdb` through `packsolve solve --jobs 2`; pattern build timed apart; a peer.

Usage: nice python benchmarks/sliding_korf100.py [--jobs 2] [--peer-ids 82,79,...] [--peer-timeout 60]
Writes benchmarks/results/sliding_korf100.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sliding_common import KORF100, RESULTS, markdown_table, read_korf, run_peer  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def build_tables(cache: Path) -> list[tuple[str, float]]:
    """Build the 4x4 pattern tables into an empty cache; return (group, seconds) per table."""
    os.environ["PACKSOLVE_CACHE_DIR"] = str(cache)
    from packsolve.puzzles import sliding_pdb

    out = []
    for group in sliding_pdb.PARTITIONS[4]:
        _, seconds = sliding_pdb.ensure_table(4, group)
        out.append(("-".join(map(str, group)), seconds))
    return out


def run_pipeline(work: Path, cache: Path, jobs: int) -> tuple[list[dict], float]:
    """Run `packsolve solve` on the list (linked as a .slide file); return export records and wall s."""
    pack = work / "korf100.slide"
    pack.symlink_to(KORF100)
    db = f"sqlite:///{work / 'bench.db'}"
    env = {**os.environ, "PACKSOLVE_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT / "src")}
    cli = [sys.executable, "-m", "packsolve"]
    start = time.perf_counter()
    subprocess.run(
        [*cli, "solve", str(pack), "--kind", "sliding", "--heuristic", "pdb", "--jobs", str(jobs),
         "--time-limit", "900", "-q", "--database-url", db],
        check=True, env=env, cwd=work, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    wall = time.perf_counter() - start
    out = subprocess.run(
        [*cli, "export", "latest", "--format", "jsonl", "--database-url", db],
        check=True, env=env, cwd=work, capture_output=True, text=True,
    )  # fmt: skip
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()], wall


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--peer-ids", default="55,42,79,16", help="Korf ids to give the slidingpuzzle peer")
    ap.add_argument("--peer-timeout", type=float, default=60.0)
    ap.add_argument("--out", type=Path, default=RESULTS / "sliding_korf100.md")
    args = ap.parse_args()
    instances = read_korf(KORF100)
    lines_to_id = {}
    for line, text in enumerate(KORF100.read_text().splitlines(), 1):
        if text.strip() and not text.startswith("#"):
            lines_to_id[line] = text.split()[0]
    by_id = {i.ident: i for i in instances}

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        cache = work / "cache"
        builds = build_tables(cache)
        records, wall = run_pipeline(work, cache, args.jobs)

        rows, nodes_total, cpu_total, ok = [], 0, 0.0, 0
        for rec in sorted(records, key=lambda r: int(lines_to_id[int(r["level"].rsplit(":", 1)[1])])):
            ident = lines_to_id[int(rec["level"].rsplit(":", 1)[1])]
            inst = by_id[ident]
            match = rec["status"] == "solved" and rec["length"] == inst.optimal
            ok += match
            nodes_total += rec["nodes"] or 0
            cpu_total += rec["cpu_s"] or 0.0
            rate = rec["nodes"] / rec["cpu_s"] if rec["cpu_s"] else 0
            rows.append([ident, inst.optimal, rec["length"], "yes" if match else "**NO**", rec["nodes"],
                         f"{rec['wall_s']:.3f}", f"{rec['cpu_s']:.3f}", f"{rate / 1e6:.1f}"])  # fmt: skip

        # Peer, and our solver on the same boards in this process, for ratios measured in one run.
        from packsolve.budget import Budget
        from packsolve.puzzles import get_kind

        kind = get_kind("sliding")
        peer_rows = []
        for ident in [x for x in args.peer_ids.split(",") if x]:
            inst = by_id[ident]
            board = kind.parse({"tiles": list(inst.tiles)})
            start = time.perf_counter()
            ours = kind.solvers["pdb"](board, Budget(600))
            ours_s = time.perf_counter() - start
            peer = run_peer(inst.tiles, args.peer_timeout)
            if peer is None:
                peer_cell = f"> {args.peer_timeout:g} s (not finished)"
                ratio = f"> {args.peer_timeout / ours_s:,.0f}x"
                plen = "-"
            else:
                peer_cell = f"{peer['seconds']:.1f} s, {peer['expanded']} expanded"
                ratio = f"{peer['seconds'] / ours_s:,.0f}x"
                plen = peer["length"]
            peer_rows.append([ident, inst.optimal, len(ours.solution), f"{ours_s:.3f}", ours.nodes, plen,
                              peer_cell, ratio])  # fmt: skip

    total_build = sum(s for _, s in builds)
    text = [
        "# Korf's 100 fifteen-puzzles, heuristic `pdb` (6-6-3 additive tables + mirrored lookup, C IDA*)",
        "",
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on this 2-core machine (shared with",
        "other engineers' jobs), through `packsolve solve --kind sliding --heuristic pdb "
        f"--jobs {args.jobs}` (local pool + SQLite).",
        "",
        f"- **{ok} of {len(instances)}** solved with the published optimal length.",
        f"- Pipeline wall time for all {len(records)}: **{wall:.1f} s** (target: 15 min), "
        f"solver CPU {cpu_total:.1f} s, {nodes_total:,} nodes, "
        f"{nodes_total / cpu_total / 1e6:.1f} M nodes per CPU second.",
        f"- Pattern-database build (once, then cached on disk): {total_build:.1f} s — "
        + ", ".join(f"{g}: {s:.1f} s" for g, s in builds),
        "",
        "## Peer: `slidingpuzzle` (PyPI) A* with linear conflict, same boards, same run",
        "",
        markdown_table(
            ["id", "optimal", "ours", "ours s", "ours nodes", "peer length", "peer", "speed-up"], peer_rows
        ),  # fmt: skip
        "",
        "## Per instance",
        "",
        markdown_table(
            ["id", "published", "found", "optimal?", "nodes", "wall s", "cpu s", "M nodes/s"], rows
        ),
        "",
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(text))
    print("\n".join(text[:12]))


if __name__ == "__main__":
    main()
