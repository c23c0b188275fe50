"""The lease bound with the default settings: from a worker's death to its attempt being taken back.

    python -m benchmarks.lease_bound [--reps 3] [--pg URL] [--ttl 30] [--interval 30]

Each repetition: a fresh PostgreSQL database, a redis-server of its own, one
`packsolve worker` and one `packsolve scheduler` (default lease and interval
unless given), one level that runs for a minute under no time limit (so no
deadline can help: only the lease can tell). Once the worker has claimed it,
the worker's whole process group is killed (kill -9); the time until the
attempt is queued again is the bound. Prints one line per repetition and the
worst.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sqlalchemy import select

from benchmarks.harness import ROOT, parser, servers
from packsolve.db.models import Attempt
from packsolve.db.session import get_engine, session_scope
from tests.support.kinds import chaos_kind


def one(pg_base: str, ttl: float | None, interval: float | None) -> float:
    with servers(pg_base) as (url, broker):
        return _measure(url, broker, ttl, interval)


def _measure(url: str, broker: str, ttl: float | None, interval: float | None) -> float:
    tmp = Path(tempfile.mkdtemp(prefix="packsolve-lease-"))
    env = {**os.environ, "PACKSOLVE_DATABASE_URL": url, "PACKSOLVE_BROKER_URL": broker}
    env["PACKSOLVE_EXTRA_KINDS"] = chaos_kind.ENV  # a level that just takes its time
    env["PYTHONPATH"] = str(ROOT)
    if ttl is not None:
        env["PACKSOLVE_LEASE_TTL"] = str(ttl)
    procs: list[subprocess.Popen] = []
    try:
        get_engine(url)  # migrated before anyone starts
        cmd = [sys.executable, "-m", "packsolve"]
        worker = subprocess.Popen(
            [*cmd, "worker", "-c", "1", "-n", "doomed@bench"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        procs.append(worker)
        sched = [*cmd, "scheduler"] + ([] if interval is None else ["--interval", str(interval)])
        procs.append(subprocess.Popen(sched, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        pack = tmp / "long.jsonl"
        pack.write_text(json.dumps({"kind": "chaos", "id": 1, "ms": 60000}) + "\n")
        subprocess.run(
            [*cmd, "submit", str(pack), "--time-limit", "0"], env=env, check=True, capture_output=True
        )
        engine = get_engine(url)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            with session_scope(engine) as s:
                if s.scalars(select(Attempt.status)).one() == "running":
                    break
            time.sleep(0.2)
        else:
            raise RuntimeError("the worker never claimed the level")
        os.killpg(worker.pid, signal.SIGKILL)
        killed = time.monotonic()
        while time.monotonic() < killed + 300:
            with session_scope(engine) as s:
                if s.scalars(select(Attempt.status)).one() == "queued":
                    return time.monotonic() - killed
            time.sleep(0.2)
        raise RuntimeError("not taken back within 300 s")
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
                p.wait(20)
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--pg", default="postgresql+psycopg://postgres@127.0.0.1:5432", help="server URL base")
    ap.add_argument("--ttl", type=float, default=None, help="PACKSOLVE_LEASE_TTL [default: the default, 30]")
    ap.add_argument("--interval", type=float, default=None, help="scheduler --interval [default: 30]")
    args = ap.parse_args()
    bounds = []
    for i in range(args.reps):
        bounds.append(one(args.pg, args.ttl, args.interval))
        print(f"repetition {i + 1}: taken back {bounds[-1]:.1f} s after the kill", flush=True)
    settings = f"lease {args.ttl or 30:g} s, interval {args.interval or 30:g} s"
    print(f"worst {max(bounds):.1f} s, best {min(bounds):.1f} s ({settings})")


if __name__ == "__main__":
    main()
