"""localpool._Splits: which waiting parts of a local run's split levels go to the pool, and when."""

from __future__ import annotations

import multiprocessing
from concurrent.futures import Future
from datetime import UTC, datetime

from packsolve.api import Combine, Part, Split
from packsolve.combining import Handout
from packsolve.execution.spec import AttemptSpec, Limits, PendingAttempt
from packsolve.localpool import _Splits
from packsolve.outcome import Outcome, SearchStats, Status
from packsolve.split_plans import PlannedSplit

BOARD = {"tiles": [[1, 2, 3], [4, 5, 6], [7, 0, 8]]}


class Executor:
    """Stands in for the pool's ProcessPoolExecutor: it records what it is given and runs nothing."""

    def __init__(self) -> None:
        self.given: list[tuple] = []

    def submit(self, fn, specs, hashes, keep) -> Future:
        [spec] = specs
        self.given.append((hashes[0], spec.part.index))
        return Future()


def planned(level_hash: str) -> PlannedSplit:
    attempt = PendingAttempt(level_hash, AttemptSpec("sliding", "manhattan", BOARD, Limits(60.0)))
    parts = tuple(Part(BOARD, (), 0) for _ in range(3))
    return PlannedSplit(attempt, Split(Combine.BEST_OF_ALL, parts, 1), 3, 30.0)


def splits(*levels: str) -> _Splits:
    made = _Splits(1, [planned(h) for h in levels], [], multiprocessing.get_context("spawn"))
    made.waiting = []  # each test says what waits
    return made


def test_a_part_ahead_of_its_round_goes_only_to_a_process_that_would_be_idle():
    s = splits("a" * 64)
    key = next(iter(s.levels))
    s.waiting = [(key, Handout(i, 3, (42, 42), ahead=True)) for i in (0, 1)]
    pool = Executor()
    s.submit(pool, 0, room=4, recorder=None, idle=0)  # every process busy, or attempts waiting
    assert pool.given == []
    s.submit(pool, 0, room=4, recorder=None, idle=1)  # the pool has room for 4, one process is idle
    assert pool.given == [("a" * 64, 0)] and len(s.waiting) == 1


def test_a_round_of_another_level_goes_first_and_takes_the_idle_process_before_a_part_ahead():
    s = splits("a" * 64, "b" * 64)
    a, b = s.levels
    # Level b's new round was put before everything (_Splits.took); a's part ahead waits behind it.
    s.waiting = [
        (b, Handout(0, 2, (40, 40))),
        (b, Handout(1, 2, (40, 40))),
        (a, Handout(2, 3, (42, 42), ahead=True)),
    ]
    pool = Executor()
    s.submit(pool, 0, room=3, recorder=None, idle=1)
    # Both of b's parts are given (room), the one idle process taken by the first: a's part waits.
    assert pool.given == [("b" * 64, 0), ("b" * 64, 1)]
    assert [(k, h.index) for k, h in s.waiting] == [(a, 2)]


class Recorder:
    """Stands in for the run's _Recorder: keeps the part runs written."""

    def __init__(self) -> None:
        self.part_runs: list = []


def ended(s: _Splits, key, handout: Handout, resume: int) -> None:
    """Give s the end of a part: searched its window without an answer, next bound resume."""
    fut: Future = Future()
    outcome = Outcome(Status.NO_SOLUTION, None, SearchStats(nodes=5, cpu_s=0.5), "", resume=resume)
    now = datetime.now(UTC)
    fut.set_result([(outcome, "w", now, now, None)])
    s.futures[fut] = (key, handout)
    s.took(fut, Recorder())


def test_parts_ahead_not_yet_run_join_the_round_that_begins_in_the_parts_order():
    s = splits("a" * 64)
    key = next(iter(s.levels))
    c = s.levels[key].combination
    for i in range(3):  # round 1 searched: every part's next bound is 40
        c.took(i, Outcome(Status.NO_SOLUTION, None, SearchStats(cpu_s=0.5), "", resume=40))
    second = c.hand_out()
    assert [h.index for h in second] == [0, 1, 2]
    # Parts 2 then 0 end round 2 and are handed out ahead; no process was idle to take them.
    ended(s, key, second[2], 42)
    ended(s, key, second[0], 42)
    assert [(h.index, h.ahead) for _, h in s.waiting] == [(0, True), (2, True)]
    ended(s, key, second[1], 42)  # round 2 over: round 3 holds all three, in order, none ahead
    assert [(h.index, h.round, h.window, h.ahead) for _, h in s.waiting] == [
        (0, 3, (42, 42), False),
        (1, 3, (42, 42), False),
        (2, 3, (42, 42), False),
    ]
