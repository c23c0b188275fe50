"""How many no-op tasks per second Celery runs with packsolve's app, Redis and process count.

The looser bare-Celery baseline: packsolve's app factory (same settings) plus a no-op
task, the worker started with packsolve's worker arguments. Timed from the first
message taken to the last acknowledged, the tasks queued beforehand.

    python -m benchmarks.pipeline.bare PROCESSES     # the baseline worker (env PACKSOLVE_BROKER_URL, _QUEUE)
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from benchmarks.harness import load, parser
from benchmarks.pipeline.figures import Figure
from benchmarks.pipeline.workers import Worker


def bare_celery(args: argparse.Namespace, tmp: Path) -> list[Figure]:
    """No-op tasks through the same app factory, Redis and process count: tasks/s."""
    import redis

    queue = f"bench-noop-{uuid.uuid4().hex[:8]}"
    env = {"PACKSOLVE_BROKER_URL": args.redis, "PACKSOLVE_QUEUE": queue}
    app = noop_app(args.redis, queue)
    with app.producer_or_acquire() as producer, producer.batch(max_size=1000):
        for _ in range(args.levels):
            app.send_task("bench.noop", producer=producer)
    r = redis.Redis.from_url(args.redis)
    argv = [sys.executable, "-m", "benchmarks.pipeline.bare", str(args.processes)]
    w = Worker(argv, env, tmp / "noop.log")
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


def noop_app(broker: str, queue: str) -> Any:
    """Return packsolve's Celery app on broker and queue, with a no-op task bench.noop."""
    os.environ["PACKSOLVE_QUEUE"] = queue
    from packsolve.queue.app import make_app

    app = make_app(broker)
    app.conf.task_default_queue = queue

    @app.task(name="bench.noop")
    def noop() -> None:
        return None

    return app


def noop_worker(processes: int) -> None:
    """Run the baseline worker: packsolve's app plus a no-op task, packsolve's worker argv."""
    queue = os.environ["PACKSOLVE_QUEUE"]
    app = noop_app(os.environ["PACKSOLVE_BROKER_URL"], queue)
    argv = ["worker", "--loglevel=WARNING", "-Q", queue, "--pool=prefork", "--without-gossip"]
    app.worker_main([*argv, "--without-mingle", f"--concurrency={processes}"])


if __name__ == "__main__":
    p = parser(__doc__)
    p.add_argument("processes", type=int, help="pool processes of the baseline worker")
    noop_worker(p.parse_args().processes)
