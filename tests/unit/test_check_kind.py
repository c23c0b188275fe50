"""packsolve.testing.check_kind: every built-in kind passes it, and each way a kind can break is caught."""

from __future__ import annotations

import dataclasses
import json
import random

import pytest

from packsolve.api import LevelError, solved, solver
from packsolve.puzzles import _MODULES, get_kind
from packsolve.testing import KindCheckFailed, check_kind, run_checks
from tests.support.inprocess import invoke
from tests.support.plugins import flip_distribution, make_distribution
from tests.support.services import run_cli


@pytest.mark.parametrize("name", sorted(_MODULES))
def test_every_built_in_kind_passes_the_contract_check(name):
    checks = check_kind(name)
    assert all(c.ok for c in checks) and len(checks) >= 8


def failed(kind, **kwargs):
    """Return {check name: detail} of the checks kind fails."""
    return {c.name: c.detail for c in run_checks(kind, **kwargs) if not c.ok}


SUDOKU = get_kind("sudoku")


def test_a_verify_that_accepts_anything_fails_the_corruption_check():
    out = failed(dataclasses.replace(SUDOKU, verify=lambda level, solution: None))
    assert list(out) == ["verify rejects corrupted answers with a message"]
    assert "verify accepted no answer (null)" in out["verify rejects corrupted answers with a message"]


def test_a_verify_that_raises_on_garbage_still_rejects_it():
    """packsolve stores an answer whose verify raised as wrong: a rejection, if not a tidy one."""

    def verify(level, solution):
        return SUDOKU.verify(level, solution) if len(solution) == 81 else "wrong length"

    assert failed(dataclasses.replace(SUDOKU, verify=verify)) == {}


def test_a_parser_that_raises_something_else_than_level_error_fails_the_bad_input_check():
    def parse(data):
        return SUDOKU.parse({"grid": data["grid"]})

    out = failed(dataclasses.replace(SUDOKU, parse=parse))
    assert "parse raised TypeError" in out["bad input raises LevelError with a message"]
    assert "raise LevelError with a message instead" in out["bad input raises LevelError with a message"]


def test_a_parser_that_accepts_an_empty_level_fails_the_bad_input_check():
    flip = _flip_kind()
    lenient = dataclasses.replace(flip, parse=lambda data: "H" if data == {} else flip.parse(data))
    out = failed(lenient)
    assert "{} (no fields): parse accepted it" in out["bad input raises LevelError with a message"]


def test_an_unstable_canonical_form_fails_the_round_trip_check():
    euler = get_kind("euler")
    noisy = dataclasses.replace(euler, canonical=lambda g: {**euler.canonical(g), "noise": random.random()})
    out = failed(noisy)
    assert "canonical form changes on a round trip" in out["example levels parse, and canonical round-trips"]


def test_a_heuristic_whose_answer_verify_rejects_is_named():
    bad = solver(lambda level, budget: solved("1" * 81))
    out = failed(dataclasses.replace(SUDOKU, solvers={**SUDOKU.solvers, "liar": bad}))
    assert "verify rejects its solution" in out["heuristic 'liar' ends with an answer verify accepts"]
    assert list(out) == ["heuristic 'liar' ends with an answer verify accepts"]


def test_a_heuristic_that_crashes_or_runs_out_of_time_is_named():
    def crash(level, budget):
        raise ZeroDivisionError("oops")

    def slow(level, budget):
        while True:
            budget.charge()

    kind = dataclasses.replace(
        SUDOKU, solvers={**SUDOKU.solvers, "crash": solver(crash), "slow": solver(slow)}
    )
    out = failed(kind, time_limit=0.2)
    assert "raised ZeroDivisionError: oops" in out["heuristic 'crash' ends with an answer verify accepts"]
    assert "did not finish within 0.2 s" in out["heuristic 'slow' ends with an answer verify accepts"]


def test_heuristics_that_disagree_on_whether_a_level_has_a_solution_are_caught():
    flip = _flip_kind()
    from packsolve.api import no_solution

    kind = dataclasses.replace(
        flip, solvers={**flip.solvers, "quitter": solver(lambda c, b: no_solution("no"))}
    )
    out = failed(kind)
    assert (
        "quitter proved no solution, each found one"
        in out["heuristics agree on which examples have a solution"]
    )


def test_empty_pictures_fail_the_picture_check():
    out = failed(dataclasses.replace(SUDOKU, render=lambda level, solution: "", svg=lambda lv, s: "<p/>"))
    assert "render of the level alone gave ''" in out["render and svg produce output"]
    assert "svg of the level alone" in out["render and svg produce output"]


def test_a_kind_without_examples_is_told_to_give_some():
    out = failed(dataclasses.replace(SUDOKU, examples=()))
    assert "no example levels: give PuzzleKind(examples=[...])" in next(iter(out.values()))
    assert not failed(dataclasses.replace(SUDOKU, examples=()), levels=list(SUDOKU.examples))


