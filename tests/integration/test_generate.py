"""`packsolve generate` (distinct levels, the same for a seed, --size explained per kind) and `kinds`."""

from __future__ import annotations

import json
import re

import pytest

from packsolve.levels import read_levels
from packsolve.puzzles import KINDS
from tests.support.inprocess import invoke


@pytest.mark.parametrize(("kind", "size"), [("sliding", "2"), ("knights_tour", "5"), ("onestroke", "2x2")])
def test_generate_never_emits_a_level_twice_and_says_when_the_size_has_fewer(tmp_path, kind, size):
    out = tmp_path / "g.jsonl"
    res = invoke("generate", kind, "--size", size, "--count", "40", "-o", str(out))
    assert res.returncode == 0, res.stderr
    levels = list(read_levels([out]))
    assert all(lv.valid for lv in levels)
    assert len({lv.hash for lv in levels}) == len(levels) < 40
    assert f"only {len(levels)} distinct {kind} level(s) of size {size} found (asked for 40)" in res.stderr


@pytest.mark.parametrize("kind", ["tictactoe", "coins", "floodfill", "euler", "sliding"])
def test_generate_gives_count_distinct_levels_and_the_same_ones_for_a_seed(kind):
    size = {"tictactoe": "3x3", "coins": "3:5", "floodfill": "2", "euler": "4x10", "sliding": "3"}[kind]
    first = invoke("generate", kind, "--size", size, "--count", "30", "--seed", "4")
    again = invoke("generate", kind, "--size", size, "--count", "30", "--seed", "4")
    assert first.returncode == 0 and first.stdout == again.stdout
    lines = first.stdout.splitlines()
    assert len(lines) == len(set(lines)) == 30 and all(json.loads(x)["kind"] == kind for x in lines)


def test_generate_help_explains_size_for_every_kind_and_a_bad_size_names_the_form():
    res = invoke("generate", "--help")
    assert all(f"{kind}:" in res.stdout for kind in KINDS if KINDS[kind].generate is not None)
    res = invoke("generate", "sliding", "--size", "7")
    assert res.returncode == 2 and "N or NxN, N from 2 to 5" in res.stderr


def test_kinds_never_cuts_a_heuristic_name_on_an_80_column_terminal():
    res = invoke("kinds", env={"COLUMNS": "80"})
    assert res.returncode == 0
    words = set(re.findall(r"[\w-]+", res.stdout))
    for name, kind in KINDS.items():
        assert set(kind.solvers) <= words, (name, set(kind.solvers) - words)
        assert f"{kind.default} (default)" in res.stdout
    assert "…" not in res.stdout and all(len(line) <= 80 for line in res.stdout.splitlines())
