"""Time the dashboard's pages on a seeded database, through a real `packsolve serve` process.

    python benchmarks/seed_attempts.py sqlite:///bench.db --runs 2 --levels 1000000
    python benchmarks/dashboard.py sqlite:///bench.db [--reps 10] [--markdown FILE]

Two runs of 1,000,000 attempts each (2,000,000 in the database). Each page is
requested --reps times over loopback (keep-alive off: a fresh connection each
time, as a browser's first visit); the figure is the median, with the first
(cold) request and the slowest beside it. The server's peak resident memory
(VmHWM) is read from /proc after every page was served.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from packsolve.report.attempts_page import COLUMNS

ROOT = Path(__file__).resolve().parent.parent
TARGET_MS = 300.0
PAGES = [
    ("runs page", "/"),
    ("run page (summary, first 50 attempts in pack order)", "/runs/1"),
    *[
        (f"attempts sorted by {c}", f"/runs/1?sort={c}")
        for c in COLUMNS
        if c != "seq"  # pack order: the run page itself
    ],
    ("attempts sorted by nodes, descending", "/runs/1?sort=nodes&desc=1"),
    ("filtered: status timeout, kind sudoku", "/runs/1?status=timeout&kind=sudoku"),
    ("filtered + sorted: worker, by wall time", "/runs/1?worker=celery%40worker1&sort=wall_s&desc=1"),
    ("text search in names and messages", "/runs/1?q=level-000042"),
    ("page 10,000 of the attempts", "/runs/1?page=10000"),
    ("live update of a run (progress, workers)", "/runs/1/live"),
    ("failures page", "/runs/1/failures"),
    ("hardest of a run", "/hardest?run=1"),
    ("compare of the two runs", "/compare?runs=1,2"),
]


def get(url: str) -> tuple[int, float]:
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(url, timeout=600) as r:
            r.read()
            status = r.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    return status, (time.perf_counter() - started) * 1000


def peak_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmHWM:\s+(\d+) kB", status).group(1)) / 1024  # type: ignore[union-attr]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("url")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--markdown", default=None)
    args = ap.parse_args()
    log = Path("/tmp") / f"dashboard-bench-{time.monotonic_ns()}.log"
    with log.open("w") as err:
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "packsolve",
                "serve",
                "--port",
                "0",
                "--read-only",
                "--database-url",
                args.url,
            ],
            stderr=err,
            stdout=subprocess.DEVNULL,
        )
    try:
        while not (found := re.search(r"(http://\S+)/", log.read_text())):
            if server.poll() is not None:
                sys.exit(log.read_text())
            time.sleep(0.1)
        base = found.group(1)
        rows = []
        for name, path in PAGES:
            results = [get(base + path) for _ in range(args.reps)]
            statuses = {s for s, _ in results}
            times = [t for _, t in results]
            median = statistics.median(times)
            rows.append((name, path, statuses, results[0][1], median, max(times)))
            mark = "" if median < TARGET_MS else "  (over 300 ms)"
            print(
                f"{median:8.1f} ms median  {results[0][1]:8.1f} first  {max(times):8.1f} max  "
                f"{sorted(statuses)}  {name}{mark}",
                flush=True,
            )
        memory = peak_mb(server.pid)
        print(f"server peak RSS {memory:.0f} MB")
    finally:
        server.terminate()
        server.wait(30)
    if args.markdown:
        lines = [
            f"database: {re.sub(r'//[^@/]*@', '//', args.url)}, {args.reps} requests per page",
            "",
            "| page | median ms | first ms | max ms | status |",
            "| --- | ---: | ---: | ---: | --- |",
        ]
        for name, path, statuses, first, median, worst in rows:
            lines.append(
                f"| {name} (`{path}`) | {median:.0f} | {first:.0f} | {worst:.0f} | "
                f"{', '.join(map(str, sorted(statuses)))} |"
            )
        lines.append(f"\nserver peak RSS: {memory:.0f} MB")
        Path(args.markdown).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
