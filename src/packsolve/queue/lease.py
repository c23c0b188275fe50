"""A worker process's lease, renewed by a thread that also notices when the process was frozen.

The lease (db.workers) says the process is alive: while it lies ahead, the
attempts it claimed are its own. A thread renews it RENEWALS_PER_TTL times per
time to live, and each renewal says what the process runs: the claims and holds
the database has for it that it does not run (a task that failed midway, a
claim whose answer was lost) are given back at once for the scheduler to take,
and which results it has computed and not yet written (`status` counts them apart).
The same thread ticks every TICK_S; a tick that comes FROZEN_GAP_S late means
the whole process was stopped (SIGSTOP, a suspended VM, a machine swapping to
death): that stretch is not the solver's time, and an attempt that
ran over it is measured without it (frozen_during).
"""

from __future__ import annotations

import functools
import logging
import os
import threading
import time
from dataclasses import replace
from typing import Any

from sqlalchemy import Connection

from packsolve.attempt import AttemptKey
from packsolve.db import workers
from packsolve.db.retry import Transactional, in_transaction
from packsolve.db.sink import ResultSink
from packsolve.pids import pid_alive
from packsolve.queue.admission import Tally
from packsolve.settings import DEFAULT_LEASE_TTL_S

# Renewals per time to live: three may fail or crawl before the lease lapses.
RENEWALS_PER_TTL = 4
TICK_S = 0.25
# A tick this late means the process did not run at all meanwhile: a thread waiting on a timer
# is woken within milliseconds even on a loaded machine.
FROZEN_GAP_S = 2.0

log = logging.getLogger("packsolve.worker")


