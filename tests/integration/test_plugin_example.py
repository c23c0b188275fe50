"""examples/plugin, installed as a separate distribution (make test / .ci/run install it), works end to end.

Its kind comes only through the entry-point group; it passes check-kind, its own tests pass,
and a pack of it is solved locally and through a real worker on SQLite and PostgreSQL.
"""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.inprocess import invoke
from tests.support.services import IN_CI, ROOT, wait_for_run

PLUGIN = ROOT / "examples" / "plugin"
PACK = PLUGIN / "levels"
EXPECTED = {"solved": 6, "no_solution": 1, "invalid": 1}


@pytest.fixture(autouse=True)
def installed():
    try:
        dist = importlib.metadata.distribution("packsolve-lightsout")
    except importlib.metadata.PackageNotFoundError:
        message = f"examples/plugin is not installed: pip install -e {PLUGIN} (make test does)"
        if IN_CI:
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return dist


def test_the_plugin_kind_comes_from_its_distribution_through_the_entry_point(installed):
    [entry] = [ep for ep in installed.entry_points if ep.group == "packsolve.kinds"]
    assert (entry.name, entry.value) == ("lightsout", "packsolve_lightsout:KIND")
    res = invoke("kinds", "--format", "json")
    row = next(r for r in json.loads(res.stdout) if r["kind"] == "lightsout")
    assert row["source"] == f"packsolve-lightsout {installed.version}" and row["heuristics"] == [
        "plain",
        "chase",
    ]


def test_the_plugin_passes_check_kind_and_its_own_tests():
    res = invoke("check-kind", "lightsout")
    assert res.returncode == 0, res.stdout + res.stderr
    own = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(PLUGIN / "tests")],
        capture_output=True,
        text=True,
        cwd=PLUGIN,
        timeout=300,
    )
    assert own.returncode == 0, own.stdout + own.stderr


def test_a_pack_of_the_plugin_kind_is_solved_locally(db_url):
    res = invoke("solve", str(PACK), "-q", "--format", "json", env={"PACKSOLVE_DATABASE_URL": db_url})
    assert res.returncode == 0, res.stderr
    summary = json.loads(res.stdout)
    assert summary["counts"] == EXPECTED
    assert summary["provenance"]["kinds"]["lightsout"]["source"] == "packsolve-lightsout"


def test_a_pack_of_the_plugin_kind_is_solved_through_a_real_worker(db_url, broker, start_worker):
    env = {"PACKSOLVE_DATABASE_URL": db_url, "PACKSOLVE_BROKER_URL": broker}
    start_worker(broker, db_url, "w1@test")
    res = invoke("submit", str(PACK), "--heuristic", "chase", "--time-limit", "20", env=env)
    assert res.returncode == 0, res.stderr
    run_id = int(res.stdout.strip().splitlines()[-1])
    wait_for_run(db_url, run_id, timeout=90)
    records = [json.loads(line) for line in invoke("export", str(run_id), env=env).stdout.splitlines()]
    counts: dict[str, int] = {}
    for r in records:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    assert counts == EXPECTED
    assert {r["heuristic"] for r in records if r["status"] != "invalid"} == {"chase"}
    assert {r["worker"] for r in records if r["status"] != "invalid"} == {"w1@test"}


def test_the_plugin_is_a_complete_distribution():
    pyproject = (PLUGIN / "pyproject.toml").read_text()
    assert (
        '[project.entry-points."packsolve.kinds"]' in pyproject
        and 'lightsout = "packsolve_lightsout:KIND"' in pyproject
    )
    source = (PLUGIN / "src" / "packsolve_lightsout" / "kind.py").read_text()
    imports = {line.split()[1] for line in source.splitlines() if line.startswith(("import ", "from "))}
    assert {i for i in imports if i.startswith("packsolve")} == {"packsolve.api"}  # the stable interface only
    assert Path(PLUGIN / "README.md").is_file()
