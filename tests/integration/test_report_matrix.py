"""`report matrix` of real `packsolve solve` runs: each cell, the best per level and the virtual best solver
are the runs' own export, and --sort orders the levels."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from packsolve.report.cactus import time_text
from tests.support.inprocess import exported, invoke
from tests.support.report_runs import Planned, build_run, strip_level

DECIDED = {"solved", "no_solution"}
# Small one-stroke levels every heuristic settles at once, and one plain DFS cannot within the limit.
EASY = [{"kind": "onestroke", "grid": ["S" + "." * (3 + i), "." * (4 + i), "." * (4 + i)]} for i in range(4)]
HARD = [{"kind": "onestroke", "grid": ["S.#" + "." * 11] + ["." * 14] * 13}]
HEURISTICS = ("plain", "warnsdorff", "prune")
LIMIT = 0.5


def par2(rec: dict) -> float:
    return rec["wall_s"] if rec["status"] in DECIDED else 2 * LIMIT


@pytest.mark.slow
def test_a_matrix_of_three_runs_is_their_export_side_by_side(tmp_path: Path, sqlite_url: str) -> None:
    pack = tmp_path / "pack.jsonl"
    pack.write_text("".join(json.dumps(lv) + "\n" for lv in EASY + HARD))
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url}
    for h in HEURISTICS:
        args = ["--heuristic", h, "--time-limit", str(LIMIT), "-j", "2", "-q", "--label", h]
        out = invoke("solve", str(pack), *args, env=env)
        assert out.returncode == 0, out.stderr
    runs = {h: {r["level_hash"]: r for r in exported(h, env)} for h in HEURISTICS}

    out = invoke("report", "matrix", *HEURISTICS, "--format", "json", env=env)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert [c["label"] for c in data["columns"]] == list(HEURISTICS)
    assert [r["level"] for r in data["rows"]] == [r["level"] for r in runs["plain"].values()]
    vbs_par2 = 0.0
    for row in data["rows"]:
        recs = [runs[h][row["level_hash"]] for h in HEURISTICS]
        assert [(c["status"], c["nodes"]) for c in row["cells"]] == [(r["status"], r["nodes"]) for r in recs]
        assert [c["wall_s"] for c in row["cells"]] == [pytest.approx(r["wall_s"], abs=1e-4) for r in recs]
        decided = {i: r["wall_s"] for i, r in enumerate(recs) if r["status"] in DECIDED}
        # The export rounds times: columns equally fast to 0.1 ms may each be the best.
        fastest = {i for i, wall in decided.items() if wall == min(decided.values())}
        assert row["best"] in fastest if decided else row["best"] is None
        vbs_par2 += min(par2(r) for r in recs)
    singles = [sum(par2(r) for r in runs[h].values()) for h in HEURISTICS]
    assert [c["par2_s"] for c in data["columns"]] == [pytest.approx(s, abs=1e-3) for s in singles]
    vbs = data["virtual_best"]
    best = min(range(len(HEURISTICS)), key=lambda i: singles[i])
    assert vbs["levels"] == len(EASY + HARD) and vbs["single"] == HEURISTICS[best]
    assert vbs["par2_s"] == pytest.approx(vbs_par2, abs=1e-3)
    assert vbs["saves_s"] == pytest.approx(singles[best] - vbs_par2, abs=2e-3)
    decided_by_any = [any(runs[h][k]["status"] in DECIDED for h in HEURISTICS) for k in runs["plain"]]
    assert vbs["decided"] == sum(decided_by_any)

    # --sort plain: plain's longest PAR-2 first; the table marks each level's best and says the VBS.
    out = invoke("report", "matrix", *HEURISTICS, "--sort", "plain", "--format", "json", env=env)
    assert out.returncode == 0, out.stderr
    plain = [row["cells"][0]["par2_s"] for row in json.loads(out.stdout)["rows"]]
    assert plain == sorted(plain, reverse=True)
    table = invoke("report", "matrix", *HEURISTICS, env=env)
    assert table.returncode == 0, table.stderr
    marked = sum(row["best"] is not None for row in data["rows"])
    assert table.stdout.count("*solved") + table.stdout.count("*no_solution") == marked
    assert "virtual best solver over the 5 levels every column ran" in " ".join(table.stdout.split())

    bad = invoke("report", "matrix", *HEURISTICS, "--sort", "nope", env=env)
    assert bad.returncode == 2
    assert "'nope' is not a sort here; choose from level, best, plain, warnsdorff, prune" in bad.stderr


def test_a_matrix_run_s_cactus_has_a_line_per_heuristic_with_its_decided_times(sqlite_url: str) -> None:
    """report cactus: a run of several heuristics side by side draws one line per heuristic (its matrix
    columns), each its own decided attempts; a run of one heuristic keeps its one line."""
    plan, decided = [], {h: [] for h in HEURISTICS}
    for i in range(5):
        lv = strip_level(80 + i)
        for j, h in enumerate(HEURISTICS):
            ok = (i + j) % 3 != 0  # each heuristic fails a different share of the levels
            wall = round(0.1 + 0.01 * (5 * j + i), 4)
            plan.append(Planned(lv, "solved" if ok else "timeout", wall if ok else 1.0, 0.1, i, "", 20.0, h))
            if ok:
                decided[h].append(wall)
    run = build_run(sqlite_url, plan, heuristic=",".join(HEURISTICS), time_limit=1.0, label="mx")
    one = build_run(sqlite_url, [Planned(strip_level(90), "solved", 0.2)], time_limit=1.0, label="one")
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url}

    out = invoke("report", "cactus", str(run), str(one), "--format", "json", env=env)
    assert out.returncode == 0, out.stderr
    lines = json.loads(out.stdout)["cactus"]
    assert [(c["run"], c["heuristic"], c["label"]) for c in lines] == [
        *((run, h, f"run {run} mx ({h})") for h in HEURISTICS),
        (one, "plain", f"run {one} one (plain)"),
    ]
    for c, h in zip(lines, HEURISTICS, strict=False):
        assert c["times"] == sorted(decided[h]) and c["decided"] == len(decided[h]) < 5
    # The matrix's columns count the same decided levels.
    matrix = json.loads(invoke("report", "matrix", str(run), "--format", "json", env=env).stdout)
    assert [c["decided"] for c in matrix["columns"]] == [c["decided"] for c in lines[:3]]
    # CSV: a row per point, named by its run and heuristic; the table a row per line.
    csv = invoke("report", "cactus", str(run), "--format", "csv", env=env).stdout.splitlines()
    assert csv[0] == "run,heuristic,decided,wall_s"
    assert sorted(row.split(",")[1] for row in csv[1:]) == sorted(h for h in HEURISTICS for _ in decided[h])
    table = invoke("report", "cactus", str(run), env={**env, "COLUMNS": "100"}).stdout
    for h in HEURISTICS:
        assert re.search(rf"run {run} mx \({h}\)\s*│\s*{len(decided[h])} ", table), table


@pytest.mark.parametrize(
    "heuristics", [HEURISTICS, (*HEURISTICS, "cpsat"), (*HEURISTICS, "cpsat", "portfolio")]
)
def test_the_matrix_table_holds_in_80_columns_every_status_and_time_whole(
    sqlite_url: str, heuristics: tuple[str, ...]
) -> None:
    """With three to five heuristics and long level names, no line passes 80 columns, and each cell's
    status and wall time stand whole (on one line, or status over time), each name's end and :LINE kept."""
    statuses = ("no_solution", "timeout", "solved", "memout")
    plan = []
    for i in range(4):
        name = f"packs/a-rather-long-directory-of-levels/for-the-night/level-file-{i}.jsonl:{100 + i}"
        lv = strip_level(100 + i, name=name)
        for j, h in enumerate(heuristics):
            plan.append(Planned(lv, statuses[(i + j) % 4], 1234.5678 / (1 + i + j), 1.0, i, "", 20.0, h))
    run = build_run(sqlite_url, plan, heuristic=",".join(heuristics), time_limit=3600.0)
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url, "COLUMNS": "80"}
    data = json.loads(invoke("report", "matrix", str(run), "--format", "json", env=env).stdout)
    out = invoke("report", "matrix", str(run), env=env)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert max(len(line.rstrip()) for line in lines) <= 80, out.stdout
    words = out.stdout.split()
    for row in data["rows"]:
        assert any(w.endswith(row["level"][-11:]) for w in words), row["level"]  # "0.jsonl:100"
        for j, cell in enumerate(row["cells"]):
            status = ("*" if row["best"] == j else "") + cell["status"]
            assert status in words and time_text(cell["wall_s"]) in words, (status, cell["wall_s"])
    for label in heuristics:
        assert label in words
