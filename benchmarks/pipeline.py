"""Pipeline cost per level: bare Celery, packsolve (distributed, local), GNU parallel, scaling, submit.

Every figure of issue 10, measured in one run and written as a Markdown table:

  python benchmarks/pipeline.py                       # all parts, results in benchmarks/results/pipeline.md
  python benchmarks/pipeline.py --only bare,distributed --levels 1000

Trivial levels are solved sudokus (one node each), made distinct by the symmetries
of the grid from the solutions in tdoku_test_puzzles.txt. Workers are real
`packsolve worker` processes; the bare-Celery baseline is a worker built by the
same app factory (same settings, same Redis, same process count) running a no-op
task. Throughput is timed from the moment the worker takes its first message,
with the tasks already queued, until the last result is in the database (the
run's finished_at, packsolve) or the last message is acknowledged (bare Celery).
Wall seconds on a shared machine move with its load, so the load average is
printed next to each figure, and bare Celery and packsolve distributed are run
alternately --reps times, each reported as the best of its runs.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import random
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from public_data import public_data

ROOT = Path(__file__).resolve().parents[1]
PACKSOLVE = [sys.executable, "-m", "packsolve"]
PARTS = ("bare", "distributed", "local", "parallel", "scaling", "submit", "strict")
BENCH = Path(__file__).resolve().parent


@dataclass
class Figure:
    part: str
    what: str
    database: str
    value: float
    unit: str
    note: str = ""

    def row(self) -> str:
        value = f"{self.value:,.1f}" if self.value >= 10 else f"{self.value:.2f}"
        return f"| {self.part} | {self.what} | {self.database} | {value} {self.unit} | {self.note} |"


def load() -> str:
    return f"load {os.getloadavg()[0]:.1f}"


# --- levels ---------------------------------------------------------------------------------


def solved_grids(n: int, seed: int = 10) -> list[str]:
    """Return n distinct solved sudokus: symmetries (digits, rows, columns, transpose) of known solutions."""
    base = []
    for line in public_data("sudoku", "tdoku_test_puzzles.txt").read_text().splitlines():
        parts = line.strip().split(":")
        if len(parts) >= 3 and len(parts[2]) == 81:
            base.append(parts[2])
    rng = random.Random(seed)
    out: dict[str, None] = {}
    while len(out) < n:
        g = rng.choice(base)
        digits = dict(zip("123456789", rng.sample("123456789", 9), strict=True))
        rows = [b * 3 + r for b in rng.sample(range(3), 3) for r in rng.sample(range(3), 3)]
        cols = [b * 3 + c for b in rng.sample(range(3), 3) for c in rng.sample(range(3), 3)]
        if rng.random() < 0.5:
            grid = "".join(digits[g[r * 9 + c]] for r in rows for c in cols)
        else:
            grid = "".join(digits[g[r * 9 + c]] for c in cols for r in rows)
        out[grid] = None
    return list(out)


def write_pack(path: Path, grids: list[str]) -> Path:
    path.write_text("".join(g + "\n" for g in grids))
    return path


def cpu_bound_pack(path: Path, n: int) -> Path:
    """Hard sudokus for the plain heuristic: with a node limit every level is the same fixed work."""
    lines = [
        ln.split(":")[0].strip()[:81]
        for ln in public_data("sudoku", "tdoku_puzzles6_forum_hardest_1106.txt").read_text().splitlines()
        if ln.strip() and not ln.startswith("#")
    ]
    return write_pack(path, lines[:n])


# --- services -------------------------------------------------------------------------------


@contextlib.contextmanager
def pg_database(admin_url: str) -> Iterator[str]:
    from sqlalchemy import create_engine, text

    admin = create_engine(
        admin_url.replace("postgresql://", "postgresql+psycopg://", 1), isolation_level="AUTOCOMMIT"
    )
    name = f"packsolve_bench_{uuid.uuid4().hex[:8]}"
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield admin_url.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


class Worker:
    """A worker process (packsolve's, or the no-op baseline) in its own process group."""

    def __init__(self, argv: list[str], env: dict[str, str], log: Path) -> None:
        self.log_path = log
        self._log = open(log, "w")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            argv,
            env={**os.environ, **env},
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_started(self, broker: str, queue: str, timeout: float = 120) -> float:
        """Return the monotonic time at which the worker took its first message off the queue.

        Timing from there (not from the log's "ready") leaves start-up out for both
        workers alike, at any log level.
        """
        import redis

        r = redis.Redis.from_url(broker)
        initial = r.llen(queue)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"worker exited early:\n{self.log_path.read_text()}")
            if r.llen(queue) < initial:
                return time.monotonic()
            time.sleep(0.005)
        raise TimeoutError(f"worker took no task:\n{self.log_path.read_text()}")

    def wait_logged(self, text: str, timeout: float = 120) -> None:
        """Wait until the worker's log holds text (" ready." at INFO level)."""
        deadline = time.monotonic() + timeout
        while text not in self.log_path.read_text(errors="replace"):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"worker never logged {text!r}:\n{self.log_path.read_text()}")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        self._log.close()


