"""A local run's Ctrl-C and `kill PID`: raised only while the loop waits on the pool, never mid-write."""

from __future__ import annotations

import os
import signal

import pytest

from packsolve.localpool import _StopSignals


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_outside_the_wait_is_kept_and_raised_at_the_next_wait(sig):
    with _StopSignals() as signals:
        os.kill(os.getpid(), sig)  # lands while "writing": no exception here
        assert signals.requested == sig
        with pytest.raises(KeyboardInterrupt), signals.interruptible():
            pytest.fail("the kept signal is raised on entering the wait")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_the_wait_raises_at_once(sig):
    with _StopSignals() as signals, pytest.raises(KeyboardInterrupt), signals.interruptible():
        os.kill(os.getpid(), sig)
        pytest.fail("the signal raised inside the wait")


def test_the_previous_handlers_come_back():
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    with _StopSignals():
        pass
    assert {sig: signal.getsignal(sig) for sig in before} == before


def test_after_a_stop_both_signals_stay_ignored_for_the_callers_own_writing():
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        with _StopSignals():
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # as _stop does while it writes
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        assert signal.getsignal(signal.SIGINT) == signal.getsignal(signal.SIGTERM) == signal.SIG_IGN
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
