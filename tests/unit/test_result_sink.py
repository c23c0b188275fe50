"""A result sink writes by its FlushPolicy: a full batch at once, the oldest within every_s."""

from __future__ import annotations

import threading
import time

import pytest

from packsolve.attempt import Result
from packsolve.db.sink import FlushPolicy, ResultSink
from packsolve.outcome import Outcome, Status


def result(i: int, claimed: bool = True) -> Result:
    return Result(1, f"{i:064x}", Outcome(Status.SOLVED, [i]), 1, "w", claimed=claimed)


class Writes:
    def __init__(self, fail: int = 0) -> None:
        self.batches: list[list[Result]] = []
        self.fail = fail
        self.done = threading.Event()

    def __call__(self, results: list[Result]) -> None:
        if self.fail:
            self.fail -= 1
            raise ConnectionError("database away")
        self.batches.append(results)
        self.done.set()


def test_a_local_sink_is_due_at_a_full_batch_or_once_its_oldest_result_is_every_s_old():
    writes = Writes()
    sink = ResultSink(writes, FlushPolicy(every_s=0.2, batch=3))
    assert not sink.due()  # empty
    sink.add(result(1))
    sink.add(result(2))
    assert not sink.due()
    sink.add(result(3))
    assert sink.due()
    sink.flush()
    assert [len(b) for b in writes.batches] == [3]
    sink.add(result(4))
    assert not sink.due()
    time.sleep(0.25)
    assert sink.due()
    sink.flush()
    assert [len(b) for b in writes.batches] == [3, 1] and len(sink) == 0


def test_a_local_sinks_failed_write_is_raised_and_its_results_kept_for_the_next():
    writes = Writes(fail=1)
    sink = ResultSink(writes, FlushPolicy(every_s=10, batch=100))
    sink.add(result(1))
    with pytest.raises(ConnectionError):
        sink.flush()
    assert sink.waiting() == {1: [(result(1).level_hash, result(1).heuristic)]}
    sink.flush()
    assert [len(b) for b in writes.batches] == [1] and len(sink) == 0


def test_a_background_sink_writes_a_full_batch_at_once_and_the_rest_within_every_s():
    writes = Writes()
    after: list[int] = []
    sink = ResultSink(
        writes, FlushPolicy(every_s=0.5, batch=2), background=True, after=lambda r: after.append(len(r))
    )
    sink.add(result(1))
    sink.add(result(2))  # a full batch: written now, not in 0.5 s
    assert writes.done.wait(0.3) and [len(b) for b in writes.batches] == [2]
    writes.done.clear()
    started = time.monotonic()
    sink.add(result(3, claimed=False))
    assert sink.held() == set() and sink.waiting() == {1: [(result(3).level_hash, result(3).heuristic)]}
    assert writes.done.wait(5) and time.monotonic() - started >= 0.4
    time.sleep(0.05)
    assert [len(b) for b in writes.batches] == [2, 1] and after == [2, 1] and len(sink) == 0


def test_a_background_sinks_failed_write_is_tried_again_by_its_timer():
    writes = Writes(fail=1)
    sink = ResultSink(writes, FlushPolicy(every_s=0.1, batch=100), background=True)
    sink.add(result(1))
    assert sink.held() == {(1, result(1).level_hash, None)}
    assert writes.done.wait(5) and [len(b) for b in writes.batches] == [1]
