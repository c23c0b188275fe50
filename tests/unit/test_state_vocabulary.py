"""Each state machine has one spelling: its enum; a run's shown state is the same for every reader."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from datetime import UTC, datetime
from types import SimpleNamespace

import pytest

from packsolve.attempt import DEFAULT_MAX_TRIES, ClaimVerdict, StopReason, tries_cap
from packsolve.db.local_runs import shown_state
from packsolve.db.models import Run
from packsolve.execution.spawn import Kill
from packsolve.outcome import Status
from packsolve.pids import pid_alive
from packsolve.puzzles import KindOrigin
from packsolve.runstate import RunMode, RunState, ShownState, shown

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def facts(mode=RunMode.DISTRIBUTED, state=RunState.RUNNING, finished=None, sent=NOW, error=None):
    return SimpleNamespace(mode=mode, state=state, finished_at=finished, sent_at=sent, send_error=error)


@pytest.mark.parametrize(
    ("run", "alive", "expected"),
    [
        (facts(), None, ShownState.RUNNING),
        (facts(finished=NOW, state=RunState.FINISHED), None, ShownState.FINISHED),
        (facts(finished=NOW, state=RunState.CANCELLED), None, ShownState.CANCELLED),
        (facts(finished=NOW, state=RunState.CANCELLED), False, ShownState.CANCELLED),
        # A run stamped finished whose state was not updated yet is finished all the same.
        (facts(finished=NOW, state=RunState.RUNNING), None, ShownState.FINISHED),
        # Distributed, its submit stopped with a reason: unsent; still at work (or killed): sending.
        (facts(sent=None, error="broker went away"), None, ShownState.UNSENT),
        (facts(sent=None), None, ShownState.SENDING),
        # A cancelled run not sent in full is shown cancelled: there is nothing left to send.
        (facts(sent=None, error="x", state=RunState.CANCELLED), None, ShownState.CANCELLED),
        # Local: its solve process gone: interrupted; alive or not to be told: running.
        (facts(mode=RunMode.LOCAL, sent=None), False, ShownState.INTERRUPTED),
        (facts(mode=RunMode.LOCAL, sent=None), True, ShownState.RUNNING),
        (facts(mode=RunMode.LOCAL, sent=None), None, ShownState.RUNNING),
        # A finished local run whose process has long gone is finished, not interrupted.
        (facts(mode=RunMode.LOCAL, finished=NOW, state=RunState.FINISHED), False, ShownState.FINISHED),
    ],
)
def test_the_shown_state_of_each_situation(run, alive, expected):
    assert shown(run, alive) is expected


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ("this process", ShownState.RUNNING),
        ("a process gone", ShownState.INTERRUPTED),
        ("another machine", ShownState.RUNNING),
    ],
)
def test_a_local_runs_shown_state_asks_whether_its_solve_process_lives(where, expected):
    pid = _dead_pid() if where == "a process gone" else os.getpid()
    host = "elsewhere.invalid" if where == "another machine" else socket.gethostname()
    run = Run(mode=RunMode.LOCAL, state=RunState.RUNNING, finished_at=None, pid=pid, host=host)
    assert shown_state(run) is expected


def test_an_unsent_run_is_shown_unsent_and_a_sending_one_sending_whoever_asks():
    unsent = Run(mode=RunMode.DISTRIBUTED, state=RunState.RUNNING, sent_at=None, send_error="refused")
    sending = Run(mode=RunMode.DISTRIBUTED, state=RunState.RUNNING, sent_at=None, send_error=None)
    assert (shown_state(unsent), shown_state(sending)) == (ShownState.UNSENT, ShownState.SENDING)


def test_the_shown_states_extend_the_stored_ones_with_the_same_spellings():
    assert {s.value for s in RunState} <= {s.value for s in ShownState}
    assert {s for s in ShownState if s.going} == {ShownState.RUNNING, ShownState.SENDING, ShownState.UNSENT}


def test_claim_verdicts_are_the_four_answers_of_a_claim_and_read_as_their_values():
    assert [v.value for v in ClaimVerdict] == ["run", "skip", "cancelled", "lost"]
    # The verdicts that end an attempt are spelled as the attempt's status they leave behind.
    assert (ClaimVerdict.LOST == Status.LOST, ClaimVerdict.CANCELLED == Status.CANCELLED) == (True, True)


def test_stop_reasons_of_a_local_run():
    assert {r.value for r in StopReason} == {"interrupted", "cancelled"}


def test_kind_origins_name_where_a_kind_came_from():
    assert [o.value for o in KindOrigin] == ["built-in", "plug-in", "PACKSOLVE_EXTRA_KINDS"]


def test_a_programs_kill_reasons_are_the_limits_that_stop_it():
    # cpu: the tree's CPU time passed --cpu-limit (the attempt is a timeout, its message says CPU).
    assert {k.value for k in Kill} == {"timeout", "cpu", "memout", "output"}
    assert Kill.TIMEOUT == Status.TIMEOUT and Kill.MEMOUT == Status.MEMOUT


def test_tries_cap_is_the_runs_own_cap_else_the_default():
    assert (tries_cap(3), tries_cap(None), tries_cap(0), tries_cap(None, 2)) == (
        3,
        DEFAULT_MAX_TRIES,
        DEFAULT_MAX_TRIES,
        2,
    )


def test_pid_alive_tells_a_live_process_from_one_gone():
    assert pid_alive(os.getpid()) and not pid_alive(_dead_pid())
