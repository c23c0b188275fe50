"""Reports agree with figures computed independently from the export records, on SQLite and PostgreSQL."""

from __future__ import annotations

import csv
import io
import json
import math
import statistics
from collections import Counter, defaultdict

import pytest

from packsolve.db.models import Part, Run
from packsolve.db.session import get_engine, session_scope
from packsolve.errors import LevelNotFound
from packsolve.levels import make_level
from packsolve.outcome import Status
from packsolve.report.compare import compare_runs
from packsolve.report.export import export_records
from packsolve.report.hardest import hardest_in_run, hardest_overall
from packsolve.report.progress import run_progress
from packsolve.report.show import level_report
from packsolve.report.summary import run_summary
from tests.support.inprocess import invoke
from tests.support.report_runs import Planned, build_run, strip_level

DECIDED = {"solved", "no_solution"}
NOT_RUN = {"queued", "running", "invalid", "cancelled"}


def records(url: str, run_id: int) -> list[dict]:
    with session_scope(get_engine(url)) as session:
        return list(export_records(session, run_id))


def par2_of(rec: dict, limit: float | None) -> float | None:
    """PAR-2 as docs/reports.md defines it, from an export record alone."""
    if rec["status"] in NOT_RUN:
        return None
    if rec["status"] in DECIDED:
        return rec["wall_s"]
    return 2 * (limit or rec["wall_s"])


LEVELS = [strip_level(i) for i in range(12)]
BAD = make_level("broken", {"kind": "onestroke", "grid": ["S.", "x"]})

RUN_A = [
    Planned(LEVELS[0], "solved", 0.5, 0.4, 100),
    Planned(LEVELS[1], "solved", 2.5, 2.4, 900),
    Planned(LEVELS[2], "timeout", 10.2, 10.0, 5000),
    Planned(LEVELS[3], "timeout", 10.1, 10.0, 7000),
    Planned(LEVELS[4], "no_solution", 1.5, 1.5, 300),
    Planned(LEVELS[5], "error", 0.1, 0.1, 3),
    Planned(LEVELS[6], "memout", 4.0, 3.9, 4000),
    Planned(LEVELS[7], "wrong", 0.2, 0.2, 10),
    Planned(LEVELS[8], "solved", 7.0, 6.9, 2000),
    Planned(BAD, "invalid"),
]
RUN_B = [
    Planned(LEVELS[0], "solved", 0.25, 0.2, 50),
    Planned(LEVELS[1], "timeout", 5.1, 5.0, 9000),
    Planned(LEVELS[2], "solved", 1.0, 1.0, 400),
    Planned(LEVELS[3], "timeout", 5.2, 5.0, 8000),
    Planned(LEVELS[4], "no_solution", 0.5, 0.5, 100),
    Planned(LEVELS[5], "solved", 0.3, 0.3, 30),
    Planned(LEVELS[9], "solved", 0.7, 0.6, 70),
]


def test_summary_matches_the_export(db_url: str) -> None:
    run_id = build_run(db_url, RUN_A, time_limit=10.0, worker="w1@hostA")
    recs = records(db_url, run_id)
    with session_scope(get_engine(db_url)) as session:
        s = run_summary(session, session.get(Run, run_id))
    statuses = Counter(r["status"] for r in recs)
    assert s["total"] == len(recs) == 10
    assert s["solved"] == statuses["solved"] == 3
    assert s["decided"] == statuses["solved"] + statuses["no_solution"]
    assert s["counts"] == dict(statuses)
    scores = [p for r in recs if (p := par2_of(r, 10.0)) is not None]
    assert s["par2_s"] == pytest.approx(sum(scores), abs=1e-3)
    assert s["par2_mean_s"] == pytest.approx(sum(scores) / len(scores), abs=1e-3)
    assert s["scored"] == len(scores) == 9
    walls = [r["wall_s"] for r in recs if r["wall_s"] is not None]
    assert s["wall_s_median"] == pytest.approx(statistics.median(walls), abs=1e-4)
    assert s["cpu_s_total"] == pytest.approx(sum(r["cpu_s"] or 0 for r in recs), abs=1e-3)
    assert s["cpu_s_median"] == pytest.approx(
        statistics.median(r["cpu_s"] for r in recs if r["cpu_s"] is not None)
    )
    assert s["nodes_total"] == sum(r["nodes"] or 0 for r in recs)
    assert s["hosts"] == ["hostA"] and s["workers"] == 1 and s["concurrency"] == 2
    # The invalid level keeps the kind its JSON named, so it counts under onestroke too.
    assert list(s["kinds"]) == ["onestroke"]
    assert s["kinds"]["onestroke"]["total"] == 10 and s["kinds"]["onestroke"]["solved"] == 3
    assert s["makespan_s"] is not None and s["makespan_s"] >= 0


