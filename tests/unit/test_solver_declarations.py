"""Solver declarations in TOML: what a valid file gives, and one line saying the fix for each mistake."""

from __future__ import annotations

import pytest

from packsolve.errors import SolverFileError
from packsolve.external.declaration import ExternalSolver, heuristic_of, load_solvers
from packsolve.puzzles import get_kind
from tests.support.inprocess import invoke


def write(tmp_path, text, name="packsolve.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_the_issues_declaration_loads_with_its_defaults_and_its_directory(tmp_path):
    path = write(
        tmp_path,
        '[solvers.warnsdorff-cpp]\nkind = "knights_tour"\ncommand = ["./bin/knight", "{level}"]  # comment\n'
        'stdin = true\n\n[solvers.py]\nkind = "coins"\ncommand = ["python3", "solve.py"]\n',
    )
    solvers = load_solvers(path)
    assert solvers["warnsdorff-cpp"] == ExternalSolver(
        "warnsdorff-cpp", "knights_tour", ("./bin/knight", "{level}"), True, str(tmp_path.resolve())
    )
    assert solvers["py"].stdin is True and solvers["py"].command == ("python3", "solve.py")


def test_packsolve_toml_in_the_current_directory_is_read_by_default_and_its_absence_is_no_error(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    assert load_solvers(None) == {}
    write(tmp_path, "[tool.other]\nx = 1\n")  # a packsolve.toml without solvers is fine by default
    assert load_solvers(None) == {}
    write(tmp_path, '[solvers.a]\nkind = "coins"\ncommand = ["./a"]\nstdin = false\n')
    assert load_solvers(None)["a"].stdin is False


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[solvers.a\n", "not valid TOML: "),
        ("[other]\n", "declares no solver; write one as [solvers.NAME]"),
        ("solvers = 3\n", "'solvers' must be a table of [solvers.NAME] sections"),
        (
            '[solvers.a]\nkind = "coins"\ncommand = ["./a"]\nstdn = true\n',
            "unknown key 'stdn' (the keys are kind, command, stdin)",
        ),
        ('[solvers.a]\ncommand = ["./a"]\n', 'needs kind = "KIND"'),
        (
            '[solvers.a]\nkind = "coins"\ncommand = "./a {level}"\n',
            "command must be a non-empty list of strings",
        ),
        ('[solvers.a]\nkind = "coins"\ncommand = []\n', "command must be a non-empty list of strings"),
        (
            '[solvers.a]\nkind = "coins"\ncommand = ["./a"]\nstdin = "yes"\n',
            "stdin must be true or false, not 'yes'",
        ),
        ('[solvers.dp]\nkind = "coins"\ncommand = ["./a"]\n', "'dp' is a built-in heuristic of coins"),
        ('[solvers."a,b"]\nkind = "coins"\ncommand = ["./a"]\n', "is at most 64 letters, digits"),
        (f'[solvers.{"x" * 65}]\nkind = "coins"\ncommand = ["./a"]\n', "is at most 64 letters, digits"),
    ],
)
def test_each_mistake_in_a_declaration_file_is_one_line_naming_the_fix(tmp_path, text, message):
    path = write(tmp_path, text, "solvers.toml")
    with pytest.raises(SolverFileError) as info:
        load_solvers(path)
    assert message in str(info.value) and "\n" not in str(info.value) and str(path) in str(info.value)
    assert info.value.exit_code == 2


def test_a_missing_solvers_file_is_a_usage_error_from_the_cli_without_a_traceback(tmp_path):
    pack = write(tmp_path, '{"kind": "coins", "notes": [1], "target": 1}', "level.json")
    env = {"PACKSOLVE_DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite'}"}
    res = invoke("solve", str(pack), "--solvers", str(tmp_path / "nope.toml"), env=env)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    [line] = res.stderr.strip().splitlines()
    assert line.startswith(f"Error: --solvers {tmp_path / 'nope.toml'}: no such file (declare solvers")
    bad = write(tmp_path, "[solvers.a]\nkind = 3\n", "bad.toml")
    res = invoke("submit", str(pack), "--solvers", str(bad), env=env)
    assert res.returncode == 2 and "[solvers.a]: needs kind" in res.stderr and "Traceback" not in res.stderr


def test_a_declared_program_is_a_heuristic_of_its_kind_only_and_unknown_names_list_both_sorts():
    solvers = {"fast": ExternalSolver("fast", "coins", ("./fast",))}
    coins, sudoku = get_kind("coins"), get_kind("sudoku")
    assert heuristic_of(coins, "fast", solvers) == "fast"
    assert heuristic_of(coins, None, solvers) == coins.default
    from packsolve.errors import UnknownHeuristic

    with pytest.raises(UnknownHeuristic, match=r"choose from: auto, bnb, dp, plain, prune, fast, default\)"):
        heuristic_of(coins, "slow", solvers)
    with pytest.raises(UnknownHeuristic, match="declared in ./packsolve.toml or --solvers FILE"):
        heuristic_of(sudoku, "fast", solvers)
