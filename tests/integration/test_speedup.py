"""A speedup is computed only over levels both runs decided, under equal limits, and says over how many.

Otherwise it is not shown and the report says why. The night that filed this: a rerun with more time
that solved 14 more levels was shown ×0.65; the HTML said ×0.25 for one that solved 1,885 more.
"""

from __future__ import annotations

import json

import pytest

from packsolve.db.models import Run
from packsolve.db.session import get_engine, session_scope
from packsolve.report.compare import compare_runs
from tests.support.inprocess import invoke
from tests.support.report_runs import Planned, build_run, strip_level

LEVELS = [strip_level(i) for i in range(8)]


def cli(url: str, *args: str) -> str:
    res = invoke(*args, env={"PACKSOLVE_DATABASE_URL": url})
    assert res.returncode == 0, res.stderr
    return res.stdout


def test_a_rerun_with_more_time_that_decides_more_shows_no_speedup_and_says_why(sqlite_url, tmp_path):
    # The parent: 2 solved in 1 s each, 6 timeouts at 10 s. The rerun with 60 s solves all 8,
    # the two shared ones in 2 s each: a PAR-2 ratio or a wall ratio would read as a slowdown.
    parent = build_run(
        sqlite_url,
        [Planned(lv, "solved", 1.0) for lv in LEVELS[:2]]
        + [Planned(lv, "timeout", 10.0) for lv in LEVELS[2:]],
        time_limit=10.0,
    )
    child = build_run(sqlite_url, [Planned(lv, "solved", 2.0) for lv in LEVELS], time_limit=60.0)
    data = json.loads(cli(sqlite_url, "report", "compare", str(parent), str(child), "--format", "json"))
    foot = data["footer"][1]
    assert foot["speedup"] is None and foot["common_speedup"] is None and foot["par2_speedup"] is None
    assert "time limit" in foot["speedup_why_not"] and foot["speedup_levels"] == 2
    table = cli(sqlite_url, "report", "compare", str(parent), str(child))
    assert "×" not in table and "no speedup" in table and "time limit" in table
    cli(sqlite_url, "report", "html", str(parent), str(child), "-o", str(tmp_path / "r.html"))
    page = (tmp_path / "r.html").read_text()
    assert "speedup ×" not in page and "no speedup: time limits differ" in page


def test_under_equal_limits_the_speedup_is_over_the_levels_both_decided_and_says_how_many(sqlite_url):
    a = build_run(
        sqlite_url,
        [Planned(lv, "solved", 4.0) for lv in LEVELS[:4]]
        + [Planned(lv, "timeout", 10.0) for lv in LEVELS[4:]],
    )
    b = build_run(
        sqlite_url,
        [Planned(lv, "solved", 1.0) for lv in LEVELS[:3]]
        + [Planned(lv, "timeout", 10.0) for lv in LEVELS[3:]],
    )
    with session_scope(get_engine(sqlite_url)) as session:
        runs = [session.get(Run, a), session.get(Run, b)]
        from packsolve.report.compare import speedup

        rows = compare_runs(session, runs)["rows"]
        s = speedup(runs[0], runs[1], [(r["results"][0], r["results"][1]) for r in rows])
    assert (s.value, s.levels, s.why_not) == (pytest.approx(4.0), 3, None)
    table = cli(sqlite_url, "report", "compare", str(a), str(b))
    assert "×4.00 over 3" in table


def test_runs_that_share_no_level_say_so_first_and_show_no_par2_over_no_level(sqlite_url):
    # The night's 1 vs 3: "PAR-2 s on the 0 levels all ran 0.00 / 0.00", and only "memory limits differ".
    a = build_run(sqlite_url, [Planned(lv, "solved", 1.0) for lv in LEVELS[:4]], time_limit=10.0)
    b = build_run(sqlite_url, [Planned(lv, "solved", 2.0) for lv in LEVELS[4:]], time_limit=20.0)
    data = json.loads(cli(sqlite_url, "report", "compare", str(a), str(b), "--format", "json"))
    first, foot = data["footer"]
    assert first["common_levels"] == foot["common_levels"] == 0
    assert first["common_par2_s"] is None and foot["common_par2_s"] is None  # missing, as speedup is
    why = foot["speedup_why_not"]
    assert why.startswith("no level in common") and "time limits differ" in why, why
    table = cli(sqlite_url, "report", "compare", str(a), str(b))
    par2 = [line for line in table.splitlines() if "PAR-2 s on the" in line]
    assert par2 and "0.00" not in par2[0] and par2[0].count("—") == 2, table
    assert f"no speedup: {why}" in " ".join(table.split())
