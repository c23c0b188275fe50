"""One scheduler pass against a long queue: does its cost follow the queue's length or what changed?

    python -m benchmarks.reconcile_pass [--sizes 10000,1000000] [--passes 5] [--pg URL]

For each size N: a fresh PostgreSQL database holding one distributed run of N
queued one-level attempts (sent an hour ago), and a redis-server of its own
(started on a free port, no persistence) holding the N real task messages
`packsolve submit --chunk-size 1` would have sent. No worker runs: every pass
sees the whole queue. Then --passes reconcile passes in this process (the
scheduler's own function, timed), and one `packsolve scheduler --once` (the
whole command, process start-up included). Prints a Markdown table.
"""

from __future__ import annotations

import io
import json
import os
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta

from sqlalchemy import text

from benchmarks.harness import parser, servers
from packsolve.db.session import get_engine, session_scope
from packsolve.db.workers import deployment_id
from packsolve.execution import AttemptSpec, Limits
from packsolve.levels import make_level
from packsolve.queue.app import Cluster
from packsolve.queue.protocol import PendingAttempt
from packsolve.scheduler import reconcile


def seed(url: str, n: int) -> tuple[int, list[PendingAttempt]]:
    """Create one sent distributed run of n queued coins attempts with COPY: return its id, its attempts."""
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
    return run_id, [
        PendingAttempt(lv.hash, AttemptSpec("coins", "dp", lv.data, limits), lv.name) for lv in levels
    ]


def measure(pg_base: str, n: int, passes: int) -> dict[str, float]:
    os.environ["PACKSOLVE_QUEUE"] = "packsolve-bench"
    with servers(pg_base) as (url, broker):
        t0 = time.perf_counter()
        run_id, specs = seed(url, n)
        seeded = time.perf_counter() - t0
        cluster = Cluster.of(broker=broker)
        engine = get_engine(url)
        with session_scope(engine) as s:
            deployment = deployment_id(s)
        t0 = time.perf_counter()
        cluster.send(run_id, specs, 5, 1, deployment)
        sent = time.perf_counter() - t0
        times = []
        for _ in range(passes):
            t0 = time.perf_counter()
            done = reconcile(engine, cluster, grace_s=60)
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
        return {
            "n": n,
            "seed_s": seeded,
            "send_s": sent,
            "median_pass_s": statistics.median(times),
            "best_pass_s": min(times),
            "cli_s": cli,
        }


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--sizes", default="10000,1000000", help="queued one-level tasks, comma separated")
    ap.add_argument("--passes", type=int, default=5)
    ap.add_argument("--pg", default="postgresql+psycopg://postgres@127.0.0.1:5432", help="server URL base")
    args = ap.parse_args()
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
