"""What a user reads after a night, on SQLite and PostgreSQL: why levels failed, one answer after reruns,
exports by extension, plots that say when there is nothing to plot."""

from __future__ import annotations

import csv
import io
import json
import re
import shlex
from pathlib import Path

import pytest

from packsolve.figures.failures import pattern
from packsolve.report.text import short_message, short_name
from tests.support.inprocess import invoke
from tests.support.report_runs import Planned, build_run, strip_level

LEVELS = [strip_level(i, name=f"/home/user/packs/night/deep/folder/level-{i}.json") for i in range(8)]
OOM = "memory limit 100 MB reached (MemoryError)"


def cli(url: str, *args: str, code: int = 0, cwd: Path | None = None) -> str:
    """Run the CLI on url; assert its exit code; return stdout."""
    res = invoke(*args, env={"PACKSOLVE_DATABASE_URL": url}, cwd=cwd)
    assert res.returncode == code, (res.returncode, res.stdout, res.stderr)
    return res.stdout


def night(url: str) -> tuple[int, int]:
    """A run with timeouts, memouts and an error, and a rerun that solved some of them."""
    parent = build_run(
        url,
        [
            Planned(LEVELS[0], "solved", 0.5),
            Planned(LEVELS[1], "timeout", 10.1, message="time limit 10 s reached after 81234 nodes"),
            Planned(LEVELS[2], "timeout", 10.2, message="time limit 10 s reached after 99120 nodes"),
            Planned(LEVELS[3], "timeout", 10.1, message="time limit 10 s reached after 5120 nodes"),
            Planned(LEVELS[4], "memout", 3.0, message=OOM),
            Planned(LEVELS[5], "error", 0.1, message="RecursionError: maximum recursion depth exceeded"),
            Planned(LEVELS[6], "solved", 1.0),
        ],
        time_limit=10.0,
        label="monday",
    )
    child = build_run(
        url,
        [
            Planned(LEVELS[1], "solved", 2.0),
            Planned(LEVELS[2], "timeout", 20.3, message="time limit 20 s reached after 300000 nodes"),
            Planned(LEVELS[3], "solved", 4.0),
        ],
        time_limit=20.0,
        heuristic="warnsdorff",
        label="more-time",
        parent=parent,
    )
    return parent, child


def test_report_failures_groups_by_status_and_message_with_examples_and_the_command_to_rerun(db_url):
    night(db_url)
    res = invoke("report", "failures", "monday", "--format", "json", env={"PACKSOLVE_DATABASE_URL": db_url})
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert (data["failed"], data["total"]) == (5, 7)
    groups = {(g["status"], g["count"]): g for g in data["groups"]}
    assert list(groups) == [("timeout", 3), ("error", 1), ("memout", 1)]
    timeouts = groups[("timeout", 3)]
    assert timeouts["pattern"] == "time limit N s reached after N nodes"
    assert timeouts["message"] == "time limit 10 s reached after 81234 nodes"  # the first, whole
    assert timeouts["examples"] == [lv.name for lv in LEVELS[1:4]] and timeouts["kinds"] == {"onestroke": 3}
    assert re.fullmatch(r"timeout:[0-9a-f]{8}", timeouts["key"])
    assert timeouts["rerun"] == f"packsolve rerun 1 --group {timeouts['key']} --time-limit 20"
    error = groups[("error", 1)]
    assert error["rerun"] == f"packsolve rerun 1 --group {error['key']}"
    table = cli(db_url, "report", "failures", "monday")
    assert "timeout × 3" in table and f"packsolve rerun 1 --group {timeouts['key']}" in table
    assert "…/deep/folder/level-1.json" in table or LEVELS[1].name in table
    rows = list(csv.DictReader(io.StringIO(cli(db_url, "report", "failures", "1", "--format", "csv"))))
    assert [r["status"] for r in rows] == ["timeout", "error", "memout"] and rows[2]["message"] == OOM


def test_the_printed_rerun_command_reruns_exactly_its_group(db_url, tmp_path):
    """Two kinds of error in one run: the --group of each group's command picks that group only."""
    parent = build_run(
        db_url,
        [
            Planned(LEVELS[0], "error", 0.1, message="RecursionError: maximum recursion depth exceeded"),
            Planned(LEVELS[1], "error", 0.1, message="solver process died from signal SIGSEGV"),
            Planned(LEVELS[2], "error", 0.1, message="RecursionError: maximum recursion depth exceeded"),
        ],
        heuristic="plain",
    )
    data = json.loads(cli(db_url, "report", "failures", str(parent), "--format", "json"))
    [recursion] = [g for g in data["groups"] if g["count"] == 2]
    args = shlex.split(recursion["rerun"])[1:]  # as a shell reads it
    assert args[args.index("--group") + 1] == recursion["key"]
    child = json.loads(cli(db_url, *args, "--local", "-q", "--format", "json"))["run"]  # the child's summary
    res = invoke("export", str(child), env={"PACKSOLVE_DATABASE_URL": db_url})
    assert sorted(json.loads(line)["level"] for line in res.stdout.splitlines()) == [
        LEVELS[0].name,
        LEVELS[2].name,
    ]