def packsolve_worker(
    env: dict[str, str], processes: int, tmp: Path, name: str, loglevel: str = "WARNING"
) -> Worker:
    argv = [
        *PACKSOLVE,
        "worker",
        "--concurrency",
        str(processes),
        "--hostname",
        f"{name}@bench",
        "-l",
        loglevel,
    ]
    return Worker(argv, env, tmp / f"{name}.log")


def wait_run(db_url: str, run_id: int, timeout: float = 3600) -> float:
    """Return the monotonic time at which the run was finished: its last result written.

    The worker that writes a run's last results stamps the run's finished_at (the
    clock of this machine), so the end is read from there, not from when a poll
    happens to see it: polling every 0.2 s then costs the workers' CPU almost
    nothing (polling every few milliseconds took several percent of a core).
    """
    from sqlalchemy import select

    from packsolve.db.models import Run
    from packsolve.db.session import get_engine

    engine = get_engine(db_url)
    finished = select(Run.finished_at).where(Run.id == run_id)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with engine.connect() as conn:
            stamp = conn.execute(finished).scalar()
        if stamp is not None:
            if stamp.tzinfo is None:  # SQLite keeps no zone: packsolve writes UTC
                stamp = stamp.replace(tzinfo=datetime.UTC)
            return time.monotonic() - (time.time() - stamp.timestamp())
        time.sleep(0.2)
    raise TimeoutError(f"run {run_id} not finished")


