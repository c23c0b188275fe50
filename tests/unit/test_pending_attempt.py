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
