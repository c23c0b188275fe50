"""Planning a run: the --heuristic choice (one name for the kinds that have it, or one per kind)."""

from __future__ import annotations

import pytest

from packsolve.errors import OptionError, PlanError
from packsolve.levels import make_level
from packsolve.planning import HeuristicChoice, plan_levels

SUDOKU = make_level("s", {"kind": "sudoku", "grid": "8" + "." * 80})
SLIDING = make_level("t", {"kind": "sliding", "tiles": [[1, 3], [0, 2]]})
BROKEN = make_level("b", {"kind": "sliding", "tiles": [[1, 1]]})


@pytest.mark.parametrize(
    ("text", "common", "per_kind", "spelled"),
    [
        (None, None, (), "default"),
        ("default", None, (), "default"),
        ("dlx", "dlx", (), "dlx"),
        (
            " sudoku = dlx , sliding=idastar ",
            None,
            (("sliding", "idastar"), ("sudoku", "dlx")),
            "sliding=idastar,sudoku=dlx",
        ),
        ("astar,sudoku=dlx", "astar", (("sudoku", "dlx"),), "astar,sudoku=dlx"),
    ],
)
def test_a_heuristic_choice_reads_a_common_name_and_names_per_kind(text, common, per_kind, spelled):
    choice = HeuristicChoice.parse(text)
    assert (choice.common, choice.per_kind, str(choice)) == (common, per_kind, spelled)
    assert HeuristicChoice.parse(str(choice)) == choice


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("=dlx", "KIND=HEURISTIC"),
        ("sudoku=", "KIND=HEURISTIC"),
        ("dlx,astar", "two heuristics for every kind"),
        ("sudoku=dlx,sudoku=plain", "two heuristics for sudoku"),
    ],
)
def test_a_heuristic_choice_that_cannot_be_read_names_the_option(text, says):
    with pytest.raises(OptionError, match="--heuristic") as caught:
        HeuristicChoice.parse(text)
    assert says in str(caught.value) and caught.value.exit_code == 2


def test_a_common_heuristic_applies_to_the_kinds_that_have_it_and_the_others_keep_their_default():
    plan = plan_levels([SUDOKU, SLIDING, BROKEN], "dlx")
    assert [p.heuristic for p in plan.attempts] == ["dlx", "pdb", "dlx"]
    assert plan.notes == ["sliding has no heuristic 'dlx': its default 'pdb' runs"]


def test_heuristics_named_per_kind_apply_to_their_kind_only():
    plan = plan_levels([SUDOKU, SLIDING], "sudoku=plain,sliding=idastar")
    assert [p.heuristic for p in plan.attempts] == ["plain", "idastar"]
    assert plan.notes == []


@pytest.mark.parametrize(
    ("text", "says"), [("sudoku=nope", "has no heuristic 'nope'"), ("nokind=plain", "unknown kind 'nokind'")]
)
def test_a_heuristic_named_for_a_kind_must_exist_even_if_the_pack_has_none_of_that_kind(text, says):
    with pytest.raises(OptionError, match=says):
        plan_levels([SLIDING], text)


def test_a_common_heuristic_that_no_level_of_the_pack_has_is_refused():
    with pytest.raises(PlanError, match="no level in the pack has a heuristic 'magic'"):
        plan_levels([SUDOKU, SLIDING], "magic")