def run_cli(args: list[str], env: dict[str, str], cwd: Path | None = None) -> tuple[str, str, float, float]:
    """Run the packsolve CLI; return (stdout, stderr, wall s, CPU s of the child)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    res = subprocess.run(
        [*PACKSOLVE, *args], env={**os.environ, **env}, cwd=cwd, capture_output=True, text=True
    )
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if res.returncode != 0:
        raise RuntimeError(f"packsolve {' '.join(args)} failed:\n{res.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return res.stdout, res.stderr, wall, cpu


def submit(pack: Path, env: dict[str, str], *extra: str) -> tuple[int, int, float, float]:
    """Submit the pack; return (run id, chunk size, wall s, CPU s)."""
    out, err, wall, cpu = run_cli(["submit", str(pack), "--time-limit", "60", *extra], env)
    chunk = int(re.search(r"of up to (\d+)", err).group(1)) if "of up to" in err else 1
    return int(out.strip().splitlines()[-1]), chunk, wall, cpu


# --- parts ----------------------------------------------------------------------------------


def bare_celery(args: argparse.Namespace, tmp: Path) -> list[Figure]:
    """No-op tasks through the same app factory, Redis and process count: tasks/s."""
    import redis

    queue = f"bench-noop-{uuid.uuid4().hex[:8]}"
    env = {"PACKSOLVE_BROKER_URL": args.redis, "PACKSOLVE_QUEUE": queue}
    app = _noop_app(args.redis, queue)
    with app.producer_or_acquire() as producer, producer.batch(max_size=1000):
        for _ in range(args.levels):
            app.send_task("bench.noop", producer=producer)
    r = redis.Redis.from_url(args.redis)
    w = Worker([sys.executable, __file__, "_noop-worker", str(args.processes)], env, tmp / "noop.log")
    try:
        t0 = w.wait_started(args.redis, queue)
        while r.llen(queue) or r.hlen("unacked"):
            time.sleep(0.02)
        t1 = time.monotonic()
    finally:
        w.stop()
    rate = args.levels / (t1 - t0)
    note = f"{args.levels} tasks, {args.processes} processes, {load()}"
    return [Figure("bare Celery", "no-op tasks", "—", rate, "tasks/s", note)]


def _noop_app(broker: str, queue: str):  # type: ignore[no-untyped-def]
    os.environ["PACKSOLVE_QUEUE"] = queue
    from packsolve.queue.app import make_app

    app = make_app(broker)
    app.conf.task_default_queue = queue

    @app.task(name="bench.noop")
    def noop() -> None:
        return None

    return app


def _noop_worker(processes: int) -> None:
    """Entry of the baseline worker process: packsolve's app plus a no-op task, packsolve's worker argv."""
    queue = os.environ["PACKSOLVE_QUEUE"]
    app = _noop_app(os.environ["PACKSOLVE_BROKER_URL"], queue)
    argv = [
        "worker",
        "--loglevel=WARNING",
        "-Q",
        queue,
        "--pool=prefork",
        "--without-gossip",
        "--without-mingle",
    ]
    app.worker_main([*argv, f"--concurrency={processes}"])


def distributed(args: argparse.Namespace, tmp: Path, db_url: str, label: str) -> list[Figure]:
    """Trivial levels through submit -> one worker of N processes -> database, chunk 1 then automatic."""
    pack = write_pack(tmp / "trivial.sdk", solved_grids(args.levels))
    figures = []
    for chunk_arg in ("1", "0"):
        env = {"PACKSOLVE_DATABASE_URL": db_url, "PACKSOLVE_BROKER_URL": args.redis}
        env["PACKSOLVE_QUEUE"] = f"bench-{uuid.uuid4().hex[:8]}"
        run_id, chunk, sub_wall, sub_cpu = submit(pack, env, "--chunk-size", chunk_arg)
        w = packsolve_worker(env, args.processes, tmp, f"dist-{label}-{chunk}")
        try:
            t0 = w.wait_started(args.redis, env["PACKSOLVE_QUEUE"])
            t1 = wait_run(db_url, run_id)
        finally:
            w.stop()
        how = "chunk 1" if chunk_arg == "1" else f"automatic chunk ({chunk})"
        note = f"{args.levels} levels, {args.processes} processes, submit {sub_wall:.1f} s, {load()}"
        figures.append(
            Figure(
                "packsolve distributed",
                f"solved sudokus, {how}",
                label,
                args.levels / (t1 - t0),
                "levels/s",
                note,
            )
        )
        figures.append(
            Figure(
                "packsolve distributed",
                f"same, submit included, {how}",
                label,
                args.levels / (t1 - t0 + sub_wall),
                "levels/s",
                "",
            )
        )
    return figures


def local(args: argparse.Namespace, tmp: Path) -> list[Figure]:
    """Trivial levels on the local process pool with SQLite: chunk 1 vs automatic, and the CLI end to end."""
    from packsolve import runs
    from packsolve.db.session import get_engine
    from packsolve.execution import Limits
    from packsolve.planning import Request, plan_run

    pack = write_pack(tmp / "trivial-local.sdk", solved_grids(args.levels, seed=11))
    db_url = f"sqlite:///{tmp / 'local.db'}"
    engine = get_engine(db_url)
    figures = []
    for chunk in (1, None):
        run = runs.create(engine, plan_run([pack]), Request(limits=Limits(60)), "local", [])
        start = time.monotonic()
        runs.solve_local(engine, run, args.processes, chunk_size=chunk)
        wall = time.monotonic() - start
        how = "chunk 1" if chunk == 1 else "automatic chunk"
        note = f"{args.levels} levels, {args.processes} processes, {load()}"
        figures.append(
            Figure(
                "packsolve local", f"solved sudokus, {how}", "SQLite", args.levels / wall, "levels/s", note
            )
        )
    env = {"PACKSOLVE_DATABASE_URL": f"sqlite:///{tmp / 'local-cli.db'}"}
    _, _, wall, _ = run_cli(
        ["solve", str(pack), "--quiet", "--jobs", str(args.processes), "--format", "json"], env
    )
    figures.append(
        Figure(
            "packsolve local",
            "`packsolve solve PACK`, end to end (start-up, parse, write)",
            "SQLite",
            args.levels / wall,
            "levels/s",
            f"{load()}",
        )
    )
    return figures


def gnu_parallel(args: argparse.Namespace, tmp: Path, db_url: str, label: str) -> list[Figure]:
    """GNU parallel running one `packsolve solve FILE` per level, N at a time: levels/s."""
    binary = shutil.which("parallel")
    if binary is None:
        return [
            Figure(
                "GNU parallel", "skipped: `parallel` not installed", label, 0, "", "apt-get install parallel"
            )
        ]
    folder = tmp / f"one-per-file-{label}"
    folder.mkdir()
    files = []
    for i, grid in enumerate(solved_grids(args.parallel_levels, seed=12)):
        files.append(write_pack(folder / f"{i:05d}.sdk", [grid]))
    cmd = [
        binary,
        "-j",
        str(args.processes),
        "--halt",
        "now,fail=1",
        *PACKSOLVE,
        "solve",
        "--quiet",
        "--jobs",
        "1",
        "--format",
        "json",
        "{}",
        ":::",
        *map(str, files),
    ]
    from packsolve.db.session import get_engine

    get_engine(db_url)  # the schema exists before: `packsolve db upgrade` once, as a user would
    start = time.monotonic()
    res = subprocess.run(
        cmd, env={**os.environ, "PACKSOLVE_DATABASE_URL": db_url}, capture_output=True, text=True
    )
    wall = time.monotonic() - start
    if res.returncode != 0:
        raise RuntimeError(f"GNU parallel failed:\n{res.stderr[-3000:]}")
    note = f"{args.parallel_levels} levels, -j {args.processes}, {load()}"
    return [
        Figure(
            "GNU parallel",
            "one `packsolve solve FILE` per level",
            label,
            args.parallel_levels / wall,
            "levels/s",
            note,
        )
    ]


def scaling(args: argparse.Namespace, tmp: Path, db_url: str, label: str) -> list[Figure]:
    """A CPU-bound pack (hard sudokus, plain, fixed node limit) on 1 worker process vs 2.

    The two are run alternately args.reps times and the best of each kept: on a
    shared machine the others' load moves between runs. The effective
    parallelism (solver CPU seconds / wall seconds) shows what the machine gave.
    Each process is a worker of its own (concurrency 1, its own session): with
    the kernel's autogroup scheduling (sched_autogroup_enabled=1) a session gets
    one share of the CPU against other sessions however many processes it runs,
    so on a busy shared machine two processes of one worker cannot show scaling.
    """
    pack = cpu_bound_pack(tmp / f"cpu-{label}.sdk", args.cpu_levels)
    extra = ["--heuristic", "plain", "--node-limit", str(args.cpu_nodes), "--chunk-size", "1"]
    times: dict[int, list[float]] = {1: [], 2: []}
    cpu: dict[int, list[float]] = {1: [], 2: []}
    for _ in range(args.reps):
        for processes in (1, 2):
            env = {"PACKSOLVE_DATABASE_URL": db_url, "PACKSOLVE_BROKER_URL": args.redis}
            env["PACKSOLVE_QUEUE"] = f"bench-{uuid.uuid4().hex[:8]}"
            # Workers first, all ready, then the tasks: no worker starts late and skews the timing.
            workers = [
                packsolve_worker(env, 1, tmp, f"cpu-{label}-{processes}-{k}", loglevel="INFO")
                for k in range(processes)
            ]
            try:
                for w in workers:
                    w.wait_logged(" ready.")
                arrived = first_message(args.redis, env["PACKSOLVE_QUEUE"])
                run_id, _, _, _ = submit(pack, env, *extra)
                times[processes].append(wait_run(db_url, run_id) - arrived())
            finally:
                for w in workers:
                    w.stop()
            cpu[processes].append(solver_cpu(db_url, run_id))
    best = {p: min(t) for p, t in times.items()}
    par = {p: max(c / t for c, t in zip(cpu[p], times[p], strict=True)) for p in times}
    note = (
        f"{args.cpu_levels} levels x {args.cpu_nodes:,} nodes, best of {args.reps}: "
        f"1 process {best[1]:.1f} s, 2: {best[2]:.1f} s; "
        f"effective parallelism {par[1]:.2f} vs {par[2]:.2f}; {load()}"
    )
    what = "CPU-bound pack, 2 worker processes vs 1 (one worker each)"
    return [Figure("scaling", what, label, best[1] / best[2], "x", note)]


def first_message(broker: str, queue: str):  # type: ignore[no-untyped-def]
    """Watch the queue from now on; return a function giving when the first message arrived there.

    Ready workers take a message within milliseconds, so arrival is seen as the
    queue length rising or as the messages taken (Redis' unacked hash growing).
    """
    import threading

    import redis

    r = redis.Redis.from_url(broker)
    base = r.hlen("unacked")
    seen: list[float] = []

    def watch() -> None:
        while not seen:
            if r.llen(queue) or r.hlen("unacked") > base:
                seen.append(time.monotonic())
            time.sleep(0.001)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()

    def arrived() -> float:
        thread.join(60)
        return seen[0]

    return arrived


def solver_cpu(db_url: str, run_id: int) -> float:
    """Return the CPU seconds the run's solver children used."""
    from sqlalchemy import func, select

    from packsolve.db.models import Attempt
    from packsolve.db.session import get_engine, session_scope

    with session_scope(get_engine(db_url)) as s:
        return float(s.scalar(select(func.sum(Attempt.cpu_s)).where(Attempt.run_id == run_id)) or 0.0)


def submit_big(args: argparse.Namespace, tmp: Path, db_url: str, label: str) -> list[Figure]:
    """`packsolve submit` of the 49,158-line 17-clue file: wall and CPU seconds, automatic chunk, chunk 1."""
    figures = []
    path = args.submit_file or public_data("sudoku", "tdoku_puzzles2_17_clue.txt")
    for chunk_arg in ("0", "1"):
        env = {"PACKSOLVE_DATABASE_URL": db_url, "PACKSOLVE_BROKER_URL": args.redis}
        env["PACKSOLVE_QUEUE"] = f"bench-{uuid.uuid4().hex[:8]}"
        _, chunk, wall, cpu = submit(path, env, "--chunk-size", chunk_arg)
        n = sum(1 for ln in path.read_text().splitlines() if ln.strip())
        figures.append(
            Figure("submit", f"{n:,} levels, chunk {chunk}", label, wall, "s", f"{cpu:.1f} s CPU, {load()}")
        )
        import redis

        redis.Redis.from_url(args.redis).delete(env["PACKSOLVE_QUEUE"])  # nobody will run them
    return figures


# --- strict (issue 19): bare Celery measured strictly, in the steady state ------------------


BARE_STEADY = "bare Celery, counting no-op, steady state"
PK_STEADY = "packsolve, solved sudokus, steady state"
PK_LOOSE = "packsolve, first message to last result"


def steady_rate(times: list[float]) -> float:
    """Return the rate between 10 % and 90 % of the tasks done, from each task's completion time.

    Neither the submit nor the workers' start nor the tail counts.
    """
    times = sorted(times)
    lo, hi = int(0.1 * len(times)), int(0.9 * len(times)) - 1
    return (hi - lo) / (times[hi] - times[lo])


def cpu_seconds(pid: int) -> float:
    """Return the CPU seconds (user + system) process pid has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def strict_bare(args: argparse.Namespace, tmp: Path) -> tuple[Figure, float]:
    """Plain Celery (benchmarks/bare_celery.py), its no-op tasks queued first: steady-state tasks/s.

    Each task increments a counter; polled every few milliseconds, the counter
    gives each task's completion time. Also returns the worker main process's CPU s per task.
    """
    import redis
    from celery import Celery

    queue = f"bench-bare-{uuid.uuid4().hex[:8]}"
    counter = f"{queue}:done"
    app = Celery("bare", broker=args.redis)
    app.conf.update(task_default_queue=queue, task_serializer="json")
    with app.producer_or_acquire() as producer, producer.batch(max_size=1000):
        for _ in range(args.levels):
            app.send_task("bare.count", producer=producer)
    r = redis.Redis.from_url(args.redis)
    env = {"BARE_BROKER_URL": args.redis, "BARE_QUEUE": queue}
    w = Worker([sys.executable, str(BENCH / "bare_celery.py"), str(args.processes)], env, tmp / "bare.log")
    done: list[float] = []
    try:
        w.wait_started(args.redis, queue)
        cpu0 = cpu_seconds(w.proc.pid)
        seen = 0
        deadline = time.monotonic() + 600
        while seen < args.levels and time.monotonic() < deadline:
            now, count = time.monotonic(), int(r.get(counter) or 0)
            done += [now] * (count - seen)  # tasks done since the last look: done by now
            seen = count
            time.sleep(0.002)
        main_cpu = (cpu_seconds(w.proc.pid) - cpu0) / args.levels
    finally:
        w.stop()
        r.delete(counter, queue, f"_kombu.binding.{queue}", f"_kombu.binding_permanent.{queue}")
    note = f"{args.levels} tasks, -c {args.processes}, acks late, prefetch 1, {load()}"
    return Figure("strict", BARE_STEADY, "—", steady_rate(done), "tasks/s", note), main_cpu


def packsolve_chunk1(
    args: argparse.Namespace, tmp: Path, db_url: str, pack: Path, argv: list[str] | None = None
) -> tuple[list[Figure], int, Worker | None, float]:
    """Solved sudokus, --chunk-size 1, one worker of args.processes: steady-state and loose levels/s.

    The steady state comes from the attempts' finished_at (each stamped when its
    result came back, whatever the write batching). argv replaces the worker's command
    (the timed worker of the cost table). Returns the figures, the run id and the
    worker's main process CPU s per level.
    """
    from sqlalchemy import select

    from packsolve.db.models import Attempt
    from packsolve.db.session import get_engine

    env = {"PACKSOLVE_DATABASE_URL": db_url, "PACKSOLVE_BROKER_URL": args.redis}
    env["PACKSOLVE_QUEUE"] = f"bench-{uuid.uuid4().hex[:8]}"
    run_id, _, _, _ = submit(pack, env, "--chunk-size", "1")
    name = f"strict-{run_id}"
    (tmp / name).mkdir()
    w = (
        packsolve_worker(env, args.processes, tmp, name)
        if argv is None
        else Worker(argv, {**env, "COST_HOOKS_DIR": str(tmp / name)}, tmp / f"{name}.log")
    )
    try:
        t0 = w.wait_started(args.redis, env["PACKSOLVE_QUEUE"])
        cpu0 = cpu_seconds(w.proc.pid)
        t1 = wait_run(db_url, run_id)
        main_cpu = (cpu_seconds(w.proc.pid) - cpu0) / args.levels
        time.sleep(1.0)  # the timed worker's processes write their totals every half second
    finally:
        w.stop()
    with get_engine(db_url).connect() as conn:
        stamps = conn.execute(select(Attempt.finished_at).where(Attempt.run_id == run_id)).scalars().all()
    steady = steady_rate([t.timestamp() for t in stamps if t is not None])
    note = f"{args.levels} levels, chunk 1, one worker --concurrency {args.processes}, {load()}"
    return [
        Figure("strict", PK_STEADY, "PostgreSQL", steady, "levels/s", note),
        Figure("strict", PK_LOOSE, "PostgreSQL", args.levels / (t1 - t0), "levels/s", note),
    ], run_id, w, main_cpu  # fmt: skip


def strict(args: argparse.Namespace, tmp: Path) -> list[Figure]:
    """Issue 19's comparison: strict bare Celery, the looser bare baseline and packsolve, alternately.

    Each of the three runs args.reps times in turn on the same Redis, best of each
    kept; then one more packsolve run under the timing hooks (benchmarks/cost_hooks.py)
    gives where a level's cost goes.
    """
    pack = write_pack(tmp / "strict.sdk", solved_grids(args.levels, seed=19))
    figures: list[Figure] = []
    bare_cpu, pk_cpu = [], []
    with pg_database(args.pg) as url:
        for _ in range(args.reps):
            fig, cpu = strict_bare(args, tmp)
            figures.append(fig)
            bare_cpu.append(cpu)
            figures += bare_celery(args, tmp)
            pk, _, _, cpu = packsolve_chunk1(args, tmp, url, pack)
            figures += pk
            pk_cpu.append(cpu)
            for f in figures[-4:]:
                print(f.row(), file=sys.stderr, flush=True)
        argv = [sys.executable, str(BENCH / "cost_hooks.py"), str(args.processes)]
        _, run_id, w, cpu = packsolve_chunk1(args, tmp, url, pack, argv)
    best = {f.what: f.value for f in best_of(figures)}
    strict_ratio = best[PK_STEADY] / best[BARE_STEADY]
    loose_ratio = best[PK_LOOSE] / best["no-op tasks"]
    figures += [
        Figure("strict", "ratio, steady state / strict bare", "PostgreSQL", strict_ratio, "x", "goal ≥ 0.7"),
        Figure("strict", "ratio, first message to end / looser bare", "PostgreSQL", loose_ratio, "x", ""),
    ]
    assert w is not None
    costs = cost_table(tmp / f"strict-{run_id}", args.levels, cpu, min(bare_cpu), best)
    print(costs, file=sys.stderr)
    args.costs = costs
    return figures


def cost_table(folder: Path, levels: int, main_cpu: float, bare_main_cpu: float, best: dict) -> str:
    """Return the per-level cost table (Markdown) from the timed worker's totals in folder."""
    totals: dict[str, float] = {}
    span = task = 0.0
    missing: set[str] = set()
    for f in folder.glob("*.json"):
        data = json.loads(f.read_text())
        missing.update(data["missing"])
        for stage, (seconds, _calls) in data["totals"].items():
            totals[stage] = totals.get(stage, 0.0) + seconds
        if data["span"]:
            span += data["span"][1] - data["span"][0]
        task += data["totals"].get("task", [0.0])[0]

    def ms(seconds: float) -> str:
        return f"{1000 * seconds / levels:.3f}"

    inside = sum(totals.get(s, 0.0) for s in ("claim", "parse", "child", "verify"))
    bare_rate = best[BARE_STEADY]
    rows = [
        ("claim (a lone tiny level is claimed by its result's write instead)", totals.get("claim", 0)),
        ("parse the level, look up the solver", totals.get("parse", 0)),
        ("solver child: send the job, solve, read the result back (the IPC)", totals.get("child", 0)),
        ("verify (and the Outcome)", totals.get("verify", 0)),
        ("rest of packsolve's task (decode, provenance, result buffered)", task - inside),
        ("result write, batched (a timer thread of the pool process)", totals.get("write", 0)),
        ("Celery's own in the pool processes (between tasks: ack, next message)", span - task),
    ]
    lines = [
        "| where (pool processes, process-ms per level) | ms |",
        "| --- | ---: |",
        *(f"| {what} | {ms(sec)} |" for what, sec in rows),
        f"| **pool processes in all** (first task to last, both processes) | **{ms(span)}** |",
        f"| Celery's main process, CPU per level | {1000 * main_cpu:.3f} |",
        f"| bare Celery for comparison: pool processes per task (2 / rate) | {2000 / bare_rate:.3f} |",
        f"| bare Celery: main process, CPU per task | {1000 * bare_main_cpu:.3f} |",
    ]
    if missing:
        lines.append(f"\n(not timed, no longer in the code: {', '.join(sorted(missing))})")
    return "\n".join(lines)


