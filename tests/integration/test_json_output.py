"""`--format json`: every command that takes it prints exactly one JSON document on stdout, nothing else."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.support.inprocess import invoke

PACK = Path(__file__).resolve().parents[2] / "examples" / "packs" / "coins"


def one_document(*args: str, env: dict[str, str]) -> object:
    """Run the CLI and return the one JSON document it printed; fail naming what else was printed."""
    res = invoke(*args, "--format", "json", env=env)
    assert res.returncode == 0, res.stderr
    try:
        return json.loads(res.stdout)
    except json.JSONDecodeError as exc:
        pytest.fail(f"{' '.join(args)}: stdout is not one JSON document ({exc}): {res.stdout[-300:]!r}")


def test_every_command_taking_format_json_prints_one_json_document(sqlite_url):
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url}
    first = one_document("solve", str(PACK), "-q", "--label", "first", env=env)
    child = one_document("rerun", "first", "--status", "solved,no_solution", "--local", "-q", env=env)
    assert child["run"] != first["run"] and child["total"] == first["total"]
    for args in [
        ("check", str(PACK)),
        ("kinds",),
        ("status", "first"),
        ("runs",),
        ("export", "first"),
        ("report", "summary", "first"),
        ("report", "hardest", "--run", "first"),
        ("report", "failures", "first"),
        ("report", "compare", "first", str(child["run"])),
        ("report", "curve", "first"),
        ("report", "matrix", "first", str(child["run"])),
    ]:
        one_document(*args, env=env)


def test_rerun_format_json_prints_progress_lines_on_stderr_as_solve_does(sqlite_url):
    """stdout is the one document; stderr (not a terminal) has the progress lines, for rerun as for solve."""
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url}
    solved = invoke("solve", str(PACK), "--label", "first", "--format", "json", env=env)
    assert solved.returncode == 0 and re.search(r"run 1: 5/5 final \(100%\)", solved.stderr), solved.stderr
    res = invoke("rerun", "first", "--status", "solved,no_solution", "--local", "--format", "json", env=env)
    assert res.returncode == 0, res.stderr
    child = json.loads(res.stdout)["run"]
    assert re.search(rf"run {child}: 5/5 final \(100%\)", res.stderr), res.stderr


def test_status_json_has_every_documented_key_for_a_finished_local_run(sqlite_url):
    """Keys never vanish once a run is over: the document has exactly the keys docs/reports.md lists."""
    import re

    doc = (Path(__file__).resolve().parents[2] / "docs" / "reports.md").read_text()
    section = doc.split("## `status [RUN] [--watch] --format json`", 1)[1]
    listed = set(re.findall(r'"(\w+)"', section.split("}`", 1)[0]))
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url}
    one_document("solve", str(PACK), "-q", env=env)
    status = one_document("status", env=env)
    assert set(status) == listed
    assert status["finished"] and status["live_workers"] is None and status["unsent"] is None
