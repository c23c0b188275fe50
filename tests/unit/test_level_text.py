"""A level read from a pack keeps the canonical JSON its identity was hashed from (stored as is)."""

from __future__ import annotations

import hashlib

from packsolve.levels import canonical_json, make_level


def test_a_level_keeps_the_canonical_json_its_hash_was_made_from():
    level = make_level("pack.json:1", {"target": 7, "kind": "coins", "notes": [5, 2, 1]})
    assert level.text == canonical_json(dict(level.data))
    assert level.hash == hashlib.sha256(level.text.encode()).hexdigest()


def test_an_invalid_level_has_no_canonical_text_and_compares_as_before():
    bad = make_level("pack.json:2", {"kind": "coins", "notes": "many"})
    assert not bad.valid and bad.text is None
    good = make_level("p", {"kind": "coins", "notes": [1], "target": 1})
    assert good == make_level("p", {"kind": "coins", "notes": [1], "target": 1})