# --- main -----------------------------------------------------------------------------------


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "_noop-worker":
        _noop_worker(int(sys.argv[2]))
        return
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", default=",".join(PARTS), help=f"comma-separated parts of {PARTS}")
    p.add_argument("--levels", type=int, default=2000, help="trivial levels per throughput run")
    p.add_argument("--processes", type=int, default=os.cpu_count() or 2, help="worker processes")
    p.add_argument("--parallel-levels", type=int, default=40, help="levels for the GNU parallel run")
    p.add_argument("--cpu-levels", type=int, default=24)
    p.add_argument("--cpu-nodes", type=int, default=200_000)
    p.add_argument(
        "--reps", type=int, default=3, help="alternating repetitions of the throughput and scaling runs"
    )
    p.add_argument(
        "--submit-file", type=Path, help="default: sudoku/tdoku_puzzles2_17_clue.txt of the data sets"
    )
    p.add_argument(
        "--redis", default=os.environ.get("PACKSOLVE_BENCH_REDIS_URL", "redis://127.0.0.1:6379/14")
    )
    p.add_argument(
        "--pg",
        default=os.environ.get("PACKSOLVE_BENCH_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres"),
    )
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "pipeline.md")
    args = p.parse_args()
    parts = set(args.only.split(","))
    figures: list[Figure] = []
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    with tempfile.TemporaryDirectory(prefix="packsolve-bench-") as d:
        tmp = Path(d)

        def both(fn, *rest):  # type: ignore[no-untyped-def]
            with pg_database(args.pg) as url:
                figures.extend(fn(args, tmp, url, "PostgreSQL", *rest))
            # A fresh file each time: a repetition must not find the history of the one before.
            sqlite = tmp / f"{fn.__name__}-{uuid.uuid4().hex[:8]}.db"
            figures.extend(fn(args, tmp, f"sqlite:///{sqlite}", "SQLite", *rest))

        steps = [
            ("bare", lambda: figures.extend(bare_celery(args, tmp))),
            ("distributed", lambda: both(distributed)),
            ("local", lambda: figures.extend(local(args, tmp))),
            ("parallel", lambda: both(gnu_parallel)),
            ("scaling", lambda: both(scaling)),
            ("submit", lambda: both(submit_big)),
            ("strict", lambda: figures.extend(strict(args, tmp))),
        ]
        # Bare Celery and packsolve distributed are run alternately args.reps times, each best kept:
        # the others' load on a shared machine only ever slows a run down.
        repeated = [name for name, _ in steps if name in parts and name in REPEATED]
        order = repeated * args.reps + [name for name, _ in steps if name in parts and name not in REPEATED]
        for name in order:
            print(f"== {name} ({load()})", file=sys.stderr, flush=True)
            shown = len(figures)
            dict(steps)[name]()
            for f in figures[shown:]:
                print(f.row(), file=sys.stderr, flush=True)
    write_results(args, best_of(figures), started)


