"""A .slide line's id names its level and its stated optimal length checks optimal answers.

Also: the files of a plug-in kind that failed to load are reported with the plug-in's failure,
not only as "not a level file".
"""

from __future__ import annotations

import json

import pytest

from packsolve.api import Budget, Status
from packsolve.errors import PlanError
from packsolve.levels import read_levels
from packsolve.planning import check_paths
from packsolve.puzzles import get_kind
from tests.support.inprocess import invoke
from tests.support.plugins import make_distribution

SLIDING = get_kind("sliding")
# A 3x3 board three moves from the goal (breadth-first search, the `plain` heuristic, agrees below).
THREE = "1 2 5 3 4 0 6 7 8"
THREE_ROWS = [[1, 2, 5], [3, 4, 0], [6, 7, 8]]


def _pack(tmp_path, text: str):
    path = tmp_path / "korf.slide"
    path.write_text(text)
    return path


def test_a_lines_id_is_its_levels_name_and_lines_without_one_keep_their_line_number(tmp_path):
    path = _pack(tmp_path, f"7 3 {THREE}\n# a comment\n{THREE.replace('1 2', '2 1')}\nx9 {THREE}\n")
    names = [level.name for level in read_levels([path])]
    assert names == [f"{path}:7", f"{path}:3", f"{path}:x9"]


def test_an_id_met_twice_in_one_file_names_only_the_first_line_so_each_name_finds_one_level(tmp_path):
    path = _pack(tmp_path, f"7 3 {THREE}\n7 {THREE.replace('1 2', '2 1')}\n")
    assert [level.name for level in read_levels([path])] == [f"{path}:7", f"{path}:2"]


def test_the_stated_length_is_part_of_the_level_and_the_id_is_not(tmp_path):
    path = _pack(tmp_path, f"a 3 {THREE}\nb 3 {THREE}\nc 5 {THREE}\nd {THREE}\n")
    levels = list(read_levels([path]))
    assert [dict(level.data) for level in levels[:1]] == [
        {"tiles": THREE_ROWS, "optimal": 3, "kind": "sliding"}
    ]
    assert levels[0].hash == levels[1].hash  # the same board and length under two ids: one level
    assert len({levels[0].hash, levels[2].hash, levels[3].hash}) == 3  # another length, or none: not


@pytest.mark.parametrize("bad", ["-1", "x", "9" * 40])
def test_a_stated_length_that_is_no_small_whole_number_makes_that_line_invalid_in_one_line(tmp_path, bad):
    path = _pack(tmp_path, f"7 {bad} {THREE}\n8 3 {THREE}\n")
    first, second = read_levels([path])
    assert not first.valid and "optimal length" in first.error and "\n" not in first.error
    assert second.valid


def test_optimal_heuristics_answer_wrong_when_the_level_states_another_length():
    for heuristic in ("plain", "astar", "idastar", "linear-conflict"):
        right = SLIDING.solvers[heuristic](SLIDING.parse({"tiles": THREE_ROWS, "optimal": 3}), Budget())
        assert (right.status, len(right.solution)) == (Status.SOLVED, 3), heuristic
        wrong = SLIDING.solvers[heuristic](SLIDING.parse({"tiles": THREE_ROWS, "optimal": 5}), Budget())
        assert wrong.status is Status.WRONG and wrong.solution is None, heuristic
        assert wrong.message == "an optimal search found 3 moves, the level states 5"


def test_verify_rejects_an_answer_shorter_than_the_stated_optimum_and_accepts_a_longer_one():
    board = SLIDING.parse({"tiles": THREE_ROWS, "optimal": 3})
    moves = SLIDING.solvers["plain"](board, Budget()).solution
    assert SLIDING.verify(board, moves) is None
    claims_five = SLIDING.parse({"tiles": THREE_ROWS, "optimal": 5})
    assert "3 moves, fewer than the optimal length the level states (5)" in SLIDING.verify(claims_five, moves)
    claims_two = SLIDING.parse({"tiles": THREE_ROWS, "optimal": 2})
    assert SLIDING.verify(claims_two, moves) is None  # a non-optimal heuristic may answer longer


def test_a_solved_pack_names_levels_by_id_and_stores_a_mismatched_optimum_as_wrong(tmp_path):
    path = _pack(tmp_path, f"k1 3 {THREE}\nk2 5 {THREE}\n")
    env = {"PACKSOLVE_DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite'}"}
    res = invoke("solve", str(path), "--heuristic", "idastar", "-q", env=env)
    assert res.returncode == 0, res.stderr
    records = {
        r["level"]: r for r in map(json.loads, invoke("export", "latest", env=env).stdout.splitlines())
    }
    assert set(records) == {f"{path}:k1", f"{path}:k2"}
    assert (records[f"{path}:k1"]["status"], records[f"{path}:k1"]["length"]) == ("solved", 3)
    assert records[f"{path}:k2"]["status"] == "wrong"
    assert "the level states 5" in records[f"{path}:k2"]["message"]


def test_a_broken_plugins_files_are_skipped_with_the_plugins_failure_not_only_as_no_level_file(
    tmp_path, install
):
    install(
        make_distribution(
            tmp_path / "site",
            "packsolve-glow",
            "0.4",
            {"glow": "glow_kind:KIND"},
            {"glow_kind": "raise RuntimeError('boom at import')\n"},
        )
    )
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "a.glow").write_text("..#\n")
    (pack / "b.sdk").write_text("." * 81 + "\n")
    skipped: list = []
    levels = list(read_levels([pack], skipped=skipped))
    assert [level.name for level in levels] == [str(pack / "b.sdk")], levels
    [entry] = skipped
    assert entry.reason.startswith("not a level file (.glow); plug-in packsolve-glow 0.4 could not load")
    assert entry.reason.endswith("RuntimeError: boom at import")
    with pytest.raises(PlanError, match="is not a level file: .*plug-in packsolve-glow 0.4 could not load"):
        check_paths([pack / "a.glow"])