class Lease:
    """This process's lease: its name is the holder of every claim the process makes.

    connection: its own (a ClaimConnection), renewals retried on it as long as the lease lasts;
    results: the process's ResultSink, whose claimed results not yet written it still runs.
    """

    def __init__(
        self,
        connection: Transactional | None,
        host: str,
        ttl_s: float = DEFAULT_LEASE_TTL_S,
        results: ResultSink | None = None,
        facts: workers.Facts | None = None,
        tally: Tally | None = None,
    ) -> None:
        # Its own autocommit connection (queue.claiming.ClaimConnection): the thread renews while the
        # process claims, and a renewal is one UPDATE with no BEGIN or pool checkout around it.
        self._conn = connection
        self.host = host
        self.name = f"{host}/{os.getpid()}"
        self.ttl_s = ttl_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.frozen: list[tuple[float, float]] = []  # (monotonic start, end) of each stretch stopped
        self._lock = threading.Lock()
        self._renewed: float | None = None  # monotonic start of the last renewal that went through
        # What the process runs: its task's attempts (own), and the claimed ones among its results not
        # yet written. Held while a renewal reads it and gives back the rest, and while a task
        # says what it runs, so a claim made meanwhile is never given back.
        self._running: set[tuple[int, str, str]] = set()  # (run id, level hash, heuristic)
        self._runs_lock = threading.Lock()
        self._results = results
        self._tally = tally  # tasks refused, written with each renewal (admission.Tally)
        self._release = threading.Event()  # a task ended: give back what it left at the next tick
        self.offset_s = 0.0  # the database server's clock minus this machine's, as of the last renewal
        # What the first renewal records of the process (it starts its history); None once recorded.
        self._starting: workers.Facts | None = facts or workers.Facts()

    def start(self) -> None:
        """Take the lease now (before the first claim), then keep it alive from a thread."""
        from packsolve.puzzles import offered

        self._offers = offered()
        self.renew()
        self._thread = threading.Thread(target=self._loop, name="packsolve-lease", daemon=True)
        self._thread.start()

    def own(self, run_id: int, keys: list[AttemptKey]) -> None:
        """Say that the process now runs these attempts (level hash, heuristic) of a run (a task's), and
        nothing else of a task."""
        with self._runs_lock:
            self._running = {(run_id, h, heuristic) for h, heuristic in keys}

    def disown(self) -> None:
        """Say that the task ended: what it still holds and does not run goes back at the next tick."""
        with self._runs_lock:
            self._running = set()
        self._release.set()

    def _doing(self) -> workers.Doing:
        """Return what the process works on: its task's attempts, and its results not yet written."""
        if self._results is None:
            return workers.Doing(set(self._running))
        return workers.Doing(self._running | self._results.held(), self._results.waiting())

    def renew(self) -> None:
        """Renew the lease once and give back what the process does not run; log if it had lapsed."""
        began = time.monotonic()
        from packsolve.db.models import utcnow

        def work(connection: Connection) -> dict[str, int]:
            asked = utcnow()
            if self._starting is not None:
                workers.start(connection, self.name, self.host, replace(self._starting, offers=self._offers))
            server = workers.renew(connection, self.name, self.host, self.ttl_s, self._offers, self._doing())
            self.offset_s = (
                (server - asked).total_seconds() if connection.dialect.name == "postgresql" else 0.0
            )
            # Last, in one statement: a retry after it failed writes the same counts once.
            return self._tally.write(connection) if self._tally is not None else {}

        assert self._conn is not None, "a lease without a connection only keeps time"
        with self._runs_lock:
            counted = in_transaction(self._conn, work, self.ttl_s)
        self._starting = None
        if self._tally is not None:
            self._tally.written(counted)
        if self._renewed is not None and began - self._renewed > self.ttl_s:
            lapsed_s = began - self._renewed - self.ttl_s
            log.warning(
                "lease of %s had lapsed for %.1f s (frozen or cut off): its claims may have been taken "
                "back; results of stale claims will be refused",
                self.name,
                lapsed_s,
            )
            back = functools.partial(
                workers.record_event,
                name=self.name,
                host=self.host,
                kind=workers.WorkerEventKind.BACK,
                detail={"lapsed_s": round(lapsed_s, 1)},
            )
            try:
                in_transaction(self._conn, back, self.ttl_s)
            except Exception as exc:  # its history misses a line; the lease itself is renewed
                log.warning("recording that the lease of %s is back failed: %s", self.name, exc)
        self._renewed = began

    def _retire(self, connection: Connection) -> dict[str, int]:
        """End the lease now and write the tasks refused not written yet; return those written."""
        workers.retire(connection, self.name)
        return self._tally.write(connection) if self._tally is not None else {}

    def _loop(self) -> None:
        last = time.monotonic()
        next_renewal = last + self.ttl_s / RENEWALS_PER_TTL
        while not self._stop.wait(TICK_S):
            now = time.monotonic()
            if now - last > TICK_S + FROZEN_GAP_S:
                with self._lock:
                    self.frozen.append((last, now))
                    del self.frozen[:-100]  # only recent stretches matter
                log.warning("this worker process was frozen for %.1f s", now - last - TICK_S)
            last = now
            if now >= next_renewal or self._release.is_set():
                self._release.clear()
                # Counted from when this renewal starts, not ends: a slow one does not delay the next.
                next_renewal = now + self.ttl_s / RENEWALS_PER_TTL
                try:
                    self.renew()
                except Exception as exc:  # the thread must outlive a database outage
                    log.error("renewing the lease of %s failed: %s", self.name, exc)
                # A slow renewal (a slow link, a database retry) is not a freeze of the process.
                last = time.monotonic()

    def frozen_during(self, start: float, end: float) -> float:
        """Return the seconds between monotonic start and end that this process spent frozen."""
        with self._lock:
            return sum(max(0.0, min(b, end) - max(a, start)) for a, b in self.frozen)

    def retire(self) -> None:
        """Stop renewing and end the lease now (a clean exit)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self.ttl_s)  # its connection is the thread's until it stops
        try:
            assert self._conn is not None, "a lease without a connection was never taken"
            counted = in_transaction(self._conn, self._retire, 5.0)
            if self._tally is not None:
                self._tally.written(counted)
        except Exception as exc:
            log.warning("ending the lease of %s failed (it lapses by itself): %s", self.name, exc)


def retire_dead_siblings(connection: Any, run_id: int, keys: list[AttemptKey], host: str) -> bool:
    """End the leases of this worker's own pool processes that hold these attempts but are dead.

    Celery redelivers a task at once when the pool process running it dies
    (task_reject_on_worker_lost); the new delivery lands on this same worker and
    finds the attempt held by the dead process, whose lease lasts a while yet.
    A holder named host/pid of this host whose pid no longer exists is dead
    for sure: its lease ends now. Return True if any was ended.
    """
    dead = [
        holder
        for holder in workers.holders_of(connection, run_id, keys)
        if holder.rpartition("/")[0] == host and not _alive(holder.rpartition("/")[2])
    ]
    for holder in dead:
        workers.end_dead(connection, holder, f"its process was found dead by a sibling on {host}")
        log.warning("pool process %s died holding run %s attempts: taking them over", holder, run_id)
    return bool(dead)


def _alive(pid: str) -> bool:
    """Return whether the process of a holder's pid part lives (a pid that is no number: no)."""
    return pid.isdigit() and pid_alive(int(pid))
