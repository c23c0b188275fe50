"""Claiming a group of a task's attempts: the claim connection, and one claim with what goes with it."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, Engine

from packsolve.attempt import AttemptKey, ClaimVerdict
from packsolve.db.attempts import ClaimBy, Claimed, claim_many, hold, start
from packsolve.queue.lease import retire_dead_siblings


class ClaimConnection:
    """This process's connection for claims, kept open in autocommit mode.

    A claim is one guarded statement: BEGIN and COMMIT around it, or checking a
    connection out of the pool for it (reset, events), cost more than the
    statement itself; on PostgreSQL it also skips waiting for the disk. Used
    like Engine.begin by db.retry.in_transaction; after an error the connection
    is dropped and the next claim opens a fresh one.
    """

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.connection: Connection | None = None

    @contextlib.contextmanager
    def begin(self) -> Iterator[Connection]:
        if self.connection is None:
            self.connection = self.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
            if self.engine.dialect.name == "postgresql":
                # A claim need not wait for its WAL flush (one disk sync per tiny attempt). Should
                # the server crash, the last claims may be undone: their attempts go back to queued,
                # and the results, written with synchronous commits, still land (record accepts
                # queued) or are run again. A claim is bookkeeping; results stay durable.
                self.connection.exec_driver_sql("SET synchronous_commit TO off")
        try:
            yield self.connection
            self.connection.commit()  # ends SQLAlchemy's own transaction; the database has committed
        except BaseException:
            connection, self.connection = self.connection, None
            with contextlib.suppress(Exception):
                connection.close()
            raise


@dataclass(frozen=True)
class Claimant:
    """Who claims a task's attempts: the run, the worker and its process's lease, the task's try cap."""

    run_id: int
    worker: str  # the worker's name, recorded on every attempt
    holder: str  # the process's lease
    host: str  # the worker's name as its leases carry it
    max_tries: int
    redelivered: bool = False  # the broker delivered the task again (a pool process of it died)

    def claim(
        self,
        connection: Connection,
        keys: Sequence[AttemptKey],
        hard_s: float | None,
        waiting: Sequence[AttemptKey],
    ) -> Claimed:
        """Claim these attempts (level hash, heuristic) to run one after the other, count the first one's
        try, and hold waiting.

        waiting: the rest of the chunk, held for this process (see db.attempts.hold). A
        redelivered task whose attempts a dead pool process of this worker holds takes them over.
        """
        claimed = self._claim(connection, keys, hard_s)
        skipped = [key for key in keys if claimed.verdicts[key] is ClaimVerdict.SKIP]
        if self.redelivered and skipped and retire_dead_siblings(connection, self.run_id, skipped, self.host):
            # Redelivered because a pool process of this worker died: its lease would only
            # lapse in a while, and its claims are this worker's to take over now.
            again = self._claim(connection, skipped, hard_s)
            claimed.verdicts.update(again.verdicts)
            claimed.tokens.update(again.tokens)
        first = next((key for key in keys if claimed.runs(key)), None)
        if first is not None and len(keys) > 1:  # a lone claim counted its try itself
            start(connection, [(self.run_id, first, claimed.tokens[first])])  # it runs now: its try counts
        if waiting:
            hold(connection, self.run_id, list(waiting), self.holder)
        return claimed

    def _claim(self, connection: Connection, keys: Sequence[AttemptKey], hard_s: float | None) -> Claimed:
        by = ClaimBy(self.worker, self.max_tries, hard_s, self.holder)
        return claim_many(connection, self.run_id, keys, by, start_first=False)

    def start(self, connection: Connection, key: AttemptKey, claimed: Claimed) -> None:
        """Count the try of a claimed attempt that starts now (one of a group, after the one before it)."""
        start(connection, [(self.run_id, key, claimed.tokens[key])])
