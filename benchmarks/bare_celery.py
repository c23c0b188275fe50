"""The strict bare-Celery baseline: a no-op task counting itself through one Redis client.

    BARE_BROKER_URL=redis://127.0.0.1:6379/14 BARE_QUEUE=q python -m benchmarks.bare_celery   # the worker

Plain Celery, none of packsolve: JSON, acks late, prefetch 1, prefork pool of 2
(--concurrency), no gossip or mingle, no results. The task increments BARE_QUEUE:done through one
module-level Redis client, the least a task that records something can do, so that the
benchmark can see from outside when each task was done. The pipeline's strict part enqueues the
tasks, starts this worker and reads the counter.
"""

from __future__ import annotations

import os

import redis
from celery import Celery

from benchmarks.harness import parser

BROKER = os.environ.get("BARE_BROKER_URL", "redis://127.0.0.1:6379/14")
QUEUE = os.environ.get("BARE_QUEUE", "bare")
COUNTER = f"{QUEUE}:done"
TASK = "bare.count"

client = redis.Redis.from_url(BROKER)  # one per process: redis-py makes a fresh pool after a fork
app = Celery("bare", broker=BROKER)
app.conf.update(
    task_serializer="json",
    accept_content=["json"],
    task_ignore_result=True,
    task_acks_late=True,
    worker_prefetch_multiplier=1,
    task_default_queue=QUEUE,
    broker_connection_retry_on_startup=True,
    worker_send_task_events=False,
)


@app.task(name=TASK)
def count() -> None:
    client.incr(COUNTER)


def main(concurrency: int) -> None:
    argv = ["worker", "--loglevel=WARNING", "-Q", QUEUE, "--pool=prefork", f"--concurrency={concurrency}"]
    app.worker_main([*argv, "--without-gossip", "--without-mingle"])


if __name__ == "__main__":
    p = parser(__doc__)
    p.add_argument("concurrency", type=int, nargs="?", default=2, help="pool processes [default: 2]")
    main(p.parse_args().concurrency)
