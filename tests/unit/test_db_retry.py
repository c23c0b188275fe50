"""db.retry: a lost connection is tried again after a jittered, growing wait, within the patience;
an error a retry cannot cure is raised at once."""

from __future__ import annotations

import contextlib
import time

import pytest
from sqlalchemy.exc import IntegrityError, OperationalError

from packsolve.db.retry import FIRST_WAIT_S, in_transaction, retrying, transient

LOST = OperationalError("SELECT 1", {}, Exception("server closed the connection unexpectedly"))
REJECTED = IntegrityError("INSERT", {}, Exception("duplicate key"))


class Flaky:
    """A Transactional whose first `failures` transactions fail with error."""

    def __init__(self, failures: int, error: Exception) -> None:
        self.failures, self.error, self.begun = failures, error, 0

    @contextlib.contextmanager
    def begin(self):
        self.begun += 1
        if self.begun <= self.failures:
            raise self.error
        yield f"connection {self.begun}"


def test_a_lost_connection_is_tried_again_on_a_fresh_transaction_until_it_works():
    flaky = Flaky(2, LOST)
    assert in_transaction(flaky, lambda connection: connection, patience_s=10) == "connection 3"


def test_an_error_a_retry_cannot_cure_is_raised_at_once():
    flaky = Flaky(1, REJECTED)
    with pytest.raises(IntegrityError):
        in_transaction(flaky, lambda connection: connection, patience_s=10)
    assert flaky.begun == 1 and not transient(REJECTED) and transient(LOST)


def test_no_try_starts_past_the_patience_and_the_last_error_is_raised():
    flaky = Flaky(10**6, LOST)
    began = time.monotonic()
    with pytest.raises(OperationalError):
        in_transaction(flaky, lambda connection: connection, patience_s=0.5)
    assert time.monotonic() - began < 0.5 + 0.1 and flaky.begun > 1
    once = Flaky(10**6, LOST)
    with pytest.raises(OperationalError):
        in_transaction(once, lambda connection: connection, patience_s=0)
    assert once.begun == 1


def test_the_waits_grow_and_are_jittered():
    policy = retrying(patience_s=None)
    waits = []
    for number in (1, 1, 1, 1, 4, 4, 4, 4):

        class State:
            attempt_number = number

        waits.append(policy.wait(State()))  # type: ignore[arg-type]
    first, fourth = waits[:4], waits[4:]
    assert all(0 <= w <= FIRST_WAIT_S for w in first) and len(set(first)) > 1  # random below the bound
    assert max(fourth) <= FIRST_WAIT_S * 2**3 and len(set(fourth)) > 1
