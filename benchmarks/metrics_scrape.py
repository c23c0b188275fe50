"""Time a /metrics scrape at 1,000,000 attempts and 64 worker processes' rows (SQLite or PostgreSQL).

    python -m benchmarks.metrics_scrape [--runs 20] [--levels 50000] [--workers 64] [--reps 5]
        [--url postgresql+psycopg://...EMPTY_DB] [--broker redis://127.0.0.1:6379/0]

RUNS runs of LEVELS attempts each are seeded as benchmarks/seed_attempts.py seeds them (on SQLite
its triggers and indexes dropped first and the indexes made again after, run_figures filled with
one GROUP BY as migration 0014 fills it; on PostgreSQL by COPY, the triggers keeping run_figures).
The last run is then made a night in progress: unfinished, half its attempts queued, WORKERS of
them running, each held by one of WORKERS live worker processes whose leases publish a few
buffered results. A scrape is prometheus_client's generate_latest of packsolve's collector (what
/metrics answers, without HTTP): the first one (cold: every finished run's solve times read once)
and then the median of REPS (warm: only the unfinished run's read again). With --broker, each
scrape also asks that broker its queue's depth.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))


def seed(url: str, runs: int, levels: int, workers: int) -> float:
    """Seed the database at url (empty, migrated here); return the seconds it took."""

    from benchmarks.seed_attempts import bulk_seeding, level_rows, run_rows, seed_postgres, seed_sqlite
    from packsolve.db.migrate import upgrade
    from packsolve.db.session import make_engine

    engine = make_engine(url)
    upgrade(engine)
    started = time.perf_counter()
    with bulk_seeding(engine):
        rows = run_rows(runs, levels)
        write = seed_sqlite if engine.dialect.name == "sqlite" else seed_postgres
        write(engine, rows, level_rows(levels), random.Random(0))
        _in_progress(engine, runs, levels, workers)
    engine.dispose()
    return time.perf_counter() - started


def _in_progress(engine: Any, last: int, levels: int, workers: int) -> None:
    """Make the last run one in progress: half its attempts still queued, workers running and buffering."""
    from sqlalchemy import text

    from packsolve.db.models import utcnow

    now = utcnow()
    with engine.begin() as conn:
        # The last run is in progress: half its attempts still queued, WORKERS running.
        conn.execute(text("UPDATE runs SET finished_at = NULL, state = 'running' WHERE id = :r"), {"r": last})
        conn.execute(
            text(
                "UPDATE attempts SET status = 'queued', wall_s = NULL, cpu_s = NULL, nodes = NULL, "
                "solution = NULL, length = NULL, finished_at = NULL, started_at = NULL "
                "WHERE run_id = :r AND seq >= :half"
            ),
            {"r": last, "half": levels // 2},
        )
        hashes = conn.execute(
            text("SELECT level_hash FROM attempts WHERE run_id = :r AND seq >= :half ORDER BY seq LIMIT :n"),
            {"r": last, "half": levels // 2, "n": workers * 4},
        ).scalars()
        hashes = list(hashes)
        for i in range(workers):
            name = f"bench{i // 8}/{1000 + i}"
            mine = hashes[i * 4 : i * 4 + 4]
            conn.execute(
                text(
                    "UPDATE attempts SET status = 'running', holder = :h, started_at = :now, claims = 1, "
                    "tries = 1 WHERE run_id = :r AND level_hash = :lh"
                ),
                {"h": name, "now": now, "r": last, "lh": mine[0]},
            )
            conn.execute(
                text(
                    "INSERT INTO workers (name, host, started_at, renewed_at, lease_until, offers, buffered) "
                    "VALUES (:n, :host, :now, :now, :until, '{}', :buffered)"
                ),
                {
                    "n": name,
                    "host": f"celery@bench{i // 8}",
                    "now": now,
                    "until": now + timedelta(hours=1),
                    "buffered": json.dumps({str(last): mine[1:]}),
                },
            )


def measure(url: str, reps: int, broker: str | None) -> dict[str, float]:
    """Return the seconds of the first scrape and the median of reps more, and the exposition's lines."""
    from prometheus_client import generate_latest

    from packsolve.db.session import make_engine
    from packsolve.metrics.collector import registry_of
    from packsolve.queue.app import Cluster

    engine = make_engine(url)
    cluster = Cluster.of(broker=broker) if broker else None
    registry = registry_of(engine, cluster)
    started = time.perf_counter()
    body = generate_latest(registry)
    cold = time.perf_counter() - started
    times = []
    for _ in range(reps):
        started = time.perf_counter()
        generate_latest(registry)
        times.append(time.perf_counter() - started)
    out = {"cold_s": cold, "warm_s": statistics.median(times), "lines": body.count(b"\n")}
    if cluster is not None:  # the broker's share of a scrape: one passive queue declaration
        times = []
        for _ in range(reps):
            started = time.perf_counter()
            cluster.depth()
            times.append(time.perf_counter() - started)
        out["broker_s"] = statistics.median(times)
    engine.dispose()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--levels", type=int, default=50_000)
    ap.add_argument("--workers", type=int, default=64)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--url", help="an empty database to seed (default: a temporary SQLite file)")
    ap.add_argument("--broker", help="also ask this broker its queue's depth at each scrape")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = args.url or f"sqlite:///{Path(tmp) / 'metrics.db'}"
        took = seed(url, args.runs, args.levels, args.workers)
        print(f"{args.runs * args.levels:,} attempts, {args.workers} workers' rows seeded in {took:.1f} s")
        got = measure(url, args.reps, args.broker)
        print(
            f"scrape: first {got['cold_s']:.3f} s, then {got['warm_s']:.3f} s (median of {args.reps}); "
            f"{int(got['lines'])} lines"
            + (f"; of which the broker's depth {got['broker_s']:.3f} s" if "broker_s" in got else ""),
            flush=True,
        )


if __name__ == "__main__":
    main()
