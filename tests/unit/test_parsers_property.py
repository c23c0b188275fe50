"""Property tests (Hypothesis) for every kind's parser, through levels.make_level and read_text.

Whatever JSON a level file holds, reading it never raises: the level is valid
(and its canonical form reads back to the same identity) or invalid with a message.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from packsolve.levels import Level, make_level, read_text
from packsolve.puzzles import KINDS
from tests.support.malformed import VALID

PROPERTY = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**6), max_value=10**6)
    | st.sampled_from([0, 1, 2, 3, 9, 81, -1, 2**31, 2**63, 10**30])
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
    | st.sampled_from(["S..", "#.#", ".", "", "0", "X", "O", "1" * 81, "." * 81, "x" * 82])
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=30,
)


def kind_fields(kind: str) -> list[str]:
    sample = VALID.get(kind, {})
    return [k for k in sample if k != "kind"] + ["start", "size", "rows", "cols", "closed", "k", "id"]


def assert_well_formed(level: Level, name: str) -> None:
    assert isinstance(level, Level) and level.name == name
    if level.valid:
        assert len(level.hash) == 64 and level.data.get("kind") == level.kind
        again = make_level(name, json.loads(json.dumps(dict(level.data))))
        assert again.valid and again.hash == level.hash, "canonical form must read back to the same level"
    else:
        assert isinstance(level.error, str) and level.error.startswith(f"{name}: ") and len(level.error) > 3


@pytest.mark.parametrize("kind", list(KINDS))
@PROPERTY
@given(data=st.data())
def test_any_fields_of_any_json_type_give_a_valid_or_invalid_level_never_an_exception(kind, data):
    fields = data.draw(st.dictionaries(st.sampled_from(kind_fields(kind)), json_values, max_size=5))
    assert_well_formed(make_level("p.json", {**fields, "kind": kind}), "p.json")


@pytest.mark.parametrize("kind", [k for k in KINDS if k in VALID])
@PROPERTY
@given(data=st.data())
def test_a_valid_level_with_one_field_replaced_or_removed_never_raises(kind, data):
    level: dict[str, Any] = dict(VALID[kind])
    field = data.draw(st.sampled_from([k for k in level if k != "kind"]))
    if data.draw(st.booleans()):
        level[field] = data.draw(json_values)
    else:
        del level[field]
    assert_well_formed(make_level("p.json", level), "p.json")


@pytest.mark.parametrize("kind", [k for k in KINDS if k in VALID])
@PROPERTY
@given(data=st.data())
def test_a_valid_level_with_a_list_element_perturbed_never_raises(kind, data):
    level: dict[str, Any] = json.loads(json.dumps(VALID[kind]))
    lists = [k for k, v in level.items() if isinstance(v, list) and v]
    if not lists:
        return
    field = data.draw(st.sampled_from(lists))
    i = data.draw(st.integers(0, len(level[field]) - 1))
    level[field][i] = data.draw(json_values)
    assert_well_formed(make_level("p.json", level), "p.json")


def native_suffixes() -> list[str]:
    return sorted({suffix for k in KINDS.values() for suffix in k.formats}) + [".json", ".jsonl"]


@pytest.mark.parametrize("suffix", native_suffixes())
@PROPERTY
@given(text=st.text(alphabet=st.sampled_from(list('0123456789.#SXO x\n\t{}[]",:-')), max_size=300))
def test_any_text_in_any_level_format_reads_as_levels_never_an_exception(suffix, text):
    levels = list(read_text("f" + suffix, text, suffix))
    for level in levels:
        assert isinstance(level, Level)
        assert level.valid or level.error