def test_hardest_in_a_run_ranks_unsolved_by_par2_then_cpu_time(db_url: str) -> None:
    run_id = build_run(db_url, RUN_A, time_limit=10.0)
    recs = [r for r in records(db_url, run_id) if r["status"] not in NOT_RUN]
    unsolved = sorted(
        (r for r in recs if r["status"] not in DECIDED), key=lambda r: (-par2_of(r, 10.0), -(r["cpu_s"] or 0))
    )
    solved = sorted((r for r in recs if r["status"] in DECIDED), key=lambda r: -r["wall_s"])
    with session_scope(get_engine(db_url)) as session:
        run = session.get(Run, run_id)
        rows = hardest_in_run(session, run, "par2", top=50)
        by_nodes = hardest_in_run(session, run, "nodes", top=50)
        top3 = hardest_in_run(session, run, "par2", top=3)
    assert [r["level"] for r in rows] == [r["level"] for r in unsolved + solved]
    assert [r["rank"] for r in rows] == list(range(1, len(recs) + 1))
    assert [r["level"] for r in top3] == [r["level"] for r in rows[:3]]
    # Unsolved levels all score 2 × 10 s, so CPU time orders them (10 s, 10 s in pack order, 3.9 s ...)
    assert [r["nodes"] for r in rows[:3]] == [5000, 7000, 4000]
    solved_by_nodes = sorted((r for r in recs if r["status"] in DECIDED), key=lambda r: -r["nodes"])
    assert [r["level"] for r in by_nodes[len(unsolved) :]] == [r["level"] for r in solved_by_nodes]
    assert "broken" not in {r["level"] for r in rows}  # never ran: not a hard level


def test_hardest_breaks_ties_by_cpu_time_not_by_nodes_of_different_kinds(db_url: str) -> None:
    """Every level timed out (one PAR-2): the coin levels' huge node counts must not put them on top."""
    coins = [make_level(f"coins-{i}", {"kind": "coins", "notes": [2, 4 + i], "target": 99}) for i in range(3)]
    planned = [Planned(lv, "timeout", 10.1, 1.0 + i, 10**9 + i) for i, lv in enumerate(coins)]
    planned += [Planned(strip_level(i), "timeout", 10.1, 9.0 + 0.1 * i, 1000 + i) for i in range(3)]
    run_id = build_run(db_url, planned, time_limit=10.0)
    env = {"PACKSOLVE_DATABASE_URL": db_url}
    shown = json.loads(invoke("report", "hardest", "--run", str(run_id), "--format", "json", env=env).stdout)
    assert [r["level"] for r in shown] == ["strip-2", "strip-1", "strip-0", "coins-2", "coins-1", "coins-0"]
    assert [r["cpu_s"] for r in shown] == sorted((r["cpu_s"] for r in shown), reverse=True)
    # Across runs: never decided and tried as often, they are not ordered by nodes either.
    again = build_run(db_url, [Planned(lv, "timeout", 10.1, 1.0, 10**9) for lv in coins[:1]], time_limit=10.0)
    assert again
    across = json.loads(invoke("report", "hardest", "--all", "--format", "json", env=env).stdout)
    assert across[0]["level"] == "coins-0"  # tried twice
    rest = across[1:]
    assert [r["level_hash"] for r in rest] == sorted(r["level_hash"] for r in rest)


