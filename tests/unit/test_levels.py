"""Reading levels: formats, names (path and :LINE), identity by canonical hash, and invalid input."""

from __future__ import annotations

import json
from pathlib import Path

from packsolve.levels import level_hash, make_level, read_levels

SAMPLE_MAP = {
    "kind": "onestroke",
    "map": ["111111", "101101", "111111", "101101", "111111", "000000"],
    "start": 14,
}
SAMPLE_GRID = ["......", ".#..#.", "....S.", ".#..#.", "......", "######"]


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_seed_map_form_and_grid_form_are_one_level():
    a = make_level("a", SAMPLE_MAP)
    b = make_level("b", {"kind": "onestroke", "grid": SAMPLE_GRID})
    assert a.valid and b.valid
    assert a.hash == b.hash == level_hash(a.data)
    assert a.data == {"kind": "onestroke", "grid": SAMPLE_GRID}
    assert a.size == 26


def test_single_json_file_is_named_by_its_path(tmp_path):
    f = write(tmp_path / "one.json", json.dumps(SAMPLE_MAP))
    [level] = read_levels([f])
    assert level.name == str(f) and level.valid


def test_json_list_names_levels_by_line(tmp_path):
    text = (
        '[\n  {"kind": "onestroke", "grid": ["S.."]},\n\n  {"kind": "onestroke", "grid": ["S.", ".."]}\n]\n'
    )
    f = write(tmp_path / "list.json", text)
    levels = list(read_levels([f]))
    assert [lv.name for lv in levels] == [f"{f}:2", f"{f}:4"]
    assert all(lv.valid for lv in levels)


def test_jsonl_skips_blank_lines_and_keeps_bad_lines_as_invalid(tmp_path):
    f = write(tmp_path / "p.jsonl", '{"kind":"onestroke","grid":["S.."]}\n\n{"kind": oops}\n')
    good, bad = read_levels([f])
    assert good.valid and good.name == f"{f}:1"
    assert not bad.valid and bad.name == f"{f}:3"
    assert "bad JSON at column" in bad.error and str(f) in bad.error


def test_stroke_file_holds_several_grids_separated_by_blank_lines(tmp_path):
    f = write(tmp_path / "p.stroke", "S..\n.#.\n...\n\n\n..S\n...\n")
    a, b = read_levels([f])
    assert (a.name, b.name) == (f"{f}:1", f"{f}:6")
    assert a.data["grid"] == ["S..", ".#.", "..."]


def test_stroke_errors_point_at_the_line(tmp_path):
    f = write(tmp_path / "bad.stroke", "S..\n.x.\n\n...\n..\n\nS.\n.S\n")
    levels = list(read_levels([f]))
    assert [lv.valid for lv in levels] == [False, False, False]
    assert "line 2" in levels[0].error and "unknown character 'x'" in levels[0].error
    assert "line 5" in levels[1].error and "ragged" in levels[1].error
    assert "second start" in levels[2].error


def test_directory_is_read_recursively_in_sorted_order_ignoring_other_files(tmp_path):
    write(tmp_path / "b" / "z.json", '{"kind":"onestroke","grid":["S."]}')
    write(tmp_path / "a.json", '{"kind":"onestroke","grid":["S.."]}')
    write(tmp_path / "b" / "a.stroke", "S...\n")
    write(tmp_path / "notes.md", "not a level")
    names = [Path(lv.name).relative_to(tmp_path).as_posix() for lv in read_levels([tmp_path])]
    assert names == ["a.json", "b/a.stroke", "b/z.json"]


def test_bad_inputs_become_invalid_levels_with_actionable_messages(tmp_path):
    cases = {
        "trunc.json": ('{"kind": "onestroke", "grid": [', "bad JSON"),
        "nokind.json": ('{"grid": ["S."]}', "no 'kind' field"),
        "unknown.json": ('{"kind": "chess"}', "unknown kind 'chess'"),
        "notobj.json": ("[1, 2]", "must be a JSON object"),
        "empty.json": ("[]", "empty list"),
        "nostart.json": ('{"kind": "onestroke", "grid": ["..", ".."]}', "no start"),
        "twostarts.json": ('{"kind": "onestroke", "grid": ["S.", ".S"]}', "second start"),
        "ragged.json": ('{"kind": "onestroke", "grid": ["S..", ".."]}', "ragged"),
        "badstart.json": ('{"kind": "onestroke", "map": ["11"], "start": 5}', "'start' must be"),
        "deep.json": ("[" * 100000 + "]" * 100000, "nested too deeply"),
    }
    for name, (text, _expected) in cases.items():
        write(tmp_path / name, text)
    levels = {Path(lv.name.split(":")[0]).name: lv for lv in read_levels([tmp_path])}
    for name, (_, expected) in cases.items():
        lv = levels[name]
        assert not lv.valid, name
        assert expected in lv.error, (name, lv.error)
        assert name in lv.error  # the message names the file


def test_non_utf8_and_oversized_files_are_invalid_not_crashes(tmp_path):
    write(tmp_path / "ok.json", '{"kind":"onestroke","grid":["S."]}')
    (tmp_path / "latin1.json").write_bytes(b'{"kind": "onestroke", "grid": ["S\xe9"]}')
    (tmp_path / "big.json").write_text(" " * 5000 + '{"kind":"onestroke","grid":["S."]}')
    levels = {Path(lv.name).name: lv for lv in read_levels([tmp_path], max_bytes=4096)}
    assert levels["ok.json"].valid
    assert "not UTF-8" in levels["latin1.json"].error
    assert "cap" in levels["big.json"].error


def test_missing_path_is_an_invalid_level(tmp_path):
    [lv] = read_levels([tmp_path / "nope.json"])
    assert not lv.valid and "no such file" in lv.error


def test_the_kind_given_is_the_kind_of_levels_that_name_none_and_never_overrides_one_named():
    named = make_level("x", {"kind": "onestroke", "grid": ["S."]}, kind="sudoku")
    assert named.valid and named.kind == "onestroke"  # the planner leaves it out of a sudoku run
    bare = make_level("y", {"grid": "." * 81}, kind="sudoku")
    assert bare.valid and bare.kind == "sudoku"
    broken = make_level("z", {"kind": "sliding", "tiles": "no"}, kind="sudoku")
    assert not broken.valid and broken.kind == "sliding"


def test_a_directory_passes_over_hidden_files_and_lists_the_files_it_skips_with_why(tmp_path):
    write(tmp_path / "a.json", '{"kind":"onestroke","grid":["S."]}')
    write(tmp_path / "README.md", "# about")
    write(tmp_path / "empty.jsonl", "  \n")
    write(tmp_path / ".hidden.json", "{}")
    (tmp_path / ".git").mkdir()
    write(tmp_path / ".git" / "x.json", "{}")
    skipped: list = []
    levels = list(read_levels([tmp_path], skipped=skipped))
    assert [Path(lv.name).name for lv in levels] == ["a.json"]
    assert [(Path(s.path).name, s.reason) for s in skipped] == [
        ("README.md", "not a level file (.md)"),
        ("empty.jsonl", "empty"),
    ]


def test_levels_of_a_one_line_json_list_get_distinct_names(tmp_path):
    f = write(
        tmp_path / "l.json",
        json.dumps([{"kind": "onestroke", "grid": ["S."]}, {"kind": "onestroke", "grid": ["S.."]}]),
    )
    names = [lv.name for lv in read_levels([f])]
    assert names == [f"{f}:1[0]", f"{f}:1[1]"]
