"""A task's pool process killed by its own worker on request (Celery's revoke with terminate).

Such a kill is no death the attempt's work caused, so it costs the attempt no try: once the pool
process is gone, the tries its claims counted are given back and its lease ends, and the
scheduler's next pass requeues and sends again what it held (db.workers.killed_on_request).
Remote control is off unless PACKSOLVE_WORKER_REMOTE_CONTROL is set (queue.app), so a revoke only
arrives from a broker the deployment trusts.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from celery.worker.request import Request

from packsolve.db.retry import in_transaction
from packsolve.db.session import get_engine
from packsolve.db.workers import killed_on_request
from packsolve.pids import pid_alive
from packsolve.settings import DEFAULT_DB_PATIENCE_S

log = logging.getLogger("packsolve.worker")

# How long the worker waits for a pool process it signalled to be gone; one that outlives this was
# not killed (the signal was one it survives) and keeps its claims, which its own work finishes.
GONE_WITHIN_S = 10.0


def request_class(
    database_url: str | None, hostname: str, patience_s: float = DEFAULT_DB_PATIENCE_S
) -> type[Request]:
    """Return the Celery request class of packsolve's task on a worker of this database and node name
    (patience_s: how long its database calls are retried, the db_patience setting)."""

    class AttemptRequest(Request):
        """Celery's request, which also gives back the tries of a pool process killed on request."""

        def terminate(self, pool: Any, signal: Any = None) -> None:
            pid = self.worker_pid if self.time_start else None  # not started: Celery terminates it later
            super().terminate(pool, signal)
            if pid is not None:
                holder = f"{hostname}/{pid}"  # its lease's name (queue.lease.Lease)
                threading.Thread(
                    target=forgive,
                    args=(database_url, holder, pid, patience_s),
                    name="packsolve-revoked",
                    daemon=True,
                ).start()

    return AttemptRequest


def forgive(
    database_url: str | None, holder: str, pid: int, patience_s: float = DEFAULT_DB_PATIENCE_S
) -> None:
    """Once pool process pid is gone, give back the tries of what it held (see the module)."""
    deadline = time.monotonic() + GONE_WITHIN_S
    while not gone(pid):
        if time.monotonic() > deadline:
            log.warning("pool process %s outlived the signal of a revoke: it keeps its claims", holder)
            return
        time.sleep(0.05)
    try:
        engine = get_engine(database_url, migrate=False)
        given = in_transaction(engine, lambda c: killed_on_request(c, holder), patience_s)
    except Exception as exc:  # the worker's main loop must not die of it; the lease lapses anyway
        log.error("pool process %s was killed on request; giving back its tries failed: %s", holder, exc)
        return
    log.warning(
        "pool process %s was killed on request (a revoke): %d attempt(s) it ran go back to the queue "
        "without costing a try",
        holder,
        given,
    )


def gone(pid: int) -> bool:
    """Return whether process pid has exited (a zombie its parent has not reaped yet has)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rpartition(b")")[2].split()[0]
        return state in (b"Z", b"X")
    except FileNotFoundError:
        return True
    except (OSError, IndexError):  # no /proc: ask the kernel whether the pid exists
        return not pid_alive(pid)
