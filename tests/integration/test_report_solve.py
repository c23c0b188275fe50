"""A real `packsolve solve` with two heuristics: every report's figures match the runs' export."""

from __future__ import annotations

import csv
import io
import json
import statistics
from pathlib import Path

import pytest

from tests.support.inprocess import exported, invoke

DECIDED = {"solved", "no_solution"}
# Small one-stroke levels plain DFS settles at once, plus two it cannot within the limit
# (14x14 with a blocked cell by the start) but Warnsdorff ordering may.
EASY = [{"kind": "onestroke", "grid": ["S" + "." * (3 + i), "." * (4 + i), "." * (4 + i)]} for i in range(4)]
HARD = [
    {"kind": "onestroke", "grid": ["S.#" + "." * 11] + ["." * 14] * 13},
    {"kind": "onestroke", "grid": ["S.#" + "." * 12] + ["." * 15] * 14},
]
LIMIT = 1.0


def cli_json(*args: str, env: dict[str, str]) -> object:
    out = invoke(*args, "--format", "json", env=env)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def par2(rec: dict) -> float:
    return rec["wall_s"] if rec["status"] in DECIDED else 2 * LIMIT


@pytest.mark.slow
def test_reports_of_two_real_runs_match_their_export(tmp_path: Path, sqlite_url: str) -> None:
    pack = tmp_path / "pack.jsonl"
    pack.write_text("".join(json.dumps(lv) + "\n" for lv in EASY + HARD))
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url}
    for heuristic in ("plain", "warnsdorff"):
        args = ["--heuristic", heuristic, "--time-limit", str(LIMIT), "-j", "2", "-q", "--label", heuristic]
        out = invoke("solve", str(pack), *args, env=env)
        assert out.returncode == 0, out.stderr
    plain, warn = exported("plain", env), exported("warnsdorff", env)
    assert len(plain) == len(warn) == 6

    for label, recs in (("plain", plain), ("warnsdorff", warn)):
        s = cli_json("report", "summary", label, env=env)
        assert s["solved"] == sum(r["status"] == "solved" for r in recs)
        assert s["total"] == 6 and s["heuristics"] == [label]
        assert s["par2_s"] == pytest.approx(sum(par2(r) for r in recs), abs=2e-3)
        assert s["wall_s_median"] == pytest.approx(statistics.median(r["wall_s"] for r in recs), abs=1e-3)
        assert s["cpu_s_total"] == pytest.approx(sum(r["cpu_s"] for r in recs), abs=2e-3)
        assert s["workers"] == len({r["worker"] for r in recs}) and s["concurrency"] == 2

        hardest = cli_json("report", "hardest", "--run", label, "--top", "3", env=env)
        expect = sorted(recs, key=lambda r: (r["status"] in DECIDED, -par2(r), -r["nodes"]))[:3]
        assert [h["level"] for h in hardest] == [r["level"] for r in expect]

    cmp = cli_json("report", "compare", "plain", "warnsdorff", env=env)
    by_level = {r["level"]: r for r in cmp["rows"]}
    for p, w in zip(plain, warn, strict=True):
        cells = by_level[p["level"]]["results"]
        assert (cells[0]["status"], cells[1]["status"]) == (p["status"], w["status"])
        assert (cells[0]["nodes"], cells[1]["nodes"]) == (p["nodes"], w["nodes"])
        assert (cells[0]["peak_rss_mb"], cells[1]["peak_rss_mb"]) == (
            pytest.approx(p["peak_rss_mb"], abs=0.05),
            pytest.approx(w["peak_rss_mb"], abs=0.05),
        )
    # Each run's peak memory: the largest of its attempts'.
    assert [f["peak_rss_mb"] for f in cmp["footer"]] == [
        pytest.approx(max(r["peak_rss_mb"] for r in recs), abs=0.05) for recs in (plain, warn)
    ]
    assert [f["solved"] for f in cmp["footer"]] == [
        sum(r["status"] == "solved" for r in plain),
        sum(r["status"] == "solved" for r in warn),
    ]
    assert cmp["warnings"] == []  # same host, version and limits
    only = cli_json("report", "compare", "plain", "warnsdorff", "--only-solved-by", "warnsdorff", env=env)
    assert {r["level"] for r in only["rows"]} == {
        w["level"]
        for p, w in zip(plain, warn, strict=True)
        if w["status"] in DECIDED and p["status"] not in DECIDED
    }

    overall = cli_json("report", "hardest", "--all", "--top", "10", env=env)
    assert len(overall) == 6 and all(r["attempts"] == 2 for r in overall)

    out = invoke(
        "report",
        "cactus",
        "plain",
        "warnsdorff",
        "-o",
        str(tmp_path / "c.svg"),
        "--scatter",
        str(tmp_path / "s.png"),
        "--format",
        "csv",
        env=env,
    )
    assert out.returncode == 0, out.stderr
    rows = list(csv.DictReader(io.StringIO(out.stdout)))
    assert len(rows) == sum(r["status"] in DECIDED for r in plain + warn)
    assert (tmp_path / "c.svg").read_text().lstrip().startswith("<?xml")
    assert (tmp_path / "s.png").read_bytes()[:4] == b"\x89PNG"

    level = plain[0]["level"]
    shown = cli_json("show", level, env=env)
    assert [h["heuristic"] for h in shown["history"]] == ["plain", "warnsdorff"]
    assert shown["best"]["solution"] in (plain[0]["solution"], warn[0]["solution"])
    out = invoke("show", level, env=env)
    assert "S" in out.stdout and "history" in out.stdout


def test_summary_of_a_run_with_a_heuristic_per_kind_lists_peak_memory_by_kind_then_by_heuristic(
    tmp_path: Path, sqlite_url: str
) -> None:
    """Heuristics get a row of their own: listed after the kinds, they read as more kinds."""
    packs = Path(__file__).resolve().parents[2] / "examples" / "packs"
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url, "COLUMNS": "200"}
    res = invoke("solve", str(packs / "coins"), str(packs / "tictactoe"), "-q", env=env)
    assert res.returncode == 0, res.stderr
    doc = cli_json("report", "summary", "latest", env=env)
    assert set(doc["memory"]["by_kind"]) == {"coins", "tictactoe"}
    assert len(doc["memory"]["by_heuristic"]) == 2
    lines = invoke("report", "summary", "latest", env=env).stdout.splitlines()
    (kinds,) = [line for line in lines if "peak memory (MB)" in line]
    (heuristics,) = [line for line in lines if "by heuristic" in line]
    for heuristic in doc["memory"]["by_heuristic"]:
        assert heuristic not in kinds and heuristic in heuristics
    assert "coins" in kinds and "tictactoe" in kinds
