"""How long `packsolve submit` of big packs takes with and without history, on PostgreSQL.

    python -m benchmarks.submit_scale              # both parts, into benchmarks/results/submit_scale.md
    python -m benchmarks.submit_scale --only million --levels 100000        # a quicker run
    python -m benchmarks.submit_scale --only sudoku --profile prof     # and where the time goes

Parts, each on throwaway PostgreSQL databases this script creates and drops:

- sudoku: the 49,151-level 17-clue pack (royle_17clue_49151_norvig.txt of the data sets) on a fresh
  database against one holding 10,000 of its levels in history; the fresh and the history case are
  run alternately --reps times, best of each.
- million: --levels tiny generated levels (coins, default 1,000,000) with a tenth of them in history.

History is one finished run of the kind's default heuristic over the first levels of the pack,
seeded by direct inserts (benchmarks/seed_attempts.py), its attempts at most HISTORY_LIMIT_S each as
trivial levels take. Every submit is the real CLI in a subprocess with the automatic chunk, timed end
to end; its messages go to a queue of their own in a Redis database other than 0 (--redis), deleted
afterwards. --profile runs the history case once more under cProfile and prints what dominates.
"""

from __future__ import annotations

import argparse
import json
import os
import pstats
import random
import re
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from benchmarks.harness import RESULTS, load, parser, pg_database, public_data, run_packsolve
from benchmarks.seed_attempts import run_rows, seed_postgres
from packsolve.db.session import get_engine
from packsolve.levels import Level, canonical_json, read_levels
from packsolve.puzzles import get_kind

PARTS = ("sudoku", "million")
# The seeded attempts take at most this long (timeouts a hair more): a history of trivial levels.
HISTORY_LIMIT_S = 0.002
# What submit says on stderr: levels, chunk, invalid levels.
SAID = r"(\d+) level\(s\), \d+ task\(s\) of up to (\d+) .* (\d+) invalid"
SUBMIT = ["--time-limit", "60", "--chunk-size", "0"]  # the automatic chunk
SEEDED_AT = "2026-11-01T00:00:00+00:00"


def tiny_levels(folder: Path, n: int, per_file: int = 10_000) -> Path:
    """Write n distinct coins levels (a few notes each), per_file a file; return the folder."""
    folder.mkdir()
    for start in range(0, n, per_file):
        lines = []
        for i in range(start, min(n, start + per_file)):
            notes = [1, 2, 5, 10, 20][: 2 + i % 4] + [100 + i]  # the last note makes each level distinct
            lines.append(json.dumps({"kind": "coins", "notes": notes, "target": 3 + i % 30}) + "\n")
        (folder / f"tiny-{start // per_file:04d}.jsonl").write_text("".join(lines))
    return folder


def seed_history(url: str, levels: list[Level]) -> None:
    """Record one finished run over levels (their rows too), by direct inserts: seed_attempts' COPY."""
    from datetime import datetime

    heuristics = {get_kind(lv.kind).default for lv in levels}
    runs = run_rows(1, len(levels))
    runs[0].update(heuristic=heuristics.pop(), time_limit=HISTORY_LIMIT_S)
    created = datetime.fromisoformat(SEEDED_AT)
    rows = [
        {
            "hash": lv.hash,
            "kind": lv.kind,
            "data": canonical_json(dict(lv.data)),
            "size": lv.size,
            "name": lv.name,
            "created_at": created,
        }
        for lv in levels
    ]
    seed_postgres(get_engine(url), runs, rows, random.Random(19))


def first_levels(path: Path, n: int) -> list[Level]:
    """Return the first n levels of a pack file as packsolve reads them."""
    out = []
    for level in read_levels([str(path)]):
        out.append(level)
        if len(out) == n:
            break
    return out


def submit_once(
    args: argparse.Namespace, pack: Path, levels: int, history: int, profile: Path | None = None
) -> dict:
    """Submit pack (levels, all valid) to a fresh database, history of its first levels; return figures."""
    import redis

    with pg_database(args.pg.rstrip("/") + "/postgres") as url:
        seeded = 0.0
        if history:
            started = time.monotonic()
            seed_history(url, first_levels(pack, history))
            seeded = time.monotonic() - started
        queue = f"bench-submit-{uuid.uuid4().hex[:8]}"
        env = {"PACKSOLVE_DATABASE_URL": url, "PACKSOLVE_BROKER_URL": args.redis, "PACKSOLVE_QUEUE": queue}
        try:
            if profile is None:
                _, err, wall, cpu = run_packsolve(["submit", str(pack), *SUBMIT], env)
                said = re.search(SAID, " ".join(err.split()))  # the console wraps its lines
                if said is None or int(said.group(1)) != levels or int(said.group(3)):
                    raise RuntimeError(f"submit did not send the {levels} levels:\n{err}")
                chunk = int(said.group(2))
                return {
                    "history": history,
                    "wall": wall,
                    "cpu": cpu,
                    "chunk": chunk,
                    "seeded": seeded,
                    "load": load(),
                }
            argv = [sys.executable, "-m", "cProfile", "-o", str(profile), "-m", "packsolve"]
            cmd = [*argv, "submit", str(pack), *SUBMIT]
            subprocess.run(cmd, env={**os.environ, **env}, check=True, capture_output=True)
            return {"history": history, "profile": str(profile)}
        finally:
            # Nobody will run them; kombu's bindings of the queue go too.
            redis.Redis.from_url(args.redis).delete(
                queue, f"_kombu.binding.{queue}", f"_kombu.binding_permanent.{queue}"
            )