def test_messages_appear_wherever_a_status_is_shown_whole_in_json(db_url):
    parent, child = night(db_url)
    hardest = json.loads(cli(db_url, "report", "hardest", "--run", "monday", "--format", "json"))
    assert {r["level"]: r["message"] for r in hardest}[LEVELS[4].name] == OOM
    compare = json.loads(cli(db_url, "report", "compare", "monday", "more-time", "--format", "json"))
    by_level = {r["level"]: r["results"] for r in compare["rows"]}
    assert by_level[LEVELS[2].name][1]["message"] == "time limit 20 s reached after 300000 nodes"
    summary = json.loads(cli(db_url, "report", "summary", "monday", "--format", "json"))
    assert summary["messages"]["memout"] == {"level": LEVELS[4].name, "message": OOM}
    shown = json.loads(cli(db_url, "show", LEVELS[2].hash, "--format", "json"))
    assert [h["message"] for h in shown["history"]][1].startswith("time limit 20 s")
    for args in (
        ["report", "hardest", "--run", "monday"],
        ["report", "summary", "monday"],
        ["report", "compare", "monday", "more-time"],
        ["show", LEVELS[4].hash],
    ):
        assert "memory limit 100 MB" in cli(db_url, *args) or "time limit" in cli(db_url, *args), args


def test_compare_differs_keeps_levels_both_runs_attempted_and_the_footer_compares_the_same_levels(db_url):
    night(db_url)
    data = json.loads(
        cli(db_url, "report", "compare", "monday", "more-time", "--differs", "--format", "json")
    )
    assert [r["level"] for r in data["rows"]] == [LEVELS[1].name, LEVELS[3].name]
    wider = json.loads(
        cli(
            db_url,
            "report",
            "compare",
            "monday",
            "more-time",
            "--differs",
            "--with-missing",
            "--format",
            "json",
        )
    )
    assert len(wider["rows"]) == 6  # every level but LEVELS[2], which timed out in both
    first, second = data["footer"]
    assert first["common_levels"] == second["common_levels"] == 3
    assert first["common_par2_s"] == pytest.approx(3 * 20.0)  # three timeouts at 2 x 10 s
    assert second["common_par2_s"] == pytest.approx(2.0 + 40.0 + 4.0)
    assert second["common_speedup"] is None  # 10 s against 20 s: the PAR-2 penalties differ
    table = cli(db_url, "report", "compare", "monday", "more-time", "--differs")
    assert (
        "60.00" in table and "46.00" in table and "the 3" in table and "all ran" in table
    )  # the label may wrap
    assert "×" not in table and "no speedup: time limits differ" in table


def test_summary_with_reruns_gives_each_level_its_best_result_and_the_run_that_got_it(db_url):
    parent, child = night(db_url)
    merged = json.loads(cli(db_url, "report", "summary", "monday", "--with-reruns", "--format", "json"))
    assert (merged["run"], merged["reruns"], merged["total"]) == (parent, [child], 7)
    assert (merged["solved"], merged["before"]["solved"]) == (4, 2)
    best = {r["level"]: (r["status"], r["run"]) for r in merged["levels"]}
    assert best[LEVELS[1].name] == ("solved", child) and best[LEVELS[3].name] == ("solved", child)
    assert best[LEVELS[2].name] == ("timeout", child)  # a failure either way: the latest says more
    assert best[LEVELS[0].name] == ("solved", parent) and best[LEVELS[4].name] == ("memout", parent)
    assert [(r["run"], r["best_for"]) for r in merged["runs"]] == [(parent, 4), (child, 3)]
    table = cli(db_url, "report", "summary", "monday", "--with-reruns")
    assert "4 of 7 (run 1 alone: 2)" in table and "levels whose best result came from a rerun" in table
    rows = list(
        csv.DictReader(io.StringIO(cli(db_url, "report", "summary", "1", "--with-reruns", "--format", "csv")))
    )
    assert len(rows) == 7 and {r["run"] for r in rows} == {str(parent), str(child)}
    alone = cli(db_url, "report", "summary", "more-time", "--with-reruns")
    assert "it has none" in alone


def test_summary_with_reruns_gives_the_run_alone_s_par2_beside_the_merged_one(db_url):
    # The merged PAR-2 takes an undecided level's latest result at its rerun's own limit: it may
    # grow while more levels are solved, so the run's own PAR-2 is given beside it, as solved's is.
    night(db_url)
    merged = json.loads(cli(db_url, "report", "summary", "monday", "--with-reruns", "--format", "json"))
    own = json.loads(cli(db_url, "report", "summary", "monday", "--format", "json"))
    assert merged["before"]["par2_s"] == pytest.approx(own["par2_s"], abs=1e-3)
    table = cli(db_url, "report", "summary", "monday", "--with-reruns")
    line = f"{merged['par2_s']:.2f} s (run {merged['run']} alone: {own['par2_s']:.2f} s)"
    assert any("PAR-2" in x and line in x for x in table.splitlines()), table


