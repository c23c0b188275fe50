"""Task bodies are signed with the cluster's key (HMAC-SHA256 of the canonical JSON); old keys rotate out."""

from __future__ import annotations

import json

from packsolve.execution import AttemptSpec, Limits
from packsolve.execution.spec import PendingAttempt
from packsolve.queue.protocol import SIGNATURE, TaskKeys, encode, signature_problem, task_keys
from packsolve.settings import current

SPEC = AttemptSpec("coins", "dp", {"kind": "coins", "notes": [1, 2], "target": 3}, Limits(5.0))
NEW, OLD = b"new-key", b"old-key"


def body(key: bytes | None) -> dict:
    # Through JSON and back, as a worker receives it.
    return json.loads(json.dumps(encode(7, [PendingAttempt("ab" * 32, SPEC)], 5, "d" * 32, key)))


def test_a_body_signed_with_the_current_or_an_old_key_passes():
    assert signature_problem(body(NEW), TaskKeys(NEW)) is None
    assert signature_problem(body(OLD), TaskKeys(NEW, (OLD,))) is None


def test_an_unsigned_body_or_one_signed_with_another_key_is_refused_saying_which():
    assert "unsigned task (run 7)" in signature_problem(body(None), TaskKeys(NEW))
    assert "matches none of this worker's keys" in signature_problem(body(OLD), TaskKeys(NEW))


def test_any_change_to_a_signed_body_breaks_its_signature():
    for change in (
        lambda b: b["items"][0]["spec"].update(heuristic="plain"),
        lambda b: b["items"][0]["spec"].update(program={"name": "x", "sha256": "0" * 64}),
        lambda b: b.update(run=8),
        lambda b: b["items"][0]["spec"]["level"].update(target=4),
        lambda b: b.update(extra=1),
    ):
        tampered = body(NEW)
        change(tampered)
        assert signature_problem(tampered, TaskKeys(NEW)) is not None
    weird = {**body(NEW), SIGNATURE: "é" * 64}  # not ASCII: compare_digest would raise
    assert signature_problem(weird, TaskKeys(NEW)) is not None


def test_without_any_key_nothing_is_checked_and_nothing_is_signed():
    assert SIGNATURE not in body(None)
    assert signature_problem(body(None), TaskKeys()) is None


def test_the_keys_come_from_the_environment_old_ones_comma_separated(monkeypatch):
    monkeypatch.setenv("PACKSOLVE_TASK_KEY", "new-key")
    monkeypatch.setenv("PACKSOLVE_TASK_KEYS_OLD", "old-key, older-key,")
    assert task_keys(current()) == TaskKeys(NEW, (OLD, b"older-key"))
    monkeypatch.setenv("PACKSOLVE_TASK_KEY", "")
    monkeypatch.delenv("PACKSOLVE_TASK_KEYS_OLD")
    assert task_keys(current()).accepted == ()
