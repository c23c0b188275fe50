"""docs/kinds.md stays true: a section for every built-in kind, and each example level with the
solution it gives is what the kind's default heuristic stores (and verify accepts)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from packsolve.api import Budget, Status
from packsolve.levels import make_level
from packsolve.puzzles import KINDS, get_kind

KINDS_MD = (Path(__file__).resolve().parents[2] / "docs" / "kinds.md").read_text()
BUILT_IN = [source.name for source in KINDS.sources() if source.origin == "built-in"]


def sections() -> dict[str, str]:
    """Return each '## `kind` — ...' section's text by kind name."""
    parts = re.split(r"^## `([a-z_]+)`.*$", KINDS_MD, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_every_built_in_kind_has_a_section_and_no_section_names_another_kind():
    assert sorted(sections()) == sorted(BUILT_IN)


@pytest.mark.parametrize("name", BUILT_IN)
def test_the_example_is_a_level_whose_default_heuristic_stores_the_solution_shown(name):
    level_text, solution_text = re.findall(r"```json\n(.*?)```", sections()[name], re.S)
    level = make_level(f"docs/kinds.md:{name}", json.loads(level_text))
    assert level.valid, level.error
    kind = get_kind(name)
    value = kind.parse(level.data)
    out = kind.solvers[kind.default](value, Budget())
    assert out.status is Status.SOLVED
    assert out.solution == json.loads(solution_text)
    assert kind.verify(value, json.loads(solution_text)) is None
