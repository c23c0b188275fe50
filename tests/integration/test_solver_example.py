"""examples/solvers: the C knight's tour builds with its Makefile and solves a pack as the built-in does."""

from __future__ import annotations

import json
import shutil
import subprocess

from tests.support.inprocess import invoke
from tests.support.services import ROOT


def test_the_example_c_solver_builds_and_matches_the_built_in_warnsdorff_node_for_node(tmp_path, sqlite_url):
    example = shutil.copytree(
        ROOT / "examples" / "solvers", tmp_path / "solvers", ignore=shutil.ignore_patterns("bin")
    )
    subprocess.run(["make", "-C", str(example)], check=True, capture_output=True)
    pack = tmp_path / "tours.jsonl"
    pack.write_text(
        "".join(
            json.dumps({"kind": "knights_tour", "size": n, "start": [r, c]}) + "\n"
            for n in (5, 6, 7)
            for r, c in ((0, 0), (1, 3), (2, 2))
        )
    )
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url}
    records = {}
    for heuristic, extra in (
        ("warnsdorff-c", ["--solvers", str(example / "packsolve.toml")]),
        ("warnsdorff", []),
    ):
        res = invoke(
            "solve", str(pack), "--heuristic", heuristic, "--label", heuristic, "-q", *extra, env=env
        )
        assert res.returncode == 0, res.stderr
        out = invoke("export", heuristic, env=env).stdout.splitlines()
        records[heuristic] = {r["level_hash"]: r for r in map(json.loads, out)}
    c, py = records["warnsdorff-c"], records["warnsdorff"]
    assert {r["status"] for r in c.values()} == {"solved"} and len(c) == 9
    for level, r in c.items():
        if py[level]["status"] == "solved":
            assert (r["nodes"], r["solution"]) == (py[level]["nodes"], py[level]["solution"])
    compare = invoke("report", "compare", "warnsdorff", "warnsdorff-c", "--format", "json", env=env)
    assert compare.returncode == 0 and json.loads(compare.stdout)["footer"][1]["solved"] == 9
