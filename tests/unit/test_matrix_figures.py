"""The virtual best solver and the best heuristic per level (figures.matrix)."""

from __future__ import annotations

import pytest

from packsolve.figures.matrix import Cell, best_of, column_totals, virtual_best


def solved(wall: float, nodes: int = 10) -> Cell:
    return Cell("solved", wall, nodes, wall)


def timeout(limit: float = 1.0) -> Cell:
    return Cell("timeout", limit, 99, 2 * limit)


def test_the_best_of_a_level_is_the_fastest_decided_cell_ties_by_nodes_then_column():
    assert best_of([timeout(), solved(0.5), solved(0.2)]) == 2
    assert best_of([solved(0.2, nodes=9), solved(0.2, nodes=5)]) == 1
    assert best_of([solved(0.2), solved(0.2)]) == 0
    assert best_of([timeout(), None, Cell("no_solution", 0.3, 1, 0.3)]) == 2
    # A timeout is never the best, however short its wall time.
    assert best_of([timeout(0.01), timeout()]) is None


def test_the_virtual_best_takes_each_levels_best_and_is_set_against_the_best_single_column():
    rows = [
        [solved(1.0), solved(3.0), timeout()],
        [timeout(), solved(0.5), solved(0.25)],
        [solved(0.1), timeout(), timeout()],
        [solved(9.0), None, solved(1.0)],  # not every column ran it: left out of every total
    ]
    vbs = virtual_best(rows, 3)
    assert (vbs.levels, vbs.decided) == (3, 3)
    assert vbs.par2_s == pytest.approx(1.0 + 0.25 + 0.1)
    # PAR-2: column 0 = 1 + 2 + 0.1, column 1 = 3 + 0.5 + 2, column 2 = 2 + 0.25 + 2.
    assert (vbs.single, vbs.single_decided, vbs.single_par2_s) == (0, 2, pytest.approx(3.1))
    assert vbs.saves_s == pytest.approx(3.1 - 1.35)
    assert vbs.saves_pct == pytest.approx(100 * (3.1 - 1.35) / 3.1)
    totals = column_totals(rows, 3)
    assert [(t.decided, t.best_on) for t in totals] == [(2, 2), (2, 0), (1, 1)]


def test_with_no_level_every_column_ran_there_is_no_best_single_column():
    vbs = virtual_best([[solved(1.0), None]], 2)
    assert (vbs.levels, vbs.single, vbs.saves_pct) == (0, None, None)


def test_a_matrix_runs_heuristics_take_the_place_the_text_gave_them_defaults_where_a_name_was_lacking():
    from packsolve.figures.matrix import _slots

    tried = {"sudoku": ["plain", "dlx", "propagate"], "sliding": ["plain", "pdb", "astar"]}
    assert _slots("plain,dlx,astar", tried) == {
        ("sudoku", "plain"): 0,
        ("sudoku", "dlx"): 1,
        ("sudoku", "propagate"): 2,  # its default, for astar it lacks
        ("sliding", "plain"): 0,
        ("sliding", "pdb"): 1,  # its default, for dlx
        ("sliding", "astar"): 2,
    }
    # Two names sudoku lacks: its default ran once, in the first of their places.
    assert _slots("astar,idastar", {"sudoku": ["propagate"]}) == {("sudoku", "propagate"): 0}
    per_kind = {"sudoku": ["dlx", "plain"], "sliding": ["pdb"]}
    assert _slots("sudoku=dlx+plain", per_kind) == {
        ("sudoku", "dlx"): 0,
        ("sudoku", "plain"): 1,
        ("sliding", "pdb"): 0,
    }
    # Heuristics the text cannot account for (a text that is no matrix of them): no places.
    assert _slots("dlx", {"sudoku": ["dlx", "plain"]}) is None


def test_a_scatter_of_two_columns_has_a_point_per_level_both_ran():
    from packsolve.errors import OptionError
    from packsolve.report.matrix import pair_scatter

    def cell(status, par2):
        return {"status": status, "wall_s": par2, "nodes": 1, "par2_s": par2}

    columns = [
        {"run": 1, "heuristic": h, "label": h, "decided": 0, "par2_s": 0.0, "best_on": 0} for h in "abc"
    ]
    rows = [
        {
            "level": "one",
            "level_hash": "h1",
            "kind": "k",
            "cells": [cell("solved", 1.0), None, cell("solved", 3.0)],
        },
        {
            "level": "two",
            "level_hash": "h2",
            "kind": "k",
            "cells": [cell("timeout", 4.0), cell("solved", 2.0), None],
        },
        {
            "level": "three",
            "level_hash": "h3",
            "kind": "k",
            "cells": [cell("solved", 0.5), None, cell("timeout", 4.0)],
        },
    ]
    data = {"columns": columns, "rows": rows, "virtual_best": {}}
    got = pair_scatter(data, "c,a")  # type: ignore[arg-type]
    assert (got["x_label"], got["y_label"]) == ("c", "a")
    assert [(p["level"], p["x"], p["y"], p["x_status"]) for p in got["points"]] == [
        ("one", 3.0, 1.0, "solved"),
        ("three", 4.0, 0.5, "timeout"),
    ]
    assert [p["level"] for p in pair_scatter(data, None)["points"]] == ["two"]  # type: ignore[arg-type]
    for bad in ("a", "a,a", "a,z", "a,b,c"):
        with pytest.raises(OptionError, match="--pair"):
            pair_scatter(data, bad)  # type: ignore[arg-type]
