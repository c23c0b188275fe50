"""A task's attempts travel as the releases before sent them: level hash and spec, no name."""

from __future__ import annotations

import json

from packsolve.execution import AttemptSpec, Limits
from packsolve.execution.spec import PendingAttempt
from packsolve.queue.protocol import decode, encode

SPEC = AttemptSpec("coins", "dp", {"kind": "coins", "notes": [1, 2], "target": 3}, Limits(5.0))


def test_an_encoded_attempt_carries_its_level_hash_and_spec_and_decodes_without_a_name():
    body = json.loads(json.dumps(encode(7, [PendingAttempt("ab" * 32, SPEC, "pack.jsonl:1")], 5, "d" * 32)))
    assert body["items"] == [{"level": "ab" * 32, "spec": SPEC.to_json()}]
    task = decode(body)
    assert task.items == (PendingAttempt("ab" * 32, SPEC),) and task.items[0].name is None


def test_a_task_in_the_format_of_an_earlier_release_decodes():
    earlier = {"run": 3, "max_tries": 5, "items": [{"level": "cd" * 32, "spec": SPEC.to_json()}]}
    task = decode(earlier)
    assert (task.run_id, task.max_tries, task.deployment) == (3, 5, None)
    assert task.items == (PendingAttempt("cd" * 32, SPEC),)


def test_tasks_hold_attempts_of_one_kind_and_heuristic_each_where_its_first_came():
    from dataclasses import replace

    from packsolve.queue.app import chunks_of

    def attempt(i: int, kind: str, heuristic: str) -> PendingAttempt:
        return PendingAttempt(f"{i:064x}", replace(SPEC, kind=kind, heuristic=heuristic))

    # A matrix level by level (dp, mine), then a sudoku level: no task mixes them.
    pending = [attempt(0, "coins", "dp"), attempt(0, "coins", "mine"), attempt(1, "coins", "dp")]
    pending += [attempt(1, "coins", "mine"), attempt(2, "coins", "dp"), attempt(3, "sudoku", "dp")]
    chunks = chunks_of(pending, 2)
    assert [[(int(p.level_hash, 16), p.spec.heuristic, p.spec.kind) for p in c] for c in chunks] == [
        [(0, "dp", "coins"), (1, "dp", "coins")],
        [(0, "mine", "coins"), (1, "mine", "coins")],
        [(2, "dp", "coins")],
        [(3, "dp", "sudoku")],
    ]
    assert [len(c) for c in chunks_of(pending, 1)] == [1] * 6
    assert sorted(p.level_hash + p.spec.heuristic for c in chunks_of(pending, 4) for p in c) == sorted(
        p.level_hash + p.spec.heuristic for p in pending
    )
    # Those expected long (planning.Ordered.alone) go in a task each; the rest fill tasks around them.
    chunks = chunks_of(pending, 4, alone={pending[0].key, pending[2].key})
    assert [[(int(p.level_hash, 16), p.spec.heuristic) for p in c] for c in chunks] == [
        [(0, "dp")],
        [(0, "mine"), (1, "mine")],
        [(1, "dp")],
        [(2, "dp")],
        [(3, "dp")],
    ]
