"""How far one PostgreSQL carries: N simulated worker processes on the real claim/record/lease/reconcile code.

    python -m benchmarks.capacity [--workers 1,4,16,64] [--solve-ms 0,10,1000] [--chunks 1,default]
                                  [--seconds 20]

A PostgreSQL 15 instance of its own (initdb in a temporary directory, pg_stat_statements loaded,
fsync and synchronous commits on, as a production server), a fresh database per measurement, and a
redis-server of its own holding the run's real task messages (so the scheduler sees a busy queue,
as in a cluster, and never resends them). Each simulated worker process is a thread with what a
pool process of `packsolve worker` has: its own claim connection (queue.claiming.ClaimConnection),
its own lease renewed by the real Lease thread (default time to live, 30 s), and its own result
sink (queue.results.worker_sink, flushed as a worker flushes). It takes chunks as run_task does
(packsolve.queue.consumer): claims through db.attempts.claim_many (the first claim of a chunk holds
the rest), a lone tiny attempt unclaimed as the worker runs it, groups of about GROUP_S; its
"solver" sleeps the fixed time. One scheduler runs the real reconcile pass every 30 s. Chunks are
handed out from an in-process queue (the Redis messages stay queued): the database's side is what is
measured, not the broker's.

For each (chunk, solve time, N) it prints attempts/s, SQL statements and WAL bytes per attempt
(pg_stat_statements; pg_current_wal_lsn), lease renewals per worker-second, the database's CPU
(all the instance's processes, as a share of the machine's cores) and the driver's own CPU share,
so a driver-bound point is seen as such. Default chunking: tasks of about half a second of work,
as submit chooses (at most MAX_GROUP levels).
"""

from __future__ import annotations

import io
import math
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import create_engine, text

from benchmarks.harness import free_port, parser, redis_server
from benchmarks.reconcile_pass import seed
from packsolve.attempt import ClaimVerdict, Result
from packsolve.db.attempts import ClaimBy, claim_many, hold
from packsolve.db.models import utcnow
from packsolve.db.retry import in_transaction
from packsolve.db.session import forget_engines, get_engine, make_engine, session_scope
from packsolve.db.workers import deployment_id
from packsolve.outcome import Outcome, SearchStats, Status
from packsolve.queue.app import Cluster
from packsolve.queue.claiming import ClaimConnection
from packsolve.queue.consumer import GROUP_S, MAX_GROUP, TINY_S
from packsolve.queue.lease import Lease
from packsolve.queue.results import worker_sink
from packsolve.scheduler import reconcile
from packsolve.settings import current as current_settings

PG_BIN = Path("/usr/lib/postgresql/15/bin")
SCHEDULER_INTERVAL_S = 30.0
WARMUP_S = 3.0


