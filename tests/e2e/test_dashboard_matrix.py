"""A run of several heuristics side by side on the dashboard: its matrix page is `report matrix`'s figures
(cells, best marks, totals, the virtual best solver, the sort), its run page has a row per heuristic as
`report summary` gives them, a scatter of any two columns, a cactus line per heuristic; what a user
mistypes is a one-line 400 or 404."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest

from tests.e2e.test_dashboard import cli_json
from tests.support.dashboard import serving
from tests.support.inprocess import invoke
from tests.support.report_runs import Planned, build_run, strip_level

pytestmark = pytest.mark.browser

HEURISTICS = ("plain", "warnsdorff", "prune")
# The rows of the matrix table as the page shows them: the level's hash, each cell's text and best mark.
ROWS = """() => Array.from(document.querySelectorAll('#matrix tbody tr')).map(tr => [tr.dataset.level,
  Array.from(tr.cells).slice(2).map(td => [td.textContent.trim(), td.classList.contains('best')])])"""


@pytest.fixture
def matrix(sqlite_url: str) -> dict[str, int]:
    """A run of six levels, each tried with plain, warnsdorff and prune (the last level without prune),
    each heuristic best somewhere, timeouts and an error among them; and a run of one heuristic."""
    plan = []
    for i in range(6):
        lv = strip_level(
            60 + i, name=f"pack/a-rather-long-directory-name/level-{i}.stroke" if i else "<b>x</b>"
        )
        # plain: best on the last level (prune did not run it), a timeout on the odd ones before.
        solved, wall = (True, 0.1) if i == 5 else (i % 2 == 0, 0.3 + 0.1 * i)
        status = "solved" if solved else "timeout"
        plan.append(Planned(lv, status, wall, 0.2, 10 + i, "", 20.0, "plain"))
        status = "error" if i == 3 else "solved"
        plan.append(
            Planned(lv, status, 0.2 + 0.05 * i, 0.1, 5 + i, "boom" if i == 3 else "", 30.0, "warnsdorff")
        )
        if i < 5:
            plan.append(Planned(lv, "solved", 0.65 - 0.1 * i, 0.1, 7 + i, "", 25.0, "prune"))
    ids = {"matrix": build_run(sqlite_url, plan, heuristic=",".join(HEURISTICS), time_limit=1.0, label="mx")}
    ids["single"] = build_run(sqlite_url, [Planned(strip_level(70), "solved", 0.1)], time_limit=1.0)
    return ids


def test_the_matrix_page_shows_report_matrix_s_cells_best_marks_totals_and_sort(
    page: Any, sqlite_url: str, tmp_path: Any, matrix: dict[str, int]
) -> None:
    run = matrix["matrix"]
    data = cli_json(sqlite_url, "report", "matrix", str(run))
    labels = [c["label"] for c in data["columns"]]
    assert labels == list(HEURISTICS) and {r["best"] for r in data["rows"]} == {0, 1, 2}
    wide = invoke("report", "matrix", str(run), env={"PACKSOLVE_DATABASE_URL": sqlite_url, "COLUMNS": "300"})
    with serving(sqlite_url, log_dir=tmp_path) as served:
        page.goto(f"{served.url}runs/{run}")
        with page.expect_navigation():
            page.click("#matrix-link")
        assert page.url == f"{served.url}runs/{run}/matrix"
        assert page.locator("#matrix thead th").all_inner_texts() == ["level", "kind", *labels]
        shown = page.evaluate(ROWS)
        assert [h for h, _ in shown] == [r["level_hash"] for r in data["rows"]]
        for (_, cells), row in zip(shown, data["rows"], strict=True):
            for j, ((text, best), cell) in enumerate(zip(cells, row["cells"], strict=True)):
                assert best == (row["best"] == j), (row["level"], j)
                if cell is None:
                    assert text == "—"
                    continue
                status, wall = text.removeprefix("★ ").split()
                assert text.startswith("★ ") == best and status == cell["status"]
                assert float(wall) == pytest.approx(cell["wall_s"], abs=1e-4)
        # A level's name is text, and links its page.
        assert (
            page.locator("#matrix tbody a", has_text="<b>x</b>").get_attribute("href").startswith("/levels/")
        )
        foot = {r: page.locator(f"#{r} td").all_inner_texts() for r in ("decided", "par2", "best-on")}
        assert foot["decided"] == [str(c["decided"]) for c in data["columns"]]
        assert [float(x) for x in foot["par2"]] == [
            pytest.approx(c["par2_s"], abs=1e-3) for c in data["columns"]
        ]
        assert foot["best-on"] == [str(c["best_on"]) for c in data["columns"]]
        # The virtual best solver's line is the one `report matrix` prints.
        assert " ".join(page.inner_text("#vbs").split()) in " ".join(wide.stdout.split())
        assert data["virtual_best"]["levels"] == 5  # the level prune did not run counts in no total

        # Clicking a column's header sorts the levels by its PAR-2 (not by its text), "—" last.
        page.click("#matrix thead th[data-column=prune]")
        order = [h for h, _ in page.evaluate(ROWS)]
        prune = sorted(
            data["rows"],
            key=lambda r: (r["cells"][2] is None, r["cells"][2]["par2_s"] if r["cells"][2] else 0),
        )
        assert order == [r["level_hash"] for r in prune]
        # The server's sort is `report matrix --sort`'s, chosen in the form.
        page.select_option("select[name=sort]", "warnsdorff")
        with page.expect_navigation():
            page.click("#matrix-form button")
        by_cli = cli_json(sqlite_url, "report", "matrix", str(run), "--sort", "warnsdorff")
        assert [h for h, _ in page.evaluate(ROWS)] == [r["level_hash"] for r in by_cli["rows"]]
        assert "sort=warnsdorff" in page.url
        # A page of rows at a time; the totals stay the whole matrix's.
        page.goto(f"{served.url}runs/{run}/matrix?rows=4&page=2")
        assert [h for h, _ in page.evaluate(ROWS)] == [r["level_hash"] for r in data["rows"][4:]]
        assert "levels 5 to 6 of 6" in page.inner_text("#pager")
        assert page.locator("#decided td").all_inner_texts() == foot["decided"]
        # Several runs side by side, as `report matrix A B`.
        both = cli_json(sqlite_url, "report", "matrix", str(matrix["single"]), str(run))
        page.goto(f"{served.url}matrix?runs={matrix['single']},{run}")
        assert page.locator("#matrix thead th").all_inner_texts()[2:] == [c["label"] for c in both["columns"]]
        assert len(page.evaluate(ROWS)) == len(both["rows"])
        assert not page.errors


def test_a_matrix_run_s_page_has_a_row_per_heuristic_as_report_summary_gives_it(
    page: Any, sqlite_url: str, tmp_path: Any, matrix: dict[str, int]
) -> None:
    run = matrix["matrix"]
    summary = cli_json(sqlite_url, "report", "summary", str(run))
    with serving(sqlite_url, log_dir=tmp_path) as served:
        page.goto(f"{served.url}runs/{run}")
        rows = page.locator("#heuristics tbody tr")
        assert [r.get_attribute("data-heuristic") for r in rows.all()] == sorted(HEURISTICS)
        for r in rows.all():
            f = summary["by_heuristic"][r.get_attribute("data-heuristic")]
            cells = r.locator("td").all_inner_texts()
            assert cells[1:4] == [str(f["solved"]), str(f["decided"]), str(f["total"])]
            assert float(cells[4]) == pytest.approx(f["wall_s_max"], abs=1e-3)
            assert float(cells[6]) == pytest.approx(f["par2_s"], abs=1e-2)
            peak = summary["memory"]["by_heuristic"][r.get_attribute("data-heuristic")]
            assert float(cells[7]) == pytest.approx(peak)
        # A heuristic's name filters the attempts to its own.
        with page.expect_navigation():
            page.click("#heuristics a >> text=prune")
        assert set(page.locator("table.attempts tbody td:nth-child(4)").all_inner_texts()) == {"prune"}
        # A run of one heuristic has neither the table nor a matrix.
        page.goto(f"{served.url}runs/{matrix['single']}")
        assert page.locator("#heuristics").count() == 0 and page.locator("#matrix-link").count() == 0
        assert not page.errors


def test_the_scatter_of_two_columns_and_the_cactus_lines_are_the_matrix_s_heuristics(
    page: Any, sqlite_url: str, tmp_path: Any, matrix: dict[str, int]
) -> None:
    run = matrix["matrix"]
    data = cli_json(sqlite_url, "report", "matrix", str(run))
    cactus = cli_json(sqlite_url, "report", "cactus", str(run))["cactus"]
    x, y = labels = ["prune", "plain"]
    i, j = (HEURISTICS.index(c) for c in labels)
    both = [(r, r["cells"][i], r["cells"][j]) for r in data["rows"] if r["cells"][i] and r["cells"][j]]
    with serving(sqlite_url, log_dir=tmp_path) as served:
        page.goto(f"{served.url}runs/{run}/matrix")
        with page.expect_navigation():
            page.click("#pairs a >> text=plain × prune")
        with page.expect_navigation():
            page.click("#scatter a >> text=swap the axes")
        assert "scatter=prune%2Cplain" in page.url
        assert (page.inner_text("#scatter-x"), page.inner_text("#scatter-y")) == (x, y)
        points = page.locator("#scatter svg circle title").all_text_contents()
        assert len(points) == len(both) == 5
        for r, a, b in both:
            said = f"{r['level']} (onestroke): {a['status']} {a['par2_s']} s vs {b['status']} {b['par2_s']} s"
            assert said in points
        # The plots page draws a cactus line per heuristic: the legend counts what report cactus counts.
        page.goto(f"{served.url}plots?runs={run}")
        legend = page.locator("#cactus ul.legend li").all_inner_texts()
        assert legend == [f"{c['label']}: {c['decided']} decided" for c in cactus]
        assert page.locator("#cactus svg polyline").count() == 3
        assert page.locator("#matrix-runs a").get_attribute("href") == f"/runs/{run}/matrix"
        assert not page.errors


def error_line(body: str) -> str:
    found = re.search(r'id="error-message">(.*?)</p>', body, re.S)
    assert found, body[:500]
    return html.unescape(found.group(1))


# What a user may get wrong, the status and a piece of the one line that says so.
MISTAKES = [
    (
        "runs/{matrix}/matrix?scatter=plain,nope",
        400,
        "name two columns as X,Y, from plain, warnsdorff, prune",
    ),
    ("runs/{matrix}/matrix?scatter=plain", 400, "name two columns as X,Y"),
    ("runs/{matrix}/matrix?sort=nope", 400, "'nope' is not a sort here; choose from level, best, plain"),
    ("runs/{matrix}/matrix?kind=sudoku", 400, "has no level of that kind; choose from onestroke"),
    ("runs/{matrix}/matrix?rows=0", 400, "rows='0': give a whole number from 1 to 1000"),
    ("runs/{single}/matrix", 404, "tried each level with one heuristic (plain)"),
    ("runs/99999/matrix", 404, "no run with id 99999"),
    ("matrix?runs={single}", 400, "gives one column (plain): a matrix needs two or more"),
    ("matrix?runs={single},{single}", 400, "a run is named twice"),
]


def test_what_a_user_gets_wrong_on_the_matrix_page_is_one_line_4xx(
    sqlite_url: str, tmp_path: Any, matrix: dict[str, int]
) -> None:
    with serving(sqlite_url, log_dir=tmp_path) as served:
        for path, status, said in MISTAKES:
            got, body = served.get(path.format(**matrix))
            line = error_line(body)
            assert got == status and said in line and "\n" not in line.strip(), (path, got, line)
