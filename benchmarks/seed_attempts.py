"""Seed a database with many attempts quickly (SQLite executemany, PostgreSQL COPY) for the report benchmarks.

    python benchmarks/seed_attempts.py URL [--runs 100] [--levels 10000] [--seed 0]

RUNS runs over the same LEVELS levels (a pack re-run with other heuristics and
limits, as users do): RUNS x LEVELS attempts, every run finished. Statuses,
times and nodes are drawn from a fixed seed so both databases hold the same data.
Each run then gets the snapshots the scheduler makes of a real run once it finished (medians,
peaks, failure groups, level vector: packsolve.figures.finished.make), so the pages and
reports measured on it read what they read after a real night.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import random
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from sqlalchemy import text  # noqa: E402

from packsolve.db.models import Attempt  # noqa: E402
from packsolve.db.session import database_url, get_engine, session_scope  # noqa: E402

HEURISTICS = ["plain", "warnsdorff", "prune", "cpsat"]
KINDS = ["onestroke", "knights_tour", "sudoku", "sliding"]
# (status, probability): most levels solve, a long tail times out.
STATUSES = [
    ("solved", 0.70),
    ("timeout", 0.18),
    ("no_solution", 0.05),
    ("error", 0.03),
    ("memout", 0.02),
    ("wrong", 0.01),
    ("invalid", 0.01),
]
BASE = datetime(2026, 11, 1, tzinfo=UTC)


_TRIGGERS = "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'attempts'"
_INDEXES = (
    "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'attempts' AND sql IS NOT NULL"
)
_FIGURES = (
    "INSERT INTO run_figures (run_id, kind, heuristic, status, attempts, wall_n, wall_sum, cpu_n, cpu_sum, "
    "nodes_sum) SELECT run_id, kind, heuristic, status, count(*), count(wall_s), coalesce(sum(wall_s), 0.0), "
    "count(cpu_s), coalesce(sum(cpu_s), 0.0), coalesce(sum(nodes), 0) FROM attempts "
    "GROUP BY run_id, kind, heuristic, status"
)


@contextlib.contextmanager
def bulk_seeding(engine) -> Iterator[None]:
    """Seed the body's rows into attempts fast, then leave the database as the product keeps it.

    On SQLite the attempts' triggers (the text search's) are dropped and their indexes too while the
    body writes, the indexes made again after (a sort, not a million random inserts), run_figures
    filled from the attempts, and ANALYZE run; elsewhere only ANALYZE.
    """
    indexes = []
    if engine.dialect.name == "sqlite":
        with engine.begin() as conn:
            for name in conn.execute(text(_TRIGGERS)).scalars().all():
                conn.execute(text(f'DROP TRIGGER "{name}"'))
            indexes = conn.execute(text(_INDEXES)).all()
            for name, _ in indexes:
                conn.execute(text(f'DROP INDEX "{name}"'))
    yield
    with engine.begin() as conn:
        if engine.dialect.name == "sqlite":
            for _, sql in indexes:
                conn.execute(text(sql))
            conn.execute(text(_FIGURES))
        conn.execute(text("ANALYZE"))


def level_rows(n: int) -> list[dict]:
    out = []
    for i in range(n):
        data = json.dumps(
            {"kind": KINDS[i % len(KINDS)], "seed_level": i}, sort_keys=True, separators=(",", ":")
        )
        digest = hashlib.sha256(data.encode()).hexdigest()
        out.append(
            {
                "hash": digest,
                "kind": KINDS[i % len(KINDS)],
                "data": data,
                "size": 64,
                "name": f"packs/bench/level-{i:06d}.json",
                "created_at": BASE,
            }
        )
    return out


def run_rows(n_runs: int, n_levels: int) -> list[dict]:
    return [
        {
            "id": r + 1,
            "label": f"bench-{r + 1}",
            "parent_id": None,
            "mode": "distributed",
            "state": "finished",
            "heuristic": HEURISTICS[r % len(HEURISTICS)],
            "kind": None,
            "time_limit": [10.0, 30.0, 60.0][r % 3],
            "node_limit": None,
            "memory_limit_mb": 2048,
            "concurrency": 8,
            "max_tries": 3,
            "total": n_levels,
            "host": "bench-host",
            "version": "0.1.0",
            "options": "{}",
            "created_at": BASE + timedelta(hours=r),
            "finished_at": BASE + timedelta(hours=r, minutes=50),
        }
        for r in range(n_runs)
    ]


def attempt_rows(runs: list[dict], levels: list[dict], rng: random.Random):
    """Yield attempt tuples of ATTEMPT_COLUMNS, in its order."""
    # A level's difficulty is the same in every run, so "hardest ever" is meaningful.
    hardness = [random.Random(i).lognormvariate(-2.0, 2.0) for i in range(len(levels))]
    cumulative, total = [], 0.0
    for status, p in STATUSES:
        total += p
        cumulative.append((total, status))
    solution = json.dumps([[0, c] for c in range(12)])
    for run in runs:
        t0 = run["created_at"]
        limit = run["time_limit"]
        for seq, lv in enumerate(levels):
            x = rng.random()
            status = next((s for c, s in cumulative if x < c), "solved")
            if status == "invalid":
                wall = cpu = nodes = None
            else:
                wall = (
                    limit * 1.01
                    if status == "timeout"
                    else min(limit, hardness[seq] * (0.5 + 1.5 * rng.random()))
                )
                cpu, nodes = wall * 0.97, int(wall * 200_000) + 1
            start = t0 + timedelta(seconds=seq * 0.3)
            solved = status == "solved"
            yield (
                run["id"],
                lv["hash"],
                seq,
                lv["name"],
                lv["kind"],
                run["heuristic"],
                status,
                solution if solved else None,
                12 if solved else None,
                nodes,
                wall,
                cpu,
                45.0,
                f"celery@worker{seq % 4}",
                1,
                t0,
                start,
                start + timedelta(seconds=wall or 0),
                None,
                None,
                0,
                None,
                0,
            )


# The columns of the tuples attempt_rows yields, in their order: named, so that a column added to the
# model later (nullable, or with a default) is left to its default here instead of shifting the rest.
ATTEMPT_COLUMNS = [
    *("run_id", "level_hash", "seq", "name", "kind", "heuristic", "status", "solution", "length", "nodes"),
    *("wall_s", "cpu_s", "peak_rss_mb", "worker", "tries", "queued_at", "started_at", "finished_at"),
    *("message", "deadline", "requeues", "holder", "claims"),
]
assert set(ATTEMPT_COLUMNS) <= {c.name for c in Attempt.__table__.columns}


def seed_sqlite(engine, runs, levels, rng) -> None:
    raw = engine.raw_connection()
    try:
        cur = raw.cursor()
        cur.execute("PRAGMA synchronous=OFF")
        cur.execute("PRAGMA cache_size=-400000")  # 400 MB: the indexes of random hashes stay in memory

        def conv(v):  # SQLAlchemy's SQLite DateTime text format
            return v.strftime("%Y-%m-%d %H:%M:%S.%f") if isinstance(v, datetime) else v

        for table, rows in (("levels", levels), ("runs", runs)):
            cols = list(rows[0])
            cur.executemany(
                f"INSERT INTO {table} ({','.join(cols)}) VALUES ({','.join('?' * len(cols))})",
                [tuple(conv(r[c]) for c in cols) for r in rows],
            )
        marks = ",".join("?" * len(ATTEMPT_COLUMNS))
        sql = f"INSERT INTO attempts ({','.join(ATTEMPT_COLUMNS)}) VALUES ({marks})"
        cur.executemany(sql, (tuple(conv(v) for v in row) for row in attempt_rows(runs, levels, rng)))
        raw.commit()
        cur.execute("ANALYZE")
        raw.commit()
    finally:
        raw.close()


def seed_postgres(engine, runs, levels, rng) -> None:
    raw = engine.raw_connection()
    try:
        cur = raw.cursor()
        for table, rows in (("levels", levels), ("runs", runs)):
            cols = list(rows[0])
            with cur.copy(f"COPY {table} ({','.join(cols)}) FROM STDIN") as copy:
                for r in rows:
                    copy.write_row([r[c] for c in cols])
        with cur.copy(f"COPY attempts ({','.join(ATTEMPT_COLUMNS)}) FROM STDIN") as copy:
            for row in attempt_rows(runs, levels, rng):
                copy.write_row(row)
        cur.execute("SELECT setval('runs_id_seq', (SELECT max(id) FROM runs))")
        raw.commit()
        cur.execute("ANALYZE")
        raw.commit()
    finally:
        raw.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("url")
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--levels", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    engine = get_engine(database_url(args.url))
    with engine.connect() as conn:
        if conn.execute(text("SELECT count(*) FROM attempts")).scalar():
            sys.exit(f"{args.url} already holds attempts: seed an empty database")
    runs, levels = run_rows(args.runs, args.levels), level_rows(args.levels)
    started = time.perf_counter()
    (seed_postgres if engine.dialect.name == "postgresql" else seed_sqlite)(
        engine, runs, levels, random.Random(args.seed)
    )
    with engine.connect() as conn:
        n = conn.execute(text("SELECT count(*) FROM attempts")).scalar()
    took = time.perf_counter() - started
    print(f"{n} attempts in {args.runs} runs over {args.levels} levels seeded in {took:.1f} s")
    from packsolve.figures.finished import make

    started = time.perf_counter()
    for run in runs:
        with session_scope(engine) as session:
            make(session, run["id"])
    print(f"their snapshots, made in {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
