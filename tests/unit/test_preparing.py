"""execution.preparing: what a heuristic needs once is found per level, done once per process, and a failure
is kept for the attempts that need it."""

from __future__ import annotations

import pytest

from packsolve.execution import AttemptSpec, execute_attempts, preparing
from packsolve.outcome import Status
from packsolve.puzzles.sliding import pdb as sliding_pdb
from packsolve.queue.app import _may_prepare
from packsolve.queue.protocol import PendingAttempt

EIGHT = {"tiles": [[1, 0, 2], [3, 4, 5], [6, 7, 8]]}
SUDOKU = {"grid": "." * 81}


@pytest.fixture(autouse=True)
def _fresh(tmp_path, monkeypatch):
    monkeypatch.setenv("PACKSOLVE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(sliding_pdb, "_LOADED", {})
    monkeypatch.setattr(preparing, "_done", set())
    monkeypatch.setattr(preparing, "_failed", {})
    monkeypatch.setattr(preparing, "_failed_at", {})


def test_tables_are_built_once_per_process_and_said_only_when_they_are_built(tmp_path):
    specs = [AttemptSpec("sliding", "pdb", EIGHT), AttemptSpec("sliding", "default", EIGHT)]
    lines: list[str] = []
    done = preparing.prepare(specs, lines.append)
    assert [d.preparation.key for d in done] == ["sliding pdb 3x3"] and done[0].problem is None
    assert (
        lines[0]
        == f"building the pdb pattern tables for 3x3 once (under a second; kept in {tmp_path / 'cache'})"
    )
    assert lines[1].startswith("built the pdb pattern tables for 3x3 in ")
    assert preparing.prepare(specs, lines.append) == [] and len(lines) == 2
    preparing._done.clear()  # as another process: the tables are on disk, so it says nothing
    assert [d.problem for d in preparing.prepare(specs, lines.append)] == [None] and len(lines) == 2


def test_heuristics_and_kinds_that_need_nothing_prepared_have_no_preparation():
    assert (
        preparing.needed([AttemptSpec("sliding", "idastar", EIGHT), AttemptSpec("sudoku", "plain", SUDOKU)])
        == []
    )
    assert preparing.preparation_of(AttemptSpec("sliding", "pdb", {"tiles": "not a board"})) is None


def test_a_failed_preparation_ends_its_attempts_as_errors_saying_what_would_work(tmp_path, monkeypatch):
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    monkeypatch.setenv("PACKSOLVE_CACHE_DIR", str(blocked))
    spec = AttemptSpec("sliding", "pdb-663", EIGHT)
    [done] = preparing.prepare([spec])
    assert done.problem is not None
    assert done.problem.startswith(
        f"could not prepare the pdb pattern tables for 3x3 ({blocked} could not be"
    )
    assert "`packsolve kinds --prepare sliding pdb-663 --size 3`" in done.problem
    [outcome, other] = execute_attempts([spec, AttemptSpec("sliding", "idastar", EIGHT)])
    assert (outcome.status, outcome.message) == (Status.ERROR, done.problem)
    assert other.status is Status.SOLVED
    assert preparing.prepare([spec]) == []  # not tried again at once
    monkeypatch.setenv("PACKSOLVE_CACHE_DIR", str(tmp_path / "cache"))  # the disk was fixed
    monkeypatch.setattr(preparing, "RETRY_S", 0.0)
    [again] = preparing.prepare([spec])
    assert again.problem is None and preparing.failures() == {}
    assert next(execute_attempts([spec])).status is Status.SOLVED


def test_a_task_of_a_heuristic_that_may_prepare_gets_the_room_for_it():
    def chunk(kind, heuristic, level):
        return [PendingAttempt("h", AttemptSpec(kind, heuristic, level))]

    known: dict = {}
    assert _may_prepare(chunk("sliding", "pdb-6666", EIGHT), known)
    assert not _may_prepare(chunk("sliding", "astar", EIGHT), known)
    assert not _may_prepare(chunk("sudoku", "plain", SUDOKU), known)
    assert known == {("sliding", "pdb-6666"): True, ("sliding", "astar"): False, ("sudoku", "plain"): False}