def test_hardest_ranks_a_level_split_into_parts_by_its_parts_cpu_not_its_wall_time(db_url: str) -> None:
    """strip-1 took 2 s of wall on two processes but 8 s of CPU in its parts: it cost the most."""
    levels = [strip_level(i) for i in range(3)]
    planned = [Planned(levels[0], "solved", 5.0, 5.0), Planned(levels[1], "solved", 2.0, 8.0)]
    planned.append(Planned(levels[2], "solved", 3.0, 3.0))
    run_id = build_run(db_url, planned, time_limit=10.0)
    env = {"PACKSOLVE_DATABASE_URL": db_url}

    def ranked() -> list[str]:
        out = invoke("report", "hardest", "--run", str(run_id), "--by", "time", "--format", "json", env=env)
        assert out.returncode == 0, out.stderr
        return [r["level"] for r in json.loads(out.stdout)]

    assert ranked() == ["strip-0", "strip-2", "strip-1"]  # by wall time while nothing was split
    with session_scope(get_engine(db_url)) as session:
        session.add_all(
            Part(run_id=run_id, level_hash=levels[1].hash, heuristic="plain", part=i, parts=2, round=1,
                 status=Status.SOLVED if i else Status.NO_SOLUTION, nodes=10, wall_s=2.0, cpu_s=4.0)
            for i in range(2)
        )  # fmt: skip
    assert ranked() == ["strip-1", "strip-0", "strip-2"]
    # A run of several heuristics ranks each level by its best attempt, split ones by their parts' CPU.
    pairs = zip(planned, levels, strict=True)
    matrix = [
        Planned(lv, "solved", p.wall_s, p.cpu_s, heuristic=h) for p, lv in pairs for h in ("plain", "prune")
    ]
    run_id = build_run(db_url, matrix, heuristic="plain,prune", time_limit=10.0)
    assert ranked() == ["strip-0", "strip-2", "strip-1"]
    with session_scope(get_engine(db_url)) as session:
        session.add_all(
            Part(run_id=run_id, level_hash=levels[1].hash, heuristic=h, part=0, parts=1, round=1,
                 status=Status.SOLVED, nodes=10, wall_s=2.0, cpu_s=8.0)
            for h in ("plain", "prune")
        )  # fmt: skip
    assert ranked() == ["strip-1", "strip-0", "strip-2"]
    # Across runs too: a level's best time is what its quickest decided attempt cost.
    out = invoke("report", "hardest", "--all", "--by", "time", "--format", "json", env=env)
    assert out.returncode == 0, out.stderr
    across = json.loads(out.stdout)
    assert [(r["level"], r["best_wall_s"]) for r in across] == [
        ("strip-1", 8.0),
        ("strip-0", 5.0),
        ("strip-2", 3.0),
    ]


def test_hardest_across_runs_counts_each_level_once_and_sees_running_runs(db_url: str) -> None:
    a = build_run(db_url, RUN_A, time_limit=10.0)
    b = build_run(db_url, RUN_B, time_limit=5.0, heuristic="warnsdorff")
    # A run still going: LEVELS[3] is finally solved there, LEVELS[10] is still queued.
    c = build_run(
        db_url, [Planned(LEVELS[3], "solved", 3.0, 3.0, 600), Planned(LEVELS[10], None)], time_limit=20.0
    )
    limits = {a: 10.0, b: 5.0, c: 20.0}
    per_level: dict[str, list[dict]] = defaultdict(list)
    for run_id in (a, b, c):
        for r in records(db_url, run_id):
            if r["status"] not in NOT_RUN:
                per_level[r["level_hash"]].append({**r, "par2": par2_of(r, limits[run_id])})

    def key(rs: list[dict]) -> tuple:
        decided = [r for r in rs if r["status"] in DECIDED]
        if not decided:
            return (0, -max(r["par2"] for r in rs), -len(rs), rs[0]["level_hash"])
        return (1, -min(r["wall_s"] for r in decided), -min(r["nodes"] for r in decided))

    expected = sorted(per_level, key=lambda h: key(per_level[h]))
    with session_scope(get_engine(db_url)) as session:
        rows = hardest_overall(session, "par2", top=100)
        again = hardest_overall(session, "par2", top=100)  # folding twice must not count twice
    assert [r["level_hash"] for r in rows] == expected
    assert rows == again
    by_hash = {r["level_hash"]: r for r in rows}
    for h, rs in per_level.items():
        assert by_hash[h]["attempts"] == len(rs)
        assert by_hash[h]["solved"] == sum(r["status"] == "solved" for r in rs)
    assert by_hash[LEVELS[3].hash]["solved"] == 1  # only the running run solved it
    assert by_hash[LEVELS[3].hash]["max_par2_s"] == pytest.approx(20.0)  # 2 × run A's 10 s limit
    assert (
        rows[0]["level_hash"] == LEVELS[6].hash
    )  # memout 4 s, but under a 10 s limit: PAR-2 20 s, 4000 nodes
    with session_scope(get_engine(db_url)) as session:
        only_b = hardest_overall(session, "par2", top=100, kind="sudoku")
    assert only_b == []


