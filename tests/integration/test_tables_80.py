"""Every table for people holds at 80 columns as at 200: each figure whole, on its label's line.

Two runs with long level names, figures of many digits (123,456,789 nodes, 25,030.00 s) and a
long label; each command runs as a user runs it, with COLUMNS set, and its lines are read against
the figures of its own `--format json`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from packsolve.levels import make_level
from packsolve.report.text import visible
from tests.support.inprocess import invoke
from tests.support.report_runs import Planned, build_run, strip_level

PACKS = Path(__file__).resolve().parents[2] / "examples" / "packs"


@pytest.fixture(scope="module")
def night(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A database of three runs of the same 150 levels: long names, big figures, one with a long label."""
    url = f"sqlite:///{tmp_path_factory.mktemp('tables') / 'night.db'}"
    stroke = [
        # A control character in a name is shown as `\x1b`: four columns where one was counted.
        strip_level(i, name=f"night/onestroke/very/long/folder/name/\x1b[1mlevel-{i:04d}.stroke:{i}")
        for i in range(30)
    ]
    coins = [
        make_level(f"night/coins/sixty_notes.jsonl:{i}", {"kind": "coins", "notes": [2, 4 + i], "target": 99})
        for i in range(10)
    ]
    # Many levels of a short file name in a folder (`…/tours.knights:1`): footers of 16 columns and more.
    tours = [strip_level(100 + i, name=f"night/tours/knights/tours.knights:{i + 1}") for i in range(110)]
    first = [Planned(lv, "solved", 0.01, 0.01, 41 + i) for i, lv in enumerate(tours)]
    first += [
        Planned(
            lv,
            "solved" if i % 3 else "timeout",
            1234.5 + i,
            1200.25 + i,
            228_560 + 1000 * i,
            "time limit 2 s",
        )
        for i, lv in enumerate(stroke)
    ]
    first += [
        Planned(lv, "timeout", 2.1, 2.0, 123_456_789 + i, "CPU time limit reached")
        for i, lv in enumerate(coins)
    ]
    build_run(url, first, time_limit=2.0, label="monday-night-long-label")
    second = [Planned(lv, "solved", 0.02, 0.02, 7) for lv in tours]
    second += [Planned(lv, "solved", 0.5 + i, 0.4 + i, 1000 + i) for i, lv in enumerate(stroke)]
    second += [Planned(lv, "no_solution", 0.25, 0.2, 5) for lv in coins]
    build_run(url, second, time_limit=2.0, heuristic="warnsdorff", label="tuesday")
    third = [Planned(lv, "solved", 0.02, 0.02, 7) for lv in tours]
    third += [Planned(lv, "solved", 0.75 + i, 0.7 + i, 2000 + i) for i, lv in enumerate(stroke)]
    third += [Planned(lv, "no_solution", 0.5, 0.4, 7) for lv in coins]
    build_run(url, third, time_limit=2.0, heuristic="prune", label="wednesday")
    return url


def shown(url: str, columns: int, *args: str) -> list[str]:
    """Return the lines a command prints at this terminal width; fail if one is wider."""
    res = invoke(*args, env={"PACKSOLVE_DATABASE_URL": url, "COLUMNS": str(columns)})
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert max(len(line.rstrip()) for line in lines) <= columns, "\n".join(lines)
    return lines


def data(url: str, *args: str) -> Any:
    res = invoke(*args, "--format", "json", env={"PACKSOLVE_DATABASE_URL": url})
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def on_one_line(lines: list[str], *pieces: str) -> None:
    """Assert one line holds every piece, whole: a figure beside its label, not cut or moved."""
    assert any(all(p in line for p in pieces) for line in lines), (pieces, "\n".join(lines))


def name_of(line: str, name: str) -> bool:
    """Return True if the line shows the level name on it, whole or shortened from the left, ending
    with its :LINE: a name is never wrapped, so no part of it (a line number) sits on another row."""
    full = visible(name)
    end = re.search(r":\d+$", full)
    for word in line.split():
        if word == full or (word.startswith("…") and len(word) > 1 and full.endswith(word[1:])):
            return end is None or word.endswith(end.group(0))
    return False


def named_rows(lines: list[str], rows: list[tuple[str, list[str]]]) -> None:
    """Assert each (name, pieces) has one line holding its name (see name_of) and every piece."""
    for name, pieces in rows:
        assert any(name_of(line, name) and all(p in line for p in pieces) for line in lines), (
            name,
            pieces,
            "\n".join(lines),
        )


WIDTHS = [80, 200]