def test_check_kind_raises_an_assertion_error_listing_every_failed_check():
    with pytest.raises(KindCheckFailed) as info:
        check_kind(dataclasses.replace(SUDOKU, verify=lambda level, solution: None, render=lambda lv, s: ""))
    assert isinstance(info.value, AssertionError) and len(info.value.failed) == 2
    assert str(info.value).startswith("kind 'sudoku' fails 2 check(s):\n- ")


def test_check_kind_cli_passes_a_built_in_and_fails_a_broken_plugin_with_exit_1(tmp_path):
    assert invoke("check-kind", "coins").returncode == 0
    broken = (
        "import dataclasses\nfrom flip_kind import KIND as K\n"
        'KIND = dataclasses.replace(K, name="lazy", verify=lambda c, s: None)\n'
    )
    root = make_distribution(
        tmp_path / "site", "packsolve-lazy", "0.1", {"lazy": "lazy_kind:KIND"}, {"lazy_kind": broken}
    )
    flip_distribution(root, "1.0")
    res = run_cli("check-kind", "lazy", "--format", "json", env={"PYTHONPATH": str(root)})
    assert res.returncode == 1
    rows = {r["check"]: r for r in json.loads(res.stdout)}
    assert not rows["verify rejects corrupted answers with a message"]["ok"]
    assert res.stderr.strip().splitlines()[-1] == "Error: kind 'lazy' fails 1 of 8 checks"
    assert run_cli("check-kind", "flip", env={"PYTHONPATH": str(root)}).returncode == 0
    unknown = invoke("check-kind", "nope")
    assert unknown.returncode == 2 and "unknown kind 'nope'" in unknown.stderr


def test_check_kind_cli_takes_levels_from_a_file(tmp_path):
    """A --levels file that cannot be read exits 2, as one that does not exist does (click's check).

    The file is the command's input, named on the command line: a usage error (errors.UsageError),
    like an unreadable --solvers file or a path given to solve that does not exist.
    Exit 1 stays what it means for check-kind: the kind was checked and fails a check.
    """
    levels = tmp_path / "levels.jsonl"
    levels.write_text('{"kind": "coins", "notes": [1, 2, 5], "target": 7}\n')
    res = invoke("check-kind", "coins", "--levels", str(levels))
    assert res.returncode == 0, res.stdout + res.stderr
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    res = invoke("check-kind", "coins", "--levels", str(bad))
    assert res.returncode == 2 and "cannot read levels from" in res.stderr and "Traceback" not in res.stderr
    res = invoke("check-kind", "coins", "--levels", str(tmp_path / "none.json"))
    assert res.returncode == 2 and "does not exist" in res.stderr


def _flip_kind():
    """Return the test plug-in's flip kind, imported from its source without installing it."""
    from tests.support.plugins import FLIP_KIND

    namespace: dict = {}
    exec(compile(FLIP_KIND.format(name="flip", version="0"), "flip_kind", "exec"), namespace)
    return namespace["KIND"]


def test_the_flip_test_kind_is_itself_correct():
    check_kind(_flip_kind())
    with pytest.raises(LevelError):
        _flip_kind().parse({"coins": "HX"})


PREPARATION_CHECK = "preparation gives a Preparation or None, ready once run, and runs again harmlessly"


def test_a_kind_with_a_preparation_has_it_checked_and_one_without_is_not_asked_for_one(tmp_path, monkeypatch):
    monkeypatch.setenv("PACKSOLVE_CACHE_DIR", str(tmp_path / "cache"))
    with_one = {c.name: c.ok for c in run_checks(get_kind("sliding"))}
    without = {c.name: c.ok for c in run_checks(SUDOKU)}
    assert with_one[PREPARATION_CHECK] is True and all(with_one.values())
    assert PREPARATION_CHECK not in without and all(without.values())
    assert sorted(p.name for p in (tmp_path / "cache").iterdir() if p.suffix == ".bin")  # the tables it built


def test_a_preparation_that_never_gets_ready_or_raises_fails_its_check():
    from packsolve.api import Preparation

    def never_ready(heuristic, level):
        return Preparation("k", "the k tables", "no time", "nowhere", ready=lambda: False, run=lambda: None)

    def broken(heuristic, level):
        raise RuntimeError("no tables here")

    out = failed(dataclasses.replace(SUDOKU, preparation=never_ready))
    assert list(out) == [PREPARATION_CHECK]
    assert "ready() is False after its first run, not True" in out[PREPARATION_CHECK]
    out = failed(dataclasses.replace(SUDOKU, preparation=broken))
    assert "preparation raised RuntimeError: no tables here" in out[PREPARATION_CHECK]
    out = failed(dataclasses.replace(SUDOKU, preparation=lambda heuristic, level: "tables"))
    assert "returned a str, not a Preparation or None" in out[PREPARATION_CHECK]
