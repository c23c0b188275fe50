"""Retrying database work on a lost connection: exponential backoff with jitter, bounded in time.

One policy for every service that must outlive a database restart, a killed
connection or a busy SQLite file: the worker's claims and result writes, its
lease renewals, and the scheduler. Only what a retry can cure is retried (a
connection lost or refused); a statement the database rejects is raised at once.
The jitter spreads the reconnections of many workers cut off by one restart.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Protocol, TypeVar

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError, PendingRollbackError
from sqlalchemy.orm import Session
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception,
    stop_before_delay,
    stop_never,
    wait_random_exponential,
)

from packsolve.db.session import session_scope

log = logging.getLogger("packsolve.db")
T = TypeVar("T")

# The waits grow from about FIRST_WAIT_S, doubling, to at most LONGEST_WAIT_S; each is drawn at
# random below that bound ("full jitter").
FIRST_WAIT_S = 0.1
LONGEST_WAIT_S = 5.0


class Transactional(Protocol):
    """What yields a connection inside a transaction: an Engine, or a worker's claim connection."""

    def begin(self) -> AbstractContextManager[Connection]: ...


def transient(exc: BaseException) -> bool:
    """Return True if exc is a lost or refused connection, which a retry on a fresh one can cure.

    PendingRollbackError: a connection the server dropped mid-statement, met again
    before it was rolled back; the next try takes a fresh one.
    """
    if isinstance(exc, (OperationalError, InterfaceError, PendingRollbackError)):
        return True
    return isinstance(exc, DBAPIError) and exc.connection_invalidated


def log_retry(state: RetryCallState) -> None:
    exc = state.outcome.exception() if state.outcome is not None else None
    cause = type(getattr(exc, "orig", None) or exc).__name__
    wait = state.next_action.sleep if state.next_action is not None else 0.0
    log.warning("database call failed (%s); retrying in %.1f s", cause, wait)


def retrying(
    patience_s: float | None,
    longest_wait_s: float = LONGEST_WAIT_S,
    on_retry: Callable[[RetryCallState], None] = log_retry,
    shortest_wait_s: float = 0.0,
) -> Retrying:
    """Return the retry policy: transient errors retried until patience_s is spent (None: forever).

    No try starts past patience_s: the last error is raised instead. on_retry hears of each
    failed try before its wait (default: one warning in the log). Each wait is drawn between
    shortest_wait_s and the growing bound.
    """
    return Retrying(
        retry=retry_if_exception(transient),
        wait=wait_random_exponential(multiplier=FIRST_WAIT_S, max=longest_wait_s, min=shortest_wait_s),
        stop=stop_never if patience_s is None else stop_before_delay(patience_s),
        before_sleep=on_retry,
        reraise=True,
    )


def in_transaction(target: Transactional | Engine, work: Callable[[Connection], T], patience_s: float) -> T:
    """Run work(connection) in a transaction of target, retried on a lost connection for up to patience_s.

    A Core connection, not an ORM session: the worker's statements need none of the
    ORM's bookkeeping, which costs more than a tiny attempt's claim itself. work
    must be safe to repeat (a guarded update, a write that never overwrites).
    """
    for attempt in retrying(patience_s):
        with attempt, target.begin() as connection:
            return work(connection)
    raise AssertionError("unreachable: tenacity re-raises the last error")  # pragma: no cover


def in_session(engine: Engine, work: Callable[[Session], T], patience_s: float) -> T:
    """Run work(session) in a session that commits, retried on a lost connection for up to patience_s."""
    for attempt in retrying(patience_s):
        with attempt, session_scope(engine) as session:
            return work(session)
    raise AssertionError("unreachable: tenacity re-raises the last error")  # pragma: no cover