@pytest.mark.parametrize("columns", WIDTHS)
def test_report_summary(night: str, columns: int) -> None:
    lines = shown(night, columns, "report", "summary", "1")
    for kind, f in data(night, "report", "summary", "1")["kinds"].items():
        on_one_line(
            lines, f" {kind} ", f"{f['total']:,}", f"{f['cpu_s_total']:,.2f} s", f"{f['par2_s']:,.2f} s"
        )


@pytest.mark.parametrize("columns", WIDTHS)
@pytest.mark.parametrize("runs", [["1", "2"], ["1", "2", "3"]])
def test_report_compare_names_stay_on_their_row(night: str, columns: int, runs: list[str]) -> None:
    lines = shown(night, columns, "report", "compare", *runs)
    named_rows(
        lines,
        [
            (r["level"], [f" {r['kind']} ", *[c["status"] if c else "(not run)" for c in r["results"]]])
            for r in data(night, "report", "compare", *runs)["rows"]
        ],
    )


@pytest.mark.parametrize("columns", [*WIDTHS, 100])
@pytest.mark.parametrize("runs", [["1", "2"], ["1", "2", "3"]])
def test_report_compare_footer_figures_sit_beside_their_labels(
    night: str, columns: int, runs: list[str]
) -> None:
    lines = shown(night, columns, "report", "compare", *runs)
    doc = data(night, "report", "compare", *runs)
    feet = doc["footer"]
    on_one_line(
        lines,
        "solved",  # the label may wrap; its figures stay on its first line
        *[f"{f['solved']:,} ({f['decided']:,}) of {f['levels']:,}" for f in feet],
    )
    on_one_line(lines, "PAR-2 s on the", *[f"{f['common_par2_s']:,.2f}" for f in feet])
    on_one_line(lines, "peak memory", *[f"{f['peak_rss_mb']:,.0f} MB" for f in feet])
    text = "\n".join(lines)
    for row in doc["rows"]:
        for cell in row["results"]:
            assert f"{cell['nodes']:,}n" in text and f"{cell['wall_s']:.3f}s" in text


@pytest.mark.parametrize("columns", WIDTHS)
def test_report_curve_never_splits_a_number(night: str, columns: int) -> None:
    lines = shown(night, columns, "report", "curve", "1")
    for p in data(night, "report", "curve", "1")["points"]:
        on_one_line(lines, f" {p['kind']} ", f"{p['nodes_median']:,.0f}", f"{p['nodes_max']:,.0f}")


@pytest.mark.parametrize("columns", WIDTHS)
@pytest.mark.parametrize("which", [["--run", "1"], ["--all"]])
def test_report_hardest(night: str, columns: int, which: list[str]) -> None:
    lines = shown(night, columns, "report", "hardest", *which)
    for r in data(night, "report", "hardest", *which):
        if "attempts" in r:
            on_one_line(lines, f" {r['rank']} ", f"{r['best_nodes']:,}", f"{r['max_par2_s']:,.3f}")
        else:
            on_one_line(lines, f" {r['rank']} ", r["status"], f"{r['wall_s']:,.3f}", f"{r['nodes']:,}")


@pytest.mark.parametrize("columns", WIDTHS)
@pytest.mark.parametrize("which", [["--run", "1"], ["--all"]])
def test_report_hardest_names_stay_on_their_row(night: str, columns: int, which: list[str]) -> None:
    lines = shown(night, columns, "report", "hardest", *which)
    named_rows(
        lines,
        [
            (r["level"], [f" {r['rank']} ", f"{r.get('nodes', r.get('best_nodes')):,}"])
            for r in data(night, "report", "hardest", *which)
        ],
    )


@pytest.mark.parametrize("columns", WIDTHS)
def test_report_failures(night: str, columns: int) -> None:
    lines = shown(night, columns, "report", "failures", "1")
    for g in data(night, "report", "failures", "1")["groups"]:
        on_one_line(lines, f"{g['status']} × {g['count']:,}")
        on_one_line(lines, g["rerun"])


@pytest.mark.parametrize("columns", WIDTHS)
def test_status_and_runs(night: str, columns: int) -> None:
    p = data(night, "status", "1")
    on_one_line(shown(night, columns, "status", "1"), f"{p['done']}/{p['total']} final")
    on_one_line(shown(night, columns, "status", "1"), "run 1 (monday-night-long-label)")
    lines = shown(night, columns, "runs")
    for r in data(night, "runs"):
        on_one_line(lines, f" {r['run']} ", f"{r['solved']}/{r['total']}")


@pytest.mark.parametrize("columns", WIDTHS)
def test_check(night: str, columns: int) -> None:
    lines = shown(night, columns, "check", str(PACKS))
    for kind, k in data(night, "check", str(PACKS))["kinds"].items():
        on_one_line(lines, f" {kind} ", f" {k['levels']} ")
