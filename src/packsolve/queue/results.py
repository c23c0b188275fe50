"""A worker process's finished results not yet written, written in batches by a timer thread."""

from __future__ import annotations

import functools
import logging
import threading

from sqlalchemy import Connection, Engine

from packsolve.db.attempts import Result, record, stale_of
from packsolve.db.retry import in_transaction
from packsolve.db.runs import finish_run_if_done
from packsolve.queue.protocol import DB_PATIENCE_S
from packsolve.settings import DEFAULT_RESULT_FLUSH_S

# Results are written in batches at least this often (unless the result_flush setting says
# otherwise): a worker killed loses at most this much finished work (plus the attempt it was
# running); one write per attempt would cost more than a tiny attempt itself.
FLUSH_EVERY_S = DEFAULT_RESULT_FLUSH_S

log = logging.getLogger("packsolve.worker")


class ResultBuffer:
    """This process's finished results not yet written.

    A timer writes them all in one transaction within flush_every_s (the worker's
    result_flush setting, default FLUSH_EVERY_S) of the oldest,
    then checks the runs they touched for their end; at process exit what is left
    is written at once. A write that fails on a lost connection is retried for up
    to DB_PATIENCE_S, then the results stay buffered for the next flush.
    """

    def __init__(self, engine: Engine, flush_every_s: float = FLUSH_EVERY_S) -> None:
        self.engine = engine
        self.flush_every_s = flush_every_s
        self.results: list[Result] = []
        self.writing: list[Result] = []  # taken out of results by a flush that has not committed yet
        self.lock = threading.Lock()
        self.timer: threading.Timer | None = None

    def held(self) -> set[tuple[int, str]]:
        """Return the (run id, level hash) of the claimed attempts whose results are not written yet."""
        with self.lock:
            return {(r.run_id, r.level_hash) for r in (*self.results, *self.writing) if r.claimed}

    def waiting(self) -> dict[int, list[str]]:
        """Return per run id the level hashes of every result not written yet, claimed or not."""
        with self.lock:
            found: dict[int, list[str]] = {}
            for r in (*self.results, *self.writing):
                found.setdefault(r.run_id, []).append(r.level_hash)
            return found

    def add(self, result: Result) -> None:
        with self.lock:
            self.results.append(result)
            self._arm()

    def _arm(self) -> None:
        """Start the timer unless it runs (the caller holds the lock)."""
        if self.timer is None:
            # Not reset by later results: the oldest unwritten one waits at most flush_every_s.
            self.timer = threading.Timer(self.flush_every_s, self.flush)
            self.timer.daemon = True
            self.timer.start()

    def flush(self) -> None:
        """Write what is buffered, then check the runs it touched in a fresh transaction."""
        with self.lock:
            self.timer = None
            done, self.results = self.results, []
            self.writing = self.writing + done
        if not done:
            return
        try:
            in_transaction(self.engine, functools.partial(_record, results=done), DB_PATIENCE_S)
        except Exception:  # the timer thread must not die silently with results in hand
            log.exception("writing results failed; they stay buffered and are tried again")
            self._put_back(done)
            return
        written = {id(r) for r in done}
        with self.lock:
            self.writing = [r for r in self.writing if id(r) not in written]
        self._finish_runs({r.run_id for r in done})

    def _put_back(self, failed: list[Result]) -> None:
        """Return results a flush could not write to the buffer, for the next flush."""
        ids = {id(r) for r in failed}
        with self.lock:
            self.results[:0] = failed
            self.writing = [r for r in self.writing if id(r) not in ids]
            self._arm()

    def _finish_runs(self, run_ids: set[int]) -> None:
        """Stamp the runs finished whose last results were just written, each in a fresh transaction.

        Fresh: two workers committing a run's last results at once each see the other's
        row still pending inside their own, and neither would stamp the run.
        """
        for run_id in sorted(run_ids):
            try:
                in_transaction(
                    self.engine, functools.partial(finish_run_if_done, run_id=run_id), DB_PATIENCE_S
                )
            except Exception:  # the scheduler stamps it on its next pass
                log.exception("checking whether run %s is finished failed", run_id)


def _record(connection: Connection, results: list[Result]) -> int:
    written = record(connection, results, finish=False)
    if written < len(results):
        # Fencing at work: a result whose claim was taken back (this process was frozen or cut
        # off past its lease) is refused; the attempt's current holder reports it.
        for r, why in stale_of(connection, results):
            log.warning("stale result refused: run %s level %s: %s", r.run_id, r.level_hash[:12], why)
    return written
