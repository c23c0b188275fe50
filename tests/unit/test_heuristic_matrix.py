"""--heuristic naming several heuristics: a,b,c for every kind, KIND=A+B for one kind (issue 36 item 2)."""

from __future__ import annotations

import pytest

from packsolve.errors import OptionError
from packsolve.request import HeuristicChoice, HeuristicMatrix


@pytest.mark.parametrize(
    ("text", "sudoku", "sliding", "spelled"),
    [
        ("dlx,plain,propagate", ("dlx", "plain", "propagate"), ("dlx", "plain", "propagate"), None),
        ("sudoku=propagate+dlx", ("propagate", "dlx"), (None,), None),
        (
            "astar, idastar, sudoku = propagate + dlx",
            ("propagate", "dlx"),
            ("astar", "idastar"),
            "astar,idastar,sudoku=propagate+dlx",
        ),
        (
            "sudoku=dlx+plain,sliding=idastar+pdb",
            ("dlx", "plain"),
            ("idastar", "pdb"),
            "sliding=idastar+pdb,sudoku=dlx+plain",
        ),
        ("default,dlx", (None, "dlx"), (None, "dlx"), None),
    ],
)
def test_several_heuristics_are_read_per_kind_in_the_order_given(text, sudoku, sliding, spelled):
    matrix = HeuristicMatrix.parse(text)
    assert (matrix.names_for("sudoku"), matrix.names_for("sliding")) == (sudoku, sliding)
    assert matrix.is_matrix and matrix.single() is None
    assert str(matrix) == (spelled or text)
    assert HeuristicMatrix.parse(str(matrix)) == matrix


@pytest.mark.parametrize(
    "text", [None, "", "default", "dlx", "sudoku=dlx,sliding=idastar", "astar,sudoku=dlx", " sudoku = dlx "]
)
def test_one_heuristic_per_kind_is_the_choice_of_today(text):
    matrix = HeuristicMatrix.parse(text)
    assert not matrix.is_matrix
    assert matrix.single() == HeuristicChoice.parse(text)
    for kind in ("sudoku", "sliding", "onestroke"):
        assert matrix.names_for(kind) == (HeuristicChoice.parse(text).name_for(kind),)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("dlx,plain,dlx", "names 'dlx' twice"),
        ("sudoku=dlx+dlx", "'sudoku=dlx+dlx' names 'dlx' twice"),
        ("default,dlx,default", "names 'default' twice"),
        ("sudoku=dlx,sudoku=plain", "sudoku is named twice: name its heuristics once, sudoku=dlx+plain"),
        ("sudoku=dlx+", "write KIND=HEURISTIC or KIND=H1+H2"),
        ("sudoku=+dlx", "write KIND=HEURISTIC or KIND=H1+H2"),
        ("=dlx", "write KIND=HEURISTIC"),
        ("dlx+plain", "for every kind write dlx,plain"),
    ],
)
def test_a_matrix_that_cannot_be_read_is_refused_in_one_line_naming_the_option(text, says):
    with pytest.raises(OptionError, match="--heuristic") as caught:
        HeuristicMatrix.parse(text)
    message = str(caught.value)
    assert says in message and "\n" not in message and caught.value.exit_code == 2