def test_export_picks_the_format_from_the_file_name_and_json_is_one_array(db_url, tmp_path):
    night(db_url)
    for name, check in (
        ("x.jsonl", lambda t: [json.loads(x) for x in t.splitlines()]),
        ("x.json", json.loads),
        ("x.csv", lambda t: list(csv.DictReader(io.StringIO(t)))),
    ):
        cli(db_url, "export", "monday", "-o", str(tmp_path / name))
        records = check((tmp_path / name).read_text())
        assert len(records) == 7 and records[4]["message"] == OOM, name
    assert json.loads(cli(db_url, "export", "monday", "--format", "json"))[0]["level"] == LEVELS[0].name
    cli(db_url, "export", "monday", "-o", str(tmp_path / "y.json"), "--format", "csv")  # --format wins
    assert (tmp_path / "y.json").read_text().startswith("run,level,")
    res = invoke("export", "monday", "-o", str(tmp_path / "x.txt"), env={"PACKSOLVE_DATABASE_URL": db_url})
    assert res.returncode == 2 and ".csv, .json, .jsonl" in res.stderr


def test_cactus_without_an_output_file_prints_its_table_and_writes_nothing(db_url, tmp_path):
    run_id = build_run(db_url, [Planned(LEVELS[0], "solved", 1.5), Planned(LEVELS[1], "solved", 3.25)])
    here = tmp_path / "here"
    here.mkdir()
    res = invoke("report", "cactus", str(run_id), env={"PACKSOLVE_DATABASE_URL": db_url}, cwd=here)
    assert res.returncode == 0, res.stderr
    assert re.search(r"│ run 1 \(plain\) │\s+2 │\s+1\.500 │\s+3\.250 │", res.stdout), res.stdout
    assert list(here.iterdir()) == [] and "plot" not in res.stderr
    data = json.loads(cli(db_url, "report", "cactus", str(run_id), "--format", "json"))
    assert data["cactus"][0]["decided"] == 2 and data["scatter"] is None


def test_a_cactus_of_a_run_with_nothing_decided_says_so_and_plots_are_named_by_extension(db_url, tmp_path):
    run_id = build_run(db_url, [Planned(LEVELS[0], "timeout", 10.0), Planned(LEVELS[1], "memout", 1.0)])
    cli(db_url, "report", "cactus", str(run_id), "-o", str(tmp_path / "c.svg"))
    svg = (tmp_path / "c.svg").read_text()
    assert "nothing decided" in svg or re.search(r"<!-- nothing decided", svg) or "nothing" in svg
    cli(db_url, "report", "cactus", str(run_id), "-o", str(tmp_path / "c.pdf"))
    assert (tmp_path / "c.pdf").read_bytes()[:4] == b"%PDF"
    res = invoke(
        "report", "cactus", str(run_id), "-o", str(tmp_path / "c.jpg"), env={"PACKSOLVE_DATABASE_URL": db_url}
    )
    assert res.returncode == 2 and ".png, .svg, .pdf" in res.stderr
    res = invoke("report", "html", "-o", str(tmp_path / "r.png"), env={"PACKSOLVE_DATABASE_URL": db_url})
    assert res.returncode == 2 and ".html" in res.stderr


def test_the_html_report_shows_why_levels_failed_and_the_run_merged_with_its_reruns(db_url, tmp_path):
    night(db_url)
    cli(db_url, "report", "html", "monday", "-o", str(tmp_path / "r.html"))
    page = (tmp_path / "r.html").read_text()
    assert "Why levels failed" in page and "Run 1 with its reruns" in page
    assert OOM in page and "time limit 20 s reached after 300000 nodes" in page  # whole, in the merged view
    assert re.search(r"packsolve rerun 1 --group timeout:[0-9a-f]{8} --time-limit 20", page)
    assert 'class="plots"' in page and "word-break:break-all" not in page


def test_terminal_names_are_shortened_from_the_left_and_messages_cut_between_words():
    name = "/home/user/packs/night/deep/folder/level-12.json:7"
    assert short_name(name, 30) == "…/deep/folder/level-12.json:7"
    # A file name too long for the width loses its start: its end and :LINE stay, in the width.
    assert short_name(name, 12) == "…l-12.json:7"
    assert short_name(name, 3) == "…n:7"  # its :LINE and a character of the name, whatever the width
    assert short_name("short.json", 30) == "short.json"
    assert short_message(f"{name}: bad JSON at line 3", name) == "bad JSON at line 3"
    cut = short_message("the tiles form an odd permutation of the goal but the blank", width=30)
    assert cut == "the tiles form an odd…" and len(cut) <= 30
    assert pattern(f"{name}: file is 123 bytes, above the 100-byte cap", name) == (
        "file is N bytes, above the N-byte cap"
    )
