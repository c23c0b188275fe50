"""Report building blocks without a database: PAR-2, hosts, escaping, plots, progress rows."""

from __future__ import annotations

from pathlib import Path

import pytest

from packsolve.figures.par2 import par2
from packsolve.outcome import Status
from packsolve.report.cactus import cactus_figure, save, scatter_figure, to_svg
from packsolve.report.html import ENV
from packsolve.report.metrics import host_of, median
from packsolve.report.progress import PROGRESS_COLUMNS, progress_row


@pytest.mark.parametrize(
    ("status", "wall", "limit", "expected"),
    [
        ("solved", 1.5, 10.0, 1.5),
        ("no_solution", 2.0, 10.0, 2.0),  # proving none exists is deciding the level
        ("timeout", 10.3, 10.0, 20.0),
        ("memout", 0.4, 10.0, 20.0),  # any undecided attempt pays the full penalty
        ("error", 0.1, None, 0.2),  # no time limit: twice its own time
        ("wrong", None, None, 0.0),
        ("invalid", None, 10.0, None),  # never ran
        ("cancelled", None, 10.0, None),
        ("queued", None, 10.0, None),
    ],
)
def test_par2_scores_decided_by_time_and_the_rest_by_twice_the_limit(status, wall, limit, expected) -> None:
    assert par2(status, wall, limit) == expected


def test_every_final_status_has_a_par2_rule() -> None:
    for s in Status:
        score = par2(s.value, 1.0, 5.0)
        assert score in (None, 1.0, 10.0)


@pytest.mark.parametrize(
    ("worker", "host"),
    [
        ("celery@gpu3", "gpu3"),
        ("local@laptop:1234", "laptop"),
        ("w1@test", "test"),
        ("bare", "bare"),
        (None, None),
    ],
)
def test_host_of_a_worker_name(worker, host) -> None:
    assert host_of(worker) == host


def test_median_ignores_missing_values() -> None:
    assert median([3.0, None, 1.0, 2.0]) == 2.0
    assert median([None]) is None


def test_html_cells_escape_and_pictures_are_data_images() -> None:
    cells = ENV.get_template("_cells.html").module
    assert str(cells.td("<script>alert(1)</script>")) == "<td>&lt;script&gt;alert(1)&lt;/script&gt;</td>"
    assert str(cells.td(1.23456, numeric=True)) == '<td class="n">1.235</td>'
    assert str(cells.td(None, cls='x"y')) == '<td class="x&#34;y">—</td>'
    img = str(cells.img('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>', 'a"b'))
    assert img.startswith('<img src="data:image/svg+xml;base64,') and "<script" not in img
    assert 'alt="a&#34;b"' in img
    assert str(cells.breakable("a/<b>:c")) == "a/<wbr>&lt;b&gt;:<wbr>c"


def test_plots_are_written_as_png_svg_or_pdf(tmp_path: Path) -> None:
    cactus = cactus_figure(
        [
            {"run": 1, "label": "run 1 (plain)", "decided": 3, "times": [0.1, 0.5, 2.0]},
            {"run": 2, "label": "run 2 (warnsdorff)", "decided": 0, "times": []},
        ]
    )
    assert save(cactus, tmp_path / "c.png").read_bytes()[:4] == b"\x89PNG"
    assert "<svg" in save(cactus, tmp_path / "c.svg").read_text()
    assert save(cactus, tmp_path / "c.pdf").read_bytes()[:4] == b"%PDF"
    with pytest.raises(ValueError, match=r"\.png, \.svg, \.pdf"):
        save(cactus, tmp_path / "c.jpg")
    scatter = scatter_figure(
        {
            "x_run": 1,
            "x_label": "a",
            "y_run": 2,
            "y_label": "b",
            "points": [
                {
                    "level": "l",
                    "level_hash": "h",
                    "x": 1.0,
                    "y": 0.5,
                    "x_status": "solved",
                    "y_status": "solved",
                },
                {
                    "level": "m",
                    "level_hash": "i",
                    "x": 20.0,
                    "y": 0.5,
                    "x_status": "timeout",
                    "y_status": "solved",
                },
            ],
        }
    )
    assert to_svg(scatter).lstrip().startswith("<?xml")


def test_progress_csv_row_has_the_same_columns_whatever_the_counts() -> None:
    p = {
        "run": 1,
        "label": None,
        "state": "running",
        "total": 3,
        "done": 1,
        "queued": 2,
        "running": 0,
        "counts": {"solved": 1, "queued": 2},
        "finished": False,
        "elapsed_s": 1.0,
        "rate_per_s": 1.0,
        "median_wall_s": 0.5,
        "parallel": 1,
        "eta_s": 1.0,
        "eta_method": "median",
    }
    row = progress_row(p)
    assert list(row) == PROGRESS_COLUMNS
    assert row["count_solved"] == 1 and row["count_timeout"] == 0
