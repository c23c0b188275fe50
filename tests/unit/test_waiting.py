"""tests.support.waiting: the one polling helper the tests wait with."""

from __future__ import annotations

import time

import pytest

from tests.support.waiting import wait_for, wait_until


def test_wait_until_returns_true_as_soon_as_the_check_holds() -> None:
    calls = []
    assert wait_until(lambda: calls.append(1) or len(calls) >= 3, 5, every=0.01)
    assert len(calls) == 3


def test_wait_until_returns_false_after_the_timeout_having_asked_once_more_at_the_deadline() -> None:
    calls = []
    started = time.monotonic()
    assert wait_until(lambda: calls.append(1), 0.1, every=0.02) is False
    assert 0.1 <= time.monotonic() - started < 2
    assert len(calls) >= 2


def test_wait_for_returns_the_first_truthy_value() -> None:
    values = iter([None, 0, "", {"running": 2}])
    assert wait_for(lambda: next(values), 5, every=0.01) == {"running": 2}


def test_wait_for_names_what_it_awaited_and_the_last_value_seen_when_it_times_out() -> None:
    with pytest.raises(AssertionError) as failed:
        wait_for(lambda: 0, 0.05, every=0.01, what="two attempts running")
    assert "two attempts running" in str(failed.value) and "last value seen: 0" in str(failed.value)

    def nothing_yet() -> list[int]:
        return []

    with pytest.raises(AssertionError, match=r"nothing_yet.*last value seen: \[\]"):
        wait_for(nothing_yet, 0.05, every=0.01)


def test_an_error_raised_by_the_getter_ends_the_wait_at_once() -> None:
    def died() -> None:
        raise AssertionError("the process exited")

    started = time.monotonic()
    with pytest.raises(AssertionError, match="the process exited"):
        wait_for(died, 30)
    assert time.monotonic() - started < 5