def top_of(profile: Path, n: int = 25) -> str:
    """Return the n functions of a cProfile file with the most time (with their callees'), as text."""
    import io

    text = io.StringIO()
    pstats.Stats(str(profile), stream=text).sort_stats("cumulative").print_stats(n)
    return "\n".join(ln for ln in text.getvalue().splitlines() if ln.strip())


def part(args: argparse.Namespace, name: str, pack: Path, n: int, history: int) -> list[str]:
    """Fresh and history submits alternately --reps times; return the Markdown rows and the ratio."""
    results: dict[int, list[dict]] = {0: [], history: []}
    for _ in range(args.reps):
        for h in (0, history):
            r = submit_once(args, pack, n, h)
            results[h].append(r)
            print(f"{name}: {n:,} levels, history {h:,}: {r}", file=sys.stderr, flush=True)
    best = {h: min(rs, key=lambda r: r["wall"]) for h, rs in results.items()}
    rows = []
    for h, r in best.items():
        walls = ", ".join(f"{x['wall']:.1f}" for x in results[h])
        rows.append(
            f"| {name} | {n:,} | {h:,} | {r['wall']:.1f} s | {r['cpu']:.1f} s | {r['chunk']} | "
            f"best of {len(results[h])} ({walls}); {r['load']} |"
        )
    ratio = best[history]["wall"] / best[0]["wall"]
    rows.append(f"| {name} | | | **history / fresh: {ratio:.2f}x** | | | |")
    if args.profile:
        prof = args.profile / f"submit-{name.replace(' ', '-')}.prof"
        submit_once(args, pack, n, history, profile=prof)
        top = top_of(prof)
        print(f"\n{name}, history {history:,}: cProfile ({prof}), by cumulative time\n{top}", file=sys.stderr)
    return rows


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--only", default=",".join(PARTS), help=f"comma-separated parts of {PARTS}")
    p.add_argument("--levels", type=int, default=1_000_000, help="tiny levels of the million part")
    p.add_argument("--history", type=int, default=10_000, help="sudoku levels in history")
    p.add_argument("--reps", type=int, default=2, help="alternating repetitions, best of each")
    p.add_argument("--profile", type=Path, help="a folder: also profile the history submit (cProfile) there")
    p.add_argument("--pg", default="postgresql+psycopg://postgres@127.0.0.1:5432", help="PostgreSQL URL base")
    p.add_argument("--redis", default="redis://127.0.0.1:6379/13", help="a Redis database other than 0")
    p.add_argument("--out", type=Path, default=RESULTS / "submit_scale.md")
    args = p.parse_args()
    if args.redis.rstrip("/").endswith(":6379") or args.redis.rstrip("/").endswith("/0"):
        p.error("--redis must name a database other than 0 (the shared one)")
    parts = set(args.only.split(","))
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    rows = []
    with tempfile.TemporaryDirectory(prefix="packsolve-submit-") as d:
        if "sudoku" in parts:
            pack = public_data("sudoku", "royle_17clue_49151_norvig.txt")
            n = sum(1 for ln in pack.read_text().splitlines() if ln.strip())
            rows += part(args, "17-clue sudoku", pack, n, args.history)
        if "million" in parts:
            pack = tiny_levels(Path(d) / "tiny", args.levels)
            rows += part(args, "tiny coins", pack, args.levels, args.levels // 10)
    lines = [
        "# Submit at scale",
        "",
        f"`python -m benchmarks.submit_scale {' '.join(sys.argv[1:])}` — {started}, {os.cpu_count()} cores, "
        "PostgreSQL and Redis on 127.0.0.1; `packsolve submit PACK --time-limit 60`, automatic chunk, "
        "wall and CPU seconds of the CLI process end to end.",
        "",
        "| pack | levels | in history | submit wall | CPU | chunk | notes |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- |",
        *rows,
        "",
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