def test_compare_footer_filters_and_provenance_warnings(db_url: str) -> None:
    a = build_run(db_url, RUN_A, time_limit=10.0, worker="w1@hostA")
    b = build_run(db_url, RUN_B, time_limit=5.0, heuristic="warnsdorff", worker="w2@hostB")
    ra, rb = (
        {r["level_hash"]: r for r in records(db_url, a)},
        {r["level_hash"]: r for r in records(db_url, b)},
    )
    with session_scope(get_engine(db_url)) as session:
        runs = [session.get(Run, a), session.get(Run, b)]
        full = compare_runs(session, runs)
        diff = compare_runs(session, runs, differs=True)
        diff_all = compare_runs(session, runs, differs=True, with_missing=True)
        only_b = compare_runs(session, runs, only_solved_by=runs[1])
    assert len(full["rows"]) == len(set(ra) | set(rb))
    # --differs: levels both runs attempted, with another status; with missing: the others too.
    expected_diff = {h for h in set(ra) & set(rb) if ra[h]["status"] != rb[h]["status"]}
    assert {r["level_hash"] for r in diff["rows"]} == expected_diff
    expected_all = {
        h for h in set(ra) | set(rb) if (ra.get(h) or {}).get("status") != (rb.get(h) or {}).get("status")
    }
    assert {r["level_hash"] for r in diff_all["rows"]} == expected_all > expected_diff
    expected_only_b = {
        h for h in rb if rb[h]["status"] in DECIDED and (h not in ra or ra[h]["status"] not in DECIDED)
    }
    assert (
        {r["level_hash"] for r in only_b["rows"]}
        == expected_only_b
        == {LEVELS[2].hash, LEVELS[5].hash, LEVELS[9].hash}
    )
    fa, fb = full["footer"]
    assert fa["solved"] == sum(r["status"] == "solved" for r in ra.values())
    assert fb["decided"] == sum(r["status"] in DECIDED for r in rb.values())
    assert fb["par2_s"] == pytest.approx(
        sum(p for r in rb.values() if (p := par2_of(r, 5.0)) is not None), abs=1e-3
    )
    both = [h for h in ra if h in rb and ra[h]["status"] in DECIDED and rb[h]["status"] in DECIDED]
    # Time limits 10 s and 5 s: times under different limits do not compare, so no speedup is given.
    assert (fb["speedup"], fb["speedup_levels"]) == (None, len(both)) and fa["speedup"] == 1.0
    assert fb["speedup_why_not"].startswith("time limits differ (run")
    # PAR-2 over the levels both ran: the same set for both runs, so the two sums compare.
    common = [
        h for h in ra if h in rb and par2_of(ra[h], 10.0) is not None and par2_of(rb[h], 5.0) is not None
    ]
    assert fa["common_levels"] == fb["common_levels"] == len(common) == 6
    assert fa["common_par2_s"] == pytest.approx(sum(par2_of(ra[h], 10.0) for h in common), abs=1e-3)
    assert fb["common_par2_s"] == pytest.approx(sum(par2_of(rb[h], 5.0) for h in common), abs=1e-3)
    assert fb["common_speedup"] is None and fb["par2_speedup"] is None  # PAR-2 penalties differ too
    warnings = " ".join(full["warnings"])
    assert "time_limit" in warnings and "hostB" in warnings and "hostA" in warnings


