"""`--format json`: every command that takes it prints exactly one JSON document on stdout, nothing else."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.services import run_cli

PACK = Path(__file__).resolve().parents[2] / "examples" / "packs" / "coins"


def one_document(*args: str, env: dict[str, str]) -> object:
    """Run the CLI and return the one JSON document it printed; fail naming what else was printed."""
    res = run_cli(*args, "--format", "json", env=env)
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
    ]:
        one_document(*args, env=env)
