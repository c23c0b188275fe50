"""The one way finished results reach the database: buffered, then written in batches by a FlushPolicy.

A worker process and the local pool both hand their results to a ResultSink: one write per
attempt would cost more than a tiny attempt itself (and make SQLite the bottleneck). They differ
only in how a batch is written (the worker fences stale claims and stamps finished runs after;
the local pool writes over a cancel) and in who flushes: the worker's sink flushes in its own
timer thread, the local pool's loop asks the sink whether it is due.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from packsolve.attempt import Result
from packsolve.settings import Settings

log = logging.getLogger("packsolve.worker")

# Writes a batch; raises if it could not (the batch is then kept for the next flush).
Write = Callable[[list[Result]], None]
# Runs after a batch was written and left the buffer (e.g. stamping the runs it finished).
After = Callable[[list[Result]], None]


@dataclass(frozen=True)
class FlushPolicy:
    """When buffered results are written: the oldest waits at most every_s; batch of them go at once.

    A process killed loses at most every_s of finished work (plus what it was running).
    """

    every_s: float
    batch: int

    @classmethod
    def worker(cls, settings: Settings) -> FlushPolicy:
        """Return a worker process's policy: the result_flush and result_batch settings."""
        return cls(settings.result_flush, settings.result_batch)

    @classmethod
    def local(cls, settings: Settings) -> FlushPolicy:
        """Return the local pool's policy: the local_result_flush and result_batch settings."""
        return cls(settings.local_result_flush, settings.result_batch)


class ResultSink:
    """Finished results not yet written, written through write by policy (then after, if given).

    With background=True (a worker process) a timer thread writes them all within
    policy.every_s of the oldest, or at once when policy.batch are buffered; a batch
    whose write fails is logged and kept for the next flush. Without (the local pool,
    single-threaded) the owner asks due() and calls flush; a failed write is kept and raised.
    """

    def __init__(
        self, write: Write, policy: FlushPolicy, background: bool = False, after: After | None = None
    ) -> None:
        self.write = write
        self.after = after
        self.policy = policy
        self.background = background
        self.results: list[Result] = []
        self.writing: list[Result] = []  # taken out of results by a flush that has not finished yet
        self.oldest: float | None = None  # when the oldest result in results was added (monotonic)
        self.lock = threading.Lock()
        self.timer: threading.Timer | None = None

    def held(self) -> set[tuple[int, str, str | None]]:
        """Return the (run id, level hash, heuristic) of the claimed attempts whose results are not
        written yet (heuristic None: a result naming none)."""
        with self.lock:
            return {
                (r.run_id, r.level_hash, r.heuristic) for r in (*self.results, *self.writing) if r.claimed
            }

    def waiting(self) -> dict[int, list[tuple[str, str | None]]]:
        """Return per run id the (level hash, heuristic) of every result not written yet, claimed or not
        (heuristic None: a result naming none)."""
        with self.lock:
            found: dict[int, list[tuple[str, str | None]]] = {}
            for r in (*self.results, *self.writing):
                found.setdefault(r.run_id, []).append((r.level_hash, r.heuristic))
            return found

    def __len__(self) -> int:
        with self.lock:
            return len(self.results) + len(self.writing)

    def add(self, result: Result) -> None:
        """Buffer a result; in the background, see that it is written in time."""
        with self.lock:
            self.results.append(result)
            if self.oldest is None:
                self.oldest = time.monotonic()
            if self.background:
                self._arm(0.0 if len(self.results) >= self.policy.batch else self.policy.every_s)

    def due(self) -> bool:
        """Return whether the policy says to write now: a full batch, or the oldest waited every_s."""
        with self.lock:
            if not self.results:
                return False
            full = len(self.results) >= self.policy.batch
            return full or time.monotonic() - (self.oldest or 0.0) >= self.policy.every_s

    def _arm(self, delay: float) -> None:
        """Start the timer to flush within delay unless one runs that soon (the caller holds the lock)."""
        if self.timer is not None and delay > 0:
            return  # not reset by later results: the oldest unwritten one waits at most every_s
        if self.timer is not None:
            self.timer.cancel()  # a full batch goes now (a flush already under way takes it anyway)
        self.timer = threading.Timer(delay, self.flush)
        self.timer.daemon = True
        self.timer.start()

    def flush(self) -> None:
        """Write what is buffered (in the background, a failure is logged and the results kept)."""
        with self.lock:
            self.timer = None
            done, self.results, self.oldest = self.results, [], None
            self.writing = self.writing + done
        if not done:
            return
        try:
            self.write(done)
        except Exception:
            self._put_back(done)
            if not self.background:
                raise
            # The timer thread must not die silently with results in hand.
            log.exception("writing results failed; they stay buffered and are tried again")
            return
        written = {id(r) for r in done}
        with self.lock:
            self.writing = [r for r in self.writing if id(r) not in written]
        if self.after is not None:
            self.after(done)

    def _put_back(self, failed: list[Result]) -> None:
        """Return results a flush could not write to the buffer, for the next flush."""
        ids = {id(r) for r in failed}
        with self.lock:
            self.results[:0] = failed
            self.oldest = time.monotonic() if self.oldest is None else self.oldest
            self.writing = [r for r in self.writing if id(r) not in ids]
            if self.background:
                self._arm(self.policy.every_s)