def test_show_finds_a_level_by_hash_prefix_or_name_with_its_best_solution(db_url: str) -> None:
    build_run(db_url, RUN_A, time_limit=10.0)
    build_run(db_url, RUN_B, time_limit=5.0, heuristic="warnsdorff")
    with session_scope(get_engine(db_url)) as session:
        by_prefix = level_report(session, LEVELS[0].hash[:10])
        by_name = level_report(session, "strip-0")
        with pytest.raises(LevelNotFound):
            level_report(session, "no-such-level")
    assert by_prefix == by_name
    assert [h["heuristic"] for h in by_prefix["history"]] == ["plain", "warnsdorff"]
    assert by_prefix["best"]["run"] == by_prefix["history"][1]["run"]  # same length, faster
    assert by_prefix["best"]["solution"] == [[0, 0], [0, 1]]


def test_progress_eta_is_remaining_levels_times_the_median_over_the_slots(db_url: str) -> None:
    attempts = [Planned(LEVELS[i], "solved", w, w, 10) for i, w in enumerate([1.0, 2.0, 3.0])]
    attempts += [Planned(LEVELS[i], None) for i in range(3, 8)]
    run_id = build_run(db_url, attempts, concurrency=2)
    with session_scope(get_engine(db_url)) as session:
        p = run_progress(session, session.get(Run, run_id))
    assert (p["done"], p["queued"], p["total"], p["finished"]) == (3, 5, 8, False)
    assert p["median_wall_s"] == 2.0 and p["parallel"] == 2
    assert p["eta_s"] == math.ceil(5 / 2) * 2.0 and p["eta_method"] == "median"


def test_cli_reports_print_the_documented_json_and_csv(sqlite_url: str) -> None:
    a = build_run(sqlite_url, RUN_A, time_limit=10.0, label="base")
    b = build_run(sqlite_url, RUN_B, time_limit=5.0, heuristic="warnsdorff")
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url}
    out = invoke("report", "summary", "base", "--format", "json", env=env)
    assert out.returncode == 0, out.stderr
    with session_scope(get_engine(sqlite_url)) as session:
        assert json.loads(out.stdout) == json.loads(json.dumps(run_summary(session, session.get(Run, a))))
    out = invoke("report", "hardest", "--run", str(b), "--top", "2", "--format", "csv", env=env)
    rows = list(csv.DictReader(io.StringIO(out.stdout)))
    assert [r["status"] for r in rows] == ["timeout", "timeout"] and rows[0]["nodes"] == "9000"
    out = invoke("report", "compare", "base", str(b), "--only-solved-by", str(b), "--format", "json", env=env)
    data = json.loads(out.stdout)
    assert {r["level"] for r in data["rows"]} == {"strip-2", "strip-5", "strip-9"}
    assert "warning" in out.stderr and "time_limit" in out.stderr
    out = invoke("show", "strip-1", "--format", "json", env=env)
    assert json.loads(out.stdout)["best"]["run"] == a
    out = invoke("status", str(b), "--format", "csv", env=env)
    row = next(csv.DictReader(io.StringIO(out.stdout)))
    assert row["done"] == "7" and row["count_solved"] == "4" and row["finished"] == "True"
    out = invoke("status", str(b), "--watch", "--interval", "0.1", "--format", "json", env=env)
    lines = out.stdout.splitlines()  # one object per refresh; a finished run needs one
    assert len(lines) == 1 and json.loads(lines[0])["eta_method"] == "done"
    out = invoke("report", "compare", str(a), env=env)
    assert out.returncode != 0 and "at least two runs" in out.stderr
    out = invoke("report", "hardest", "--run", str(a), "--all", env=env)
    assert out.returncode != 0 and "not both" in out.stderr