@contextmanager
def postgres_instance() -> Iterator[tuple[str, subprocess.Popen]]:
    """Yield (server URL base, postmaster) of a PostgreSQL of its own, run as the postgres user."""
    workdir = Path(tempfile.mkdtemp(prefix="packsolve-capacity-pg-"))
    shutil.chown(workdir, "postgres", "postgres")
    data, port = workdir / "data", free_port()
    as_postgres = ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups"]
    subprocess.run(
        [
            *as_postgres,
            str(PG_BIN / "initdb"),
            "-D",
            str(data),
            "-U",
            "postgres",
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--locale",
            "C",
        ],
        check=True,
        capture_output=True,
    )
    proc = subprocess.Popen(
        [
            *as_postgres,
            str(PG_BIN / "postgres"),
            "-D",
            str(data),
            "-c",
            f"port={port}",
            "-c",
            "listen_addresses=127.0.0.1",
            "-c",
            f"unix_socket_directories={workdir}",
            "-c",
            "max_connections=1000",
            "-c",
            "shared_buffers=256MB",
            "-c",
            "shared_preload_libraries=pg_stat_statements",
            "-c",
            "pg_stat_statements.track=all",
        ],
        stdout=subprocess.DEVNULL,
        stderr=(workdir / "postgres.log").open("w"),
    )
    base = f"postgresql+psycopg://postgres@127.0.0.1:{port}"
    try:
        for _ in range(300):
            ok = subprocess.run([str(PG_BIN / "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(port)])
            if ok.returncode == 0:
                break
            time.sleep(0.1)
        admin = create_engine(f"{base}/postgres", isolation_level="AUTOCOMMIT")
        with admin.connect() as c:
            c.execute(text("CREATE EXTENSION pg_stat_statements"))
        admin.dispose()
        yield base, proc
    finally:
        proc.send_signal(signal.SIGINT)  # fast shutdown: connections left open do not hold it up
        proc.wait(60)
        shutil.rmtree(workdir, ignore_errors=True)


def instance_cpu_s(postmaster: subprocess.Popen) -> float:
    """Return the CPU seconds (user + system) the instance's processes have used so far, exited ones too."""
    ticks = os.sysconf("SC_CLK_TCK")
    pids = [postmaster.pid]
    out = subprocess.run(["ps", "-e", "-o", "pid=,ppid="], capture_output=True, text=True).stdout
    children: dict[int, list[int]] = {}
    for line in out.splitlines():
        pid, ppid = map(int, line.split())
        children.setdefault(ppid, []).append(pid)
    total = 0.0
    while pids:
        pid = pids.pop()
        pids.extend(children.get(pid, []))
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / ticks  # utime, stime
        if pid == postmaster.pid:  # backends that have exited: their time is the postmaster's cutime, cstime
            total += (int(fields[13]) + int(fields[14])) / ticks
    return total


class SimWorker(threading.Thread):
    """One worker pool process, as run_task drives the database: claims, holds, results, a lease."""

    def __init__(
        self, i: int, engine, run_id: int, chunks: queue.Queue, solve_s: float, stop: threading.Event
    ):
        super().__init__(daemon=True, name=f"sim-{i}")
        # An engine of its own, as each pool process has (the worker's, without pre-ping).
        engine = make_engine(engine.url.render_as_string(hide_password=False), pre_ping=False)
        self.engine, self.run_id, self.chunks, self.solve_s, self.stop = engine, run_id, chunks, solve_s, stop
        self.hostname = f"celery@sim{i}"
        self.claims = ClaimConnection(engine)
        self.lease = Lease(ClaimConnection(engine), self.hostname, current_settings().lease_ttl)
        self.lease.name = f"{self.hostname}/{i}"  # one process each: the pid would be shared by threads
        self.buffer = worker_sink(engine, current_settings())

    def run(self) -> None:
        self.lease.start()
        try:
            while not self.stop.is_set():
                try:
                    chunk = self.chunks.get(timeout=0.5)
                except queue.Empty:
                    continue
                self.task(chunk)
        finally:
            self.buffer.flush()
            self.lease.retire()

    def task(self, items: list[tuple[str, str]]) -> None:
        """run_task's loop for one chunk of attempts (level hash, heuristic), the solver a fixed sleep."""
        tokens: dict[tuple[str, str], int] = {}
        pos, group_size = 0, 1
        hard = 10.0 * 1.5 + 1.0  # a 10 s limit's hard time: only sets the claims' deadlines
        while pos < len(items) and not self.stop.is_set():
            group = items[pos : pos + group_size]
            pos += len(group)
            waiting = items[pos:] if len(group) == pos else []
            tiny = self.solve_s < TINY_S
            started = time.monotonic()
            if len(group) == 1 and not waiting and tiny:
                runnable, claimed = group, False  # a lone tiny attempt ends before its claim is due
            else:

                def claim_group(connection, keys=group, waiting=waiting) -> dict:
                    by = ClaimBy(self.hostname, 5, hard, self.lease.name)
                    answer = claim_many(connection, self.run_id, keys, by)
                    tokens.update(answer.tokens)
                    if waiting:
                        hold(connection, self.run_id, waiting, self.lease.name)
                    return answer.verdicts

                verdicts = in_transaction(self.claims, claim_group, current_settings().db_patience)
                runnable, claimed = [k for k in group if verdicts[k] is ClaimVerdict.RUN], True
            for key in runnable:
                if self.solve_s:
                    time.sleep(self.solve_s)
                now = utcnow()
                outcome = Outcome(Status.SOLVED, [1], SearchStats(wall_s=self.solve_s, cpu_s=self.solve_s))
                began = now - timedelta(seconds=self.solve_s)
                token = tokens.get(key) if claimed else None
                h, heuristic = key
                done = Result(self.run_id, h, outcome, 1, self.hostname, began, now, claimed, token)
                done = replace(done, heuristic=heuristic)
                self.buffer.add(done)
                if self.solve_s >= self.buffer.policy.every_s:
                    self.buffer.flush()
            if runnable:
                pace = (time.monotonic() - started) / len(runnable)
                group_size = max(1, min(MAX_GROUP, int(GROUP_S / pace) if pace > 0 else MAX_GROUP))


def stats(admin_url: str, dbname: str) -> tuple[int, int, int, int]:
    """Return (final attempts, statements of dbname so far, lease renewals so far, WAL position in bytes)."""
    engine = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with engine.connect() as c:
        final = c.execute(
            text("SELECT count(*) FROM attempts WHERE status NOT IN ('queued', 'running')")
        ).scalar_one()
    engine.dispose()
    engine = create_engine(admin_url.rsplit("/", 1)[0] + "/postgres", isolation_level="AUTOCOMMIT")
    with engine.connect() as c:
        calls, renewals = c.execute(
            text(
                "SELECT coalesce(sum(s.calls), 0), coalesce(sum(s.calls) FILTER (WHERE s.query LIKE "
                "'UPDATE workers SET renewed_at%'), 0) FROM pg_stat_statements s JOIN pg_database d "
                "ON d.oid = s.dbid WHERE d.datname = :d"
            ),
            {"d": dbname},
        ).one()
        wal = c.execute(text("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn")).scalar_one()
    engine.dispose()
    return int(final), int(calls), int(renewals), int(wal)


def snapshot(postmaster: subprocess.Popen, url: str, dbname: str) -> tuple[float, float, float, tuple]:
    """Return (moment, instance CPU s, this process's CPU s, stats), all read at about the same moment.

    The moment is the middle of the statistics query, which can take a while on a loaded machine.
    """
    before = time.monotonic()
    cpu, own = instance_cpu_s(postmaster), time.process_time()
    figures = stats(url, dbname)
    return (before + time.monotonic()) / 2, cpu, own, figures


@dataclass(frozen=True)
class Point:
    """One point of the table: n simulated workers, the solver's fixed time, the chunk, seconds measured."""

    n: int
    solve_ms: float
    chunk: str  # "1", or "default": tasks of about half a second
    seconds: float

    @property
    def per_task(self) -> int:
        """Return the levels a task carries."""
        solve_s = self.solve_ms / 1000
        return 1 if self.chunk == "1" else max(1, min(MAX_GROUP, math.ceil(0.5 / max(solve_s, 1e-3))))

    def levels(self) -> int:
        """Return enough attempts for the measurement (a point whose queue runs dry ends its window there).

        Tiny attempts are written in batches, unclaimed: thousands a second even for one worker.
        """
        solve_s = self.solve_ms / 1000
        guess = 20_000.0 if solve_s < TINY_S else 1.5 * self.n / solve_s
        return int(min(40_000, max(4 * self.n * self.per_task, guess * (self.seconds + WARMUP_S + 3))))


def measure(base: str, postmaster: subprocess.Popen, broker: str, point: Point) -> dict:
    """Run the point's simulated workers against a fresh database (dropped afterwards); return the figures."""
    dbname = f"capacity_{point.n}_{int(point.solve_ms)}_{point.chunk}"
    admin = create_engine(f"{base}/postgres", isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(text(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)'))
        c.execute(text(f'CREATE DATABASE "{dbname}"'))
    try:
        return measure_in(f"{base}/{dbname}", dbname, postmaster, broker, point)
    finally:
        forget_engines()
        with admin.connect() as c:
            c.execute(text(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)'))
        admin.dispose()


def measure_in(url: str, dbname: str, postmaster: subprocess.Popen, broker: str, point: Point) -> dict:
    """Seed the database at url, run the simulated workers and a scheduler, and measure one window."""
    run_id, specs = seed(url, point.levels())
    engine = get_engine(url)
    cluster = Cluster.of(broker=broker)
    cluster.app.connection_for_write().default_channel.client.flushdb()
    with session_scope(engine) as s:
        deployment = deployment_id(s)
    cluster.send(run_id, specs[: min(len(specs), 200)], 5, point.per_task, deployment)  # a busy queue
    keys = [p.key for p in specs]  # (level hash, heuristic): what a worker claims
    chunks: queue.Queue = queue.Queue()
    for i in range(0, len(keys), point.per_task):
        chunks.put(keys[i : i + point.per_task])
    stop = threading.Event()
    workers = [SimWorker(i, engine, run_id, chunks, point.solve_ms / 1000, stop) for i in range(point.n)]
    for w in workers:
        w.start()

    def scheduler() -> None:
        while not stop.wait(SCHEDULER_INTERVAL_S):
            reconcile(engine, cluster, grace_s=60)

    sched = threading.Thread(target=scheduler, daemon=True)
    sched.start()
    try:
        time.sleep(WARMUP_S)
        start = snapshot(postmaster, url, dbname)
        while time.monotonic() - start[0] < point.seconds and not chunks.empty():
            time.sleep(0.1)
        dry = chunks.empty()
        end = snapshot(postmaster, url, dbname)
    finally:
        stop.set()
    for w in workers:
        w.join(60)
        w.engine.dispose()
    sched.join(60)
    engine.dispose()
    return figures(point, start, end, dry)


def figures(point: Point, start: tuple, end: tuple, dry: bool) -> dict:
    """Return the point's figures from the snapshots at the start and the end of its window."""
    t0, cpu0, own0, (done0, calls0, renew0, wal0) = start
    t1, cpu1, own1, (done1, calls1, renew1, wal1) = end
    elapsed = t1 - t0
    attempts = max(1, done1 - done0)
    cores = os.cpu_count() or 1
    return {
        "n": point.n,
        "solve_ms": point.solve_ms,
        "chunk": point.chunk,
        "per_task": point.per_task,
        "attempts_s": attempts / elapsed,
        "statements": (calls1 - calls0) / attempts,
        "wal_bytes": (wal1 - wal0) / attempts,
        "renewals_per_worker_s": (renew1 - renew0) / (point.n * elapsed),
        "db_cpu_share": (cpu1 - cpu0) / (elapsed * cores),
        "db_cpu_ms_per_attempt": 1000 * (cpu1 - cpu0) / attempts,
        "driver_cpu_share": (own1 - own0) / (elapsed * cores),
        "ran_dry": dry,
    }


def row(f: dict) -> str:
    dry = " (ran dry)" if f["ran_dry"] else ""
    return (
        f"| {f['chunk']} ({f['per_task']}) | {f['solve_ms']:g} ms | {f['n']} | {f['attempts_s']:,.0f}{dry} | "
        f"{f['statements']:.2f} | {f['wal_bytes']:,.0f} | {f['renewals_per_worker_s']:.3f} | "
        f"{f['db_cpu_share']:.0%} | {f['db_cpu_ms_per_attempt']:.2f} | {f['driver_cpu_share']:.0%} |"
    )


HEADER = (
    "| chunk (levels/task) | solve | workers N | attempts/s | statements/attempt | WAL bytes/attempt | "
    "renewals/worker-s | database CPU (of machine) | database CPU ms/attempt | driver CPU |\n"
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
)


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--workers", default="1,4,16,64", help="simulated worker processes, comma separated")
    ap.add_argument("--solve-ms", default="0,10,1000", help="the solver's fixed time, comma separated")
    ap.add_argument("--chunks", default="1,default", help="1 and/or default (tasks of ~0.5 s)")
    ap.add_argument("--seconds", type=float, default=20.0, help="measured seconds per point")
    ap.add_argument("--debug", action="store_true", help="log the workers' retries with their causes")
    args = ap.parse_args()
    if args.debug:
        import logging

        logging.basicConfig(level=logging.DEBUG, format="%(threadName)s %(message)s")
    os.environ["PACKSOLVE_QUEUE"] = "packsolve-capacity"
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # the servers are stopped on the way out
    out = io.StringIO()
    load = os.getloadavg()[0]
    out.write(
        f"capacity, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} cores, load {load:.1f}\n\n"
    )
    out.write(HEADER + "\n")
    print(out.getvalue(), end="", flush=True)
    with redis_server() as url, postgres_instance() as (base, postmaster):
        for chunk in args.chunks.split(","):
            for solve_ms in (float(x) for x in args.solve_ms.split(",")):
                for n in (int(x) for x in args.workers.split(",")):
                    f = measure(base, postmaster, url, Point(n, solve_ms, chunk, args.seconds))
                    print(row(f), flush=True)


if __name__ == "__main__":
    main()
