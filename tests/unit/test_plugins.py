"""Plug-in kinds through the entry-point group packsolve.kinds: found, described, kept apart when broken."""

from __future__ import annotations

import json

import pytest

from packsolve.api import Budget
from packsolve.errors import UnknownKind
from packsolve.puzzles import KINDS, get_kind, kind_provenance, offered
from tests.support.plugins import flip_distribution, make_distribution
from tests.support.services import run_cli


def sources_by_name():
    return {s.name: s for s in KINDS.sources()}


def test_a_plugin_kind_from_an_installed_distribution_is_found_with_its_distribution_and_version(
    tmp_path, install
):
    install(flip_distribution(tmp_path / "site", "1.2"))
    kind = get_kind("flip")
    assert kind.solvers["each"](kind.parse({"coins": "HTT"}), Budget()).solution == [1, 2]
    assert "flip" in KINDS and "flip" in list(KINDS)
    source = sources_by_name()["flip"]
    assert (source.origin, source.distribution, source.version, source.error) == (
        "plug-in",
        "packsolve-flip",
        "1.2",
        None,
    )
    assert source.describe() == "packsolve-flip 1.2"
    assert kind_provenance({"flip", "sudoku"}) == {
        "flip": {"source": "packsolve-flip", "version": "1.2", "origin": "plug-in"},
        "sudoku": {"source": "packsolve", "version": "0.1.0", "origin": "built-in"},
    }
    assert offered()["flip"]["version"] == "1.2"


def test_a_plugin_that_fails_to_import_is_reported_by_name_and_the_other_kinds_still_work(tmp_path, install):
    root = make_distribution(
        tmp_path / "site",
        "packsolve-broken",
        "0.3",
        {"broken": "broken_kind:KIND"},
        {"broken_kind": "import not_a_module_anyone_has\n"},
    )
    install(flip_distribution(root, "1.0"))
    assert "broken" not in KINDS and "broken" not in list(KINDS)
    error = sources_by_name()["broken"].error
    assert "packsolve-broken 0.3" in error and "ModuleNotFoundError" in error
    with pytest.raises(UnknownKind, match="kind 'broken' cannot be used: plug-in packsolve-broken 0.3"):
        get_kind("broken")
    assert get_kind("flip").name == "flip" and get_kind("sudoku").name == "sudoku"


def test_a_plugin_that_exits_at_import_is_reported_and_packsolve_goes_on(tmp_path, install):
    install(
        make_distribution(
            tmp_path / "site",
            "packsolve-quitter",
            "1.0",
            {"quitter": "quitter_kind:KIND"},
            {"quitter_kind": "import sys\nsys.exit(3)\n"},
        )
    )
    assert "SystemExit: 3" in sources_by_name()["quitter"].error and "sudoku" in KINDS


def test_a_plugin_whose_object_is_not_a_puzzle_kind_is_reported(tmp_path, install):
    install(
        make_distribution(
            tmp_path / "site",
            "packsolve-odd",
            "1.0",
            {"odd": "odd_kind:KIND"},
            {"odd_kind": "KIND = {'name': 'odd'}\n"},
        )
    )
    assert "is a dict, not a packsolve.api.PuzzleKind" in sources_by_name()["odd"].error
    assert "odd" not in KINDS


def test_a_plugin_cannot_replace_a_built_in_kind(tmp_path, install):
    install(flip_distribution(tmp_path / "site", "1.0", name="sudoku", dist="packsolve-evil"))
    assert get_kind("sudoku").description.startswith("9×9 sudoku")
    taken = [s for s in KINDS.sources() if s.name == "sudoku" and s.error]
    assert len(taken) == 1 and "a built-in name that cannot be replaced" in taken[0].error
    assert taken[0].distribution == "packsolve-evil"


def test_two_distributions_declaring_one_kind_name_keep_the_first_and_report_the_other(tmp_path, install):
    root = flip_distribution(tmp_path / "site", "1.0", dist="packsolve-flip")
    make_distribution(
        root, "packsolve-flop", "2.0", {"flip": "flop_kind:KIND"}, {"flop_kind": "KIND = None\n"}
    )
    install(root)
    assert get_kind("flip").description.endswith("(version 1.0)")
    [rejected] = [s for s in KINDS.sources() if s.name == "flip" and s.error]
    assert rejected.distribution == "packsolve-flop" and rejected.version == "2.0"
    assert "already declared by packsolve-flip 1.0: uninstall one of them" in rejected.error


def test_a_plugin_whose_kind_is_named_otherwise_than_its_entry_point_is_reported(tmp_path, install):
    root = make_distribution(
        tmp_path / "site",
        "packsolve-misnamed",
        "1.0",
        {"other": "mis_kind:KIND"},
        {"mis_kind": "from flip_kind import KIND\n"},
    )
    install(flip_distribution(root, "1.0"))
    assert "its entry point is named 'other'" in sources_by_name()["other"].error


def test_kinds_and_help_work_with_a_broken_plugin_installed_and_list_it_with_the_reason(tmp_path):
    root = make_distribution(
        tmp_path / "site",
        "packsolve-broken",
        "0.3",
        {"broken": "broken_kind:KIND"},
        {"broken_kind": "raise RuntimeError('boom at import')\n"},
    )
    flip_distribution(root, "2.0")
    env = {"PYTHONPATH": str(root)}
    assert run_cli("--help", env=env).returncode == 0
    res = run_cli("kinds", "--format", "json", env=env)
    assert res.returncode == 0, res.stderr
    rows = {r["kind"]: r for r in json.loads(res.stdout)}
    assert rows["broken"]["error"].endswith("RuntimeError: boom at import")
    assert rows["flip"]["source"] == "packsolve-flip 2.0" and rows["flip"]["heuristics"] == ["each"]
    assert rows["sudoku"]["source"] == "built-in" and rows["sudoku"]["error"] is None
    table = run_cli("kinds", env={**env, "COLUMNS": "200"})
    assert "packsolve-flip 2.0" in table.stdout and "cannot be used" in table.stdout


def test_a_pack_of_a_plugin_kind_solves_locally_with_every_answer_verified(tmp_path):
    root = flip_distribution(tmp_path / "site", "1.0")
    pack = tmp_path / "pack.jsonl"
    pack.write_text('{"kind": "flip", "coins": "HTTH"}\n{"kind": "flip", "coins": "TTT"}\n{"kind": "flip"}\n')
    env = {"PYTHONPATH": str(root), "PACKSOLVE_DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite'}"}
    res = run_cli("solve", str(pack), "-q", "--format", "json", env=env)
    assert res.returncode == 0, res.stderr
    summary = json.loads(res.stdout)
    assert summary["counts"] == {"solved": 2, "invalid": 1}
    records = [json.loads(line) for line in run_cli("export", "latest", env=env).stdout.splitlines()]
    assert sorted(r["solution"] for r in records if r["solution"]) == [[0, 1, 2], [1, 2]]
