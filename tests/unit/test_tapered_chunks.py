"""planning.tapered_chunks: a local run's chunks, the last ones smaller, down to one attempt each."""

from __future__ import annotations

from packsolve.execution.spec import AttemptSpec, Limits, PendingAttempt
from packsolve.planning import TAPER, tapered_chunks


def attempts(n: int) -> list[PendingAttempt]:
    return [PendingAttempt(f"{i:064x}", AttemptSpec("coins", "plain", {}, Limits(5.0))) for i in range(n)]


def test_full_chunks_first_then_smaller_ones_and_the_last_attempts_each_alone():
    items = attempts(503)
    chunks = tapered_chunks(items, 31, 2)
    assert [p for c in chunks for p in c] == items  # every attempt once, in order
    sizes = [len(c) for c in chunks]
    assert sizes[0] == 31 and max(sizes) == 31 and sizes == sorted(sizes, reverse=True)
    assert sizes[-TAPER * 2 :] == [1] * (TAPER * 2)  # the last tasks of a night hold one level each
    assert len(chunks) < 503 // 31 + 30  # the taper adds a few tasks, not hundreds


def test_a_chunk_never_holds_more_than_the_attempts_left_over_the_processes_can_share():
    items = attempts(40)
    for processes in (1, 2, 8):
        chunks = tapered_chunks(items, 10, processes)
        left = len(items)
        for chunk in chunks:
            assert len(chunk) == max(1, min(10, left // (TAPER * processes)))
            left -= len(chunk)
    assert tapered_chunks([], 10, 2) == []


def test_an_attempt_expected_long_is_a_chunk_of_its_own_and_the_rest_keep_their_order():
    items = attempts(40)
    alone = {items[0].key, items[1].key, items[7].key}
    chunks = tapered_chunks(items, 5, 2, alone)
    assert [p for c in chunks for p in c] == items
    assert chunks[:4] == [[items[0]], [items[1]], items[2:7], [items[7]]]
    assert all(len(c) == 1 for c in chunks if any(p.key in alone for p in c))