# The throughput parts, repeated --reps times (alternately) and reported as the best of them.
REPEATED = ("bare", "distributed")


def best_of(figures: list[Figure]) -> list[Figure]:
    """Merge repeated figures (same part, what, database): the best value, noting all of them."""
    merged: dict[tuple[str, str, str], list[Figure]] = {}
    for f in figures:
        merged.setdefault((f.part, f.what, f.database), []).append(f)
    out = []
    for same in merged.values():
        best = max(same, key=lambda f: f.value)  # only rates are repeated: higher is better
        if len(same) > 1:
            runs = f"best of {len(same)} ({', '.join(f'{f.value:,.0f}' for f in same)})"
            note = f"{runs}; {best.note}" if best.note else runs
            best = Figure(best.part, best.what, best.database, best.value, best.unit, note)
        out.append(best)
    return out


def write_results(args: argparse.Namespace, figures: list[Figure], started: str) -> None:
    lines = [
        "# Pipeline benchmark (issue 10)",
        "",
        f"`python benchmarks/pipeline.py {' '.join(sys.argv[1:])}` (levels {args.levels}, "
        f"processes {args.processes}) — {started}, "
        f"{os.cpu_count()} cores, Redis {args.redis.rsplit('@', 1)[-1]}.",
        "",
        "| part | what | database | figure | notes |",
        "| --- | --- | --- | --- | --- |",
        *(f.row() for f in figures),
        "",
    ]
    if getattr(args, "costs", None):
        lines += ["Where a one-level task's time goes (strict part, cost_hooks.py):", "", args.costs, ""]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if args.out.exists() and set(args.only.split(",")) != set(PARTS):
        lines = [
            *lines,
            "",
            "(partial run: the parts asked for; an earlier full run follows)",
            "",
            args.out.read_text(),
        ]
    args.out.write_text("\n".join(lines))
    print("\n".join(lines))
    print(json.dumps({"written": str(args.out)}), file=sys.stderr)


if __name__ == "__main__":
    main()
