"""Planning a run: the --heuristic choice (one name for the kinds that have it, or one per kind)."""

from __future__ import annotations

import pytest

from packsolve.errors import OptionError, PlanError
from packsolve.execution import Limits
from packsolve.levels import make_level
from packsolve.planning import plan_levels
from packsolve.request import HeuristicChoice

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


def test_several_heuristics_give_each_level_one_attempt_per_heuristic_next_to_each_other():
    plan = plan_levels([SUDOKU, SLIDING, BROKEN], "plain,dlx")
    assert [(p.level.name, p.heuristic) for p in plan.attempts] == [
        ("s", "plain"),
        ("s", "dlx"),
        ("t", "plain"),
        ("t", "pdb"),
        ("b", "plain"),  # invalid: it runs nothing, once
    ]
    assert [p.seq for p in plan.attempts] == [0, 1, 2, 3, 4]
    assert plan.notes == ["sliding has no heuristic 'dlx': its default 'pdb' runs"]
    assert [(p.level_hash, p.spec.heuristic) for p in plan.pending(Limits())] == [
        (SUDOKU.hash, "plain"),
        (SUDOKU.hash, "dlx"),
        (SLIDING.hash, "plain"),
        (SLIDING.hash, "pdb"),
    ]


def test_heuristics_per_kind_apply_to_their_kind_and_the_others_keep_their_default():
    plan = plan_levels([SUDOKU, SLIDING], "sudoku=propagate+dlx")
    assert [p.heuristic for p in plan.attempts] == ["propagate", "dlx", "pdb"]
    assert plan.notes == []


def test_common_names_a_kind_lacks_run_its_default_once_with_a_note_each():
    plan = plan_levels([SUDOKU, SLIDING], "astar,idastar")
    assert [p.heuristic for p in plan.attempts] == ["propagate", "astar", "idastar"]
    assert plan.notes == [
        "sudoku has no heuristic 'astar': its default 'propagate' runs",
        "sudoku has no heuristic 'idastar': its default 'propagate' runs",
    ]


@pytest.mark.parametrize(
    ("text", "error", "says"),
    [
        ("dlx,magic", PlanError, "no level in the pack has a heuristic 'magic'"),
        ("sudoku=dlx+nope", OptionError, "has no heuristic 'nope'"),
        ("dlx,dlx", OptionError, "names 'dlx' twice"),
    ],
)
def test_a_matrix_with_a_heuristic_nothing_in_the_pack_has_is_refused(text, error, says):
    with pytest.raises(error, match=says):
        plan_levels([SUDOKU, SLIDING], text)
