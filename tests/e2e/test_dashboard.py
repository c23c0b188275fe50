"""`packsolve serve` in real headless Chromium: pages agree with the CLI's JSON, actions work, nothing runs.

Each test starts a real `packsolve serve` process on its own database and drives the system's
Chromium through Playwright. Figures on the pages are checked against `report ... --format json`
on the same database: the pages call the same report functions.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from tests.support.dashboard import Served, serving
from tests.support.inprocess import invoke
from tests.support.report_runs import Planned, build_run, overlapping_failures, strip_level
from tests.support.services import run_cli

pytestmark = pytest.mark.browser

# A level name and a label that would run script if any page put them in as markup.
XSS = '<script>window.__xss = 1</script><img src=x onerror="window.__xss = 2">'


def cli_json(url: str, *args: str) -> Any:
    out = invoke(*args, "--format", "json", env={"PACKSOLVE_DATABASE_URL": url})
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.fixture
def two_runs(sqlite_url: str) -> tuple[int, int]:
    """Two runs of the same eight levels: a slow one with two timeouts and a failure, then a faster one."""
    levels = [strip_level(i) for i in range(7)] + [strip_level(9, name=XSS)]
    slow = [
        Planned(
            lv,
            "timeout" if i in (2, 5) else ("error" if i == 6 else "solved"),
            0.5 + 0.1 * i,
            0.4,
            100 * (i + 1),
            "boom at depth 3" if i == 6 else "",
        )
        for i, lv in enumerate(levels)
    ]
    a = build_run(sqlite_url, slow, heuristic="plain", worker="w1@hostA")
    fast = [Planned(lv, "solved", 0.1 + 0.01 * i, 0.1, 10 * (i + 1)) for i, lv in enumerate(levels)]
    b = build_run(sqlite_url, fast, heuristic="warnsdorff", label=XSS, worker="w2@hostA")
    return a, b


def column(page: Any, index: int) -> list[str]:
    return page.locator(f"table.attempts tbody tr td:nth-child({index})").all_inner_texts()


def test_run_page_sorts_filters_and_pages_its_attempts_and_agrees_with_report_summary(
    page: Any, sqlite_url: str, tmp_path: Path, two_runs: tuple[int, int]
) -> None:
    a, _ = two_runs
    summary = cli_json(sqlite_url, "report", "summary", str(a))
    with serving(sqlite_url, log_dir=tmp_path) as served:
        page.goto(f"{served.url}runs/{a}")
        assert page.inner_text("#solved") == f"{summary['solved']} of {summary['total']}"
        assert page.inner_text("#par2").startswith(f"{summary['par2_s']:,.2f} s")
        assert len(column(page, 1)) == 8
        # Sort by wall time: ascending, then a second click descending (the server sorts).
        # Each click loads a new page: its rows are read once it has loaded, not from the page going away.
        with page.expect_navigation():
            page.click("th a[data-sort=wall_s]")
        walls = [float(t) for t in column(page, 6)]
        assert walls == sorted(walls) and len(walls) == 8
        with page.expect_navigation():
            page.click("th a[data-sort=wall_s]")
        assert [float(t) for t in column(page, 6)] == sorted(walls, reverse=True)
        # Filter by status, then search a name on top.
        page.select_option("select[name=status]", "timeout")
        with page.expect_navigation():
            page.click("#filters button[type=submit]")
        assert column(page, 5) == ["timeout", "timeout"]
        page.fill("input[name=q]", "strip-5")
        with page.expect_navigation():
            page.click("#filters button[type=submit]")
        assert column(page, 5) == ["timeout"] and "strip-5" in column(page, 2)[0]
        # Messages are searched too; pages of 3 rows count on the server.
        page.goto(f"{served.url}runs/{a}?q=boom")
        assert column(page, 5) == ["error"]
        page.goto(f"{served.url}runs/{a}?per_page=3&page=3")
        assert page.inner_text("#pager").startswith("page 3 of 3") and len(column(page, 1)) == 2
        with page.expect_navigation():
            page.click("#pager a[rel=prev]")
        assert page.inner_text("#pager").startswith("page 2 of 3")
        assert not page.errors


def test_hardest_leads_to_a_level_page_with_its_picture_and_every_attempt(
    page: Any, sqlite_url: str, tmp_path: Path, two_runs: tuple[int, int]
) -> None:
    a, _ = two_runs
    hardest = cli_json(sqlite_url, "report", "hardest", "--run", str(a))
    with serving(sqlite_url, log_dir=tmp_path) as served:
        page.goto(f"{served.url}hardest?run={a}")
        links = page.locator("a.level-link")
        assert links.all_inner_texts() == [r["level"] for r in hardest]
        page.click(f"a.level-link >> text={hardest[0]['level']}")
        page.wait_for_selector("#level-picture")
        assert page.evaluate("document.getElementById('level-picture').naturalWidth") > 0
        assert page.evaluate("document.getElementById('solution-picture').naturalWidth") > 0
        assert page.locator("table.history tbody tr").count() == 2  # both runs attempted it
        assert not page.errors


def test_compare_states_the_speedup_report_compare_computes(
    page: Any, sqlite_url: str, tmp_path: Path, two_runs: tuple[int, int]
) -> None:
    a, b = two_runs
    data = cli_json(sqlite_url, "report", "compare", str(a), str(b))
    foot = data["footer"][1]
    with serving(sqlite_url, log_dir=tmp_path) as served:
        page.goto(f"{served.url}compare?runs={a},{b}")
        assert page.inner_text(f".speedup[data-run='{b}']") == f"{foot['speedup']:.2f}"
        assert f"over the {foot['both_decided']} level(s) both decided" in page.inner_text("#speedups")
        assert page.locator("table.compare tbody tr").count() == len(data["rows"])
        page.check("input[name=differs]")
        page.click("form.inline button[type=submit]")
        differs = cli_json(sqlite_url, "report", "compare", str(a), str(b), "--differs")
        assert page.locator("table.compare tbody tr").count() == len(differs["rows"]) == 3


def test_compare_pages_its_rows_and_its_footer_is_the_cli_s(
    page: Any, sqlite_url: str, tmp_path: Path, two_runs: tuple[int, int]
) -> None:
    a, b = two_runs
    data = cli_json(sqlite_url, "report", "compare", str(a), str(b))
    with serving(sqlite_url, log_dir=tmp_path) as served:
        page.goto(f"{served.url}compare?runs={a},{b}&rows=3")
        seen = []
        while True:  # 3 rows a page, "next 3" to the last
            seen += page.locator("table.compare tbody td.name").all_inner_texts()
            assert page.locator("table.compare tbody tr").count() <= 3
            if not page.locator("p.pager a >> text=next 3").count():
                break
            with page.expect_navigation():  # the next page's rows, not this one's read again
                page.click("p.pager a >> text=next 3")
        assert seen == [r["level"] for r in data["rows"]] and len(seen) > 3
        counts = page.locator("table.compare tfoot tr").first.locator("td").all_inner_texts()
        assert counts == [f"{f['solved']} ({f['decided']}) of {f['levels']}" for f in data["footer"]]
        assert not page.errors


def test_compare_with_a_run_going_says_how_old_its_footer_is(
    page: Any, sqlite_url: str, tmp_path: Path, two_runs: tuple[int, int]
) -> None:
    a, b = two_runs
    going = build_run(sqlite_url, [Planned(strip_level(0), "solved", 0.2), Planned(strip_level(1), None)])
    with serving(sqlite_url, log_dir=tmp_path) as served:
        for ids, shown in (((a, b, going), True), ((a, b), False)):
            refs = ",".join(map(str, ids))
            data = cli_json(sqlite_url, "report", "compare", *refs.split(","))
            page.goto(f"{served.url}compare?runs={refs}")
            counts = page.locator("table.compare tfoot tr").first.locator("td").all_inner_texts()
            assert counts == [f"{f['solved']} ({f['decided']}) of {f['levels']}" for f in data["footer"]]
            assert page.locator("#figures-age").count() == shown, refs
            if shown:
                assert "s ago: a run is still going" in page.inner_text("#figures-age")
        assert not page.errors


def test_a_hostile_level_name_and_label_stay_text_on_every_page(
    page: Any, sqlite_url: str, tmp_path: Path, two_runs: tuple[int, int]
) -> None:
    a, b = two_runs
    with serving(sqlite_url, log_dir=tmp_path) as served:
        for path in (
            "",
            f"runs/{a}",
            f"runs/{b}",
            f"runs/{a}/failures",
            "hardest",
            f"hardest?run={a}",
            f"compare?runs={a},{b}",
            f"plots?runs={a},{b}",
            f"runs/{a}?q=%3Cscript",
        ):
            assert page.goto(served.url + path).status == 200, path  # an error page runs no script either
            page.wait_for_load_state("load")
            assert page.evaluate("window.__xss") is None, path
            assert page.locator("body script:not([src])").count() == 0, path
        page.goto(f"{served.url}runs/{b}")
        assert XSS in page.inner_text("h1")  # shown, as text
        assert not page.errors


def test_bad_requests_get_a_one_line_404_or_400_page_never_a_traceback(
    sqlite_url: str, tmp_path: Path, two_runs: tuple[int, int]
) -> None:
    a, _ = two_runs
    cases = {
        "runs/999": (404, "no run with id 999"),
        "runs/nolabel": (404, "no run with id or label 'nolabel'"),
        f"runs/{a}?sort=password": (400, "cannot sort by 'password'"),
        f"runs/{a}?page=0": (400, "page='0': give a whole number"),
        f"runs/{a}?page=two": (400, "page='two': give a whole number"),
        f"runs/{a}?page=-1": (400, "page='-1': give a whole number"),
        f"runs/{a}?per_page=100000": (400, "per_page='100000'"),
        f"runs/{a}?status=any": (400, "no status 'any': filter by one of queued, running, solved"),
        "hardest?by=luck": (400, "rank by one of par2, time, nodes"),
        "compare?runs=1": (400, "compare needs two or more runs"),
        f"compare?runs={a},{a + 1}&offset=x": (400, "offset='x': give a whole number"),
        "levels/../../etc/passwd": (404, "no such page"),
        "levels/abc": (404, "is not a level hash"),
        "nowhere": (404, "no such page"),
    }
    with serving(sqlite_url, log_dir=tmp_path) as served:
        for path, (status, words) in cases.items():
            code, body = served.get(path)
            message = re.search(r'id="error-message">([^<]*)<', body)
            assert code == status and message and words in message.group(1).replace("&#39;", "'"), (
                path,
                body,
            )
            assert "Traceback" not in body and "\n" not in message.group(1)
        code, body = served.get(f"runs/{a}/rerun")
        assert code == 405
    assert "Traceback" not in served.log.read_text()


def test_a_page_past_the_last_shows_the_last_page_and_says_the_list_shrank(
    sqlite_url: str, tmp_path: Path, two_runs: tuple[int, int]
) -> None:
    # A link to page 2 of the queued attempts made while a run had more than 50: the queue drained.
    # (Before issue 34's night replay this answered 400 "page 2 is past the last one".)
    a, _ = two_runs
    with serving(sqlite_url, log_dir=tmp_path) as served:
        code, last = served.get(f"runs/{a}?page=1")
        assert code == 200 and "page-gone" not in last
        for asked in (f"runs/{a}?page=50", f"runs/{a}?status=queued&page=2"):
            code, body = served.get(asked)
            assert code == 200, (asked, body)
            gone = re.search(r'id="page-gone">([^<]*)<', body)
            assert gone and "no longer exists" in gone.group(1) and "shrank" in gone.group(1), body
            assert re.search(r"page 1 of 1\b", body), body
        # The last page's rows, as page 1 of 1 shows them.
        levels = re.compile(r'href="/levels/([0-9a-f]{64})"')
        rows = levels.findall(last)
        assert rows and levels.findall(served.get(f"runs/{a}?page=50")[1]) == rows


def test_actions_need_the_csrf_token_and_read_only_serves_none(
    page: Any, sqlite_url: str, tmp_path: Path, two_runs: tuple[int, int]
) -> None:
    a, _ = two_runs
    with serving(sqlite_url, log_dir=tmp_path) as served:
        # A form posted from elsewhere (no token) is refused; the run keeps its label.
        page.goto(f"{served.url}runs/{a}")
        page.evaluate(
            """(run) => { const f = document.createElement('form'); f.method = 'post';
            f.action = '/runs/' + run + '/label'; const i = document.createElement('input'); i.name = 'label';
            i.value = 'stolen'; f.appendChild(i); document.body.appendChild(f); f.submit(); }""",
            a,
        )
        page.wait_for_selector("#error-message")
        assert "came from another site" in page.inner_text("#error-message")
        assert cli_json(sqlite_url, "report", "summary", str(a))["label"] is None
        # The page's own form carries it: the label is set as `runs label` sets it.
        page.goto(f"{served.url}runs/{a}")
        page.fill("input[name=label]", "night-1")
        page.click("#relabel")
        page.wait_for_selector("h1 .label")
        assert cli_json(sqlite_url, "report", "summary", str(a))["label"] == "night-1"
    with serving(sqlite_url, "--read-only", log_dir=tmp_path) as served:
        page.goto(f"{served.url}runs/{a}/failures")
        assert page.locator("form[method=post]").count() == 0
        assert served.get(f"runs/{a}/delete")[0] == 404
    code = invoke("runs", env={"PACKSOLVE_DATABASE_URL": sqlite_url}).returncode
    assert code == 0


def test_delete_asks_for_confirmation_then_deletes_as_runs_delete_does(
    page: Any, sqlite_url: str, tmp_path: Path, two_runs: tuple[int, int]
) -> None:
    a, b = two_runs
    with serving(sqlite_url, log_dir=tmp_path) as served:
        page.goto(f"{served.url}runs/{a}")
        page.click("#delete")
        assert "Delete run" in page.inner_text("h1") and "8 attempt(s)" in page.inner_text("h1")
        assert cli_json(sqlite_url, "runs")[-1]["run"] == a  # nothing gone before the confirmation
        page.check("#confirm")
        page.click("#confirm-delete")
        assert "Deleted run" in page.inner_text("#deleted")
    assert [r["run"] for r in cli_json(sqlite_url, "runs")] == [b]


def test_a_non_loopback_bind_needs_a_token_and_then_every_request_carries_it(
    page: Any, sqlite_url: str, tmp_path: Path, two_runs: tuple[int, int]
) -> None:
    refused = run_cli(
        "serve", "--host", "0.0.0.0", "--port", "0", env={"PACKSOLVE_DATABASE_URL": sqlite_url}, timeout=60
    )
    lines = [line for line in refused.stderr.splitlines() if line.strip()]
    assert refused.returncode == 2 and len(lines) == 1, refused.stderr
    assert "PACKSOLVE_SERVE_TOKEN" in lines[0] and "0.0.0.0" in lines[0]
    short = tmp_path / "short"
    short.write_text("abc\n")
    short.chmod(0o600)
    out = run_cli(
        "serve", "--host", "0.0.0.0", "--token-file", str(short), env={"PACKSOLVE_DATABASE_URL": sqlite_url}
    )
    assert out.returncode == 2 and "guessable" in out.stderr
    # A token file others can read is refused, with the command that fixes it.
    shared = tmp_path / "shared-token"
    shared.write_text("a-long-enough-secret-for-tests\n")
    shared.chmod(0o644)
    out = run_cli(
        "serve",
        "--host",
        "0.0.0.0",
        "--token-file",
        str(shared),
        env={"PACKSOLVE_DATABASE_URL": sqlite_url},
        timeout=60,  # a server that accepted the file would run until then
    )
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert out.returncode == 2 and len(lines) == 1 and lines[0].endswith(f"chmod 600 {shared}"), out.stderr
    token = "a-long-enough-secret-for-tests"
    with serving(
        sqlite_url, "--host", "0.0.0.0", env={"PACKSOLVE_SERVE_TOKEN": token}, log_dir=tmp_path
    ) as s:
        local = s.url.replace("0.0.0.0", "127.0.0.1")  # the test talks to loopback only
        assert Served(s.process, local, s.log).get("runs/1")[0] == 303  # to the login form
        assert Served(s.process, local, s.log).get("runs/1", {"X-Packsolve-Token": "wrong" * 5})[0] == 401
        assert Served(s.process, local, s.log).get("runs/1", {"X-Packsolve-Token": token})[0] == 200
        page.goto(local + "runs/1")
        page.fill("input[name=token]", "not-the-token-at-all")
        page.click("button[type=submit]")
        assert "not the token" in page.inner_text("main")
        page.fill("input[name=token]", token)
        page.click("button[type=submit]")
        # Signed in, the user is back on the page asked for (its query too), not on the runs list.
        page.wait_for_selector("#solved")
        assert page.url == local + "runs/1" and page.inner_text("#solved").endswith("of 8")
        # Only a path of this site is followed: another site's address lands on the runs list.
        for elsewhere in ("//example.com/", "https://example.com/", "/\\example.com"):
            signed_out = page.context.browser.new_context()
            other = signed_out.new_page()
            other.goto(local + "login?" + urlencode({"next": elsewhere}))
            other.fill("input[name=token]", token)
            other.click("button[type=submit]")
            other.wait_for_selector("table.runs")
            assert other.url == local, elsewhere
            signed_out.close()
        page.context.clear_cookies()
        page.goto(local + "runs/1?status=timeout")
        page.fill("input[name=token]", token)
        page.click("button[type=submit]")
        page.wait_for_selector("#solved")
        assert page.url == local + "runs/1?status=timeout"


def test_report_html_tables_sort_by_a_header_click_and_picture_the_hardest_levels(
    page: Any, sqlite_url: str, tmp_path: Path, two_runs: tuple[int, int]
) -> None:
    a, b = two_runs
    path = tmp_path / "report.html"
    out = invoke(
        "report",
        "html",
        str(a),
        str(b),
        "-o",
        str(path),
        "--top",
        "2",
        "--max-pictures",
        "3",
        env={"PACKSOLVE_DATABASE_URL": sqlite_url},
    )
    assert out.returncode == 0, out.stderr
    page.goto(path.as_uri())
    hardest = cli_json(sqlite_url, "report", "hardest", "--run", str(a), "--top", "2")
    captions = page.locator("#pictures ~ figure figcaption").all_inner_texts()
    assert len(captions) == 3 and all(r["level"] in " ".join(captions) for r in hardest)
    levels = page.locator("table.levels")
    levels.locator("th", has_text="run 1 status").click()  # sorts by text
    levels.locator("th:nth-child(4)").click()  # run 1's wall time: numbers, ascending
    walls = [float(t) for t in levels.locator("tbody td:nth-child(4)").all_inner_texts() if t != "—"]
    assert walls == sorted(walls) and len(walls) == 8
    levels.locator("th:nth-child(4)").click()
    walls = [float(t) for t in levels.locator("tbody td:nth-child(4)").all_inner_texts() if t != "—"]
    assert walls == sorted(walls, reverse=True)
    assert not page.errors


def test_failures_page_lists_report_failures_groups_with_a_rerun_form_per_kind(
    page: Any, sqlite_url: str, tmp_path: Path, two_runs: tuple[int, int]
) -> None:
    a, _ = two_runs
    data = cli_json(sqlite_url, "report", "failures", str(a))
    with serving(sqlite_url, log_dir=tmp_path) as served:
        page.goto(f"{served.url}runs/{a}/failures")
        groups = page.locator("section.group h2").all_inner_texts()
        kinds = [", ".join(f"{k} {n}" for k, n in g["kinds"].items()) for g in data["groups"]]
        assert groups == [
            f"{g['status']} × {g['count']} ({k})" for g, k in zip(data["groups"], kinds, strict=True)
        ]
        assert [t.removeprefix("CLI: ") for t in page.locator("section.group p.muted").all_inner_texts()] == [
            g["rerun"] for g in data["groups"]
        ]
        # onestroke's heuristics offered, its default first as `packsolve kinds` lists them.
        offered = page.locator("form.rerun select[name=heuristic]").first.locator("option").all_inner_texts()
        assert {"plain", "warnsdorff", "prune"} <= set(offered)


def test_a_failure_groups_rerun_form_makes_a_run_of_exactly_the_levels_it_counts(
    page: Any, sqlite_url: str, tmp_path: Path
) -> None:
    """Two timeout groups, one's words ("time limit") inside the other's messages: each form takes its own."""
    parent = overlapping_failures(sqlite_url)
    data = cli_json(sqlite_url, "report", "failures", str(parent))
    with serving(sqlite_url, log_dir=tmp_path) as served:
        for index, g in enumerate(data["groups"], 1):
            page.goto(f"{served.url}runs/{parent}/failures")
            form = page.locator(f"#group-{index} form.rerun")
            shown = re.search(r"rerun these onestroke levels \((\d+)\)", form.inner_text())
            assert shown and int(shown.group(1)) == g["count"], form.inner_text()
            form.locator("button[type=submit]").click()
            page.wait_for_url(re.compile(r".*/runs/\d+$"))
            child = int(page.url.rsplit("/", 1)[1])
            assert child != parent
            assert cli_json(sqlite_url, "report", "summary", str(child))["total"] == g["count"], g
        assert not page.errors


def test_compare_of_runs_that_share_no_level_says_so_as_report_compare_does(
    sqlite_url: str, tmp_path: Path
) -> None:
    a = build_run(sqlite_url, [Planned(strip_level(i), "solved", 1.0) for i in range(3)], time_limit=10.0)
    b = build_run(sqlite_url, [Planned(strip_level(i), "solved", 1.0) for i in range(3, 6)], time_limit=20.0)
    why = cli_json(sqlite_url, "report", "compare", str(a), str(b))["footer"][1]["speedup_why_not"]
    assert why.startswith("no level in common")
    with serving(sqlite_url, log_dir=tmp_path) as served:
        code, body = served.get(f"compare?runs={a},{b}")
    assert code == 200, body
    said = " ".join(re.sub(r"<[^>]+>", " ", body).split())
    assert f"no speedup: {why}" in said.replace("&#39;", "'"), said
    row = re.search(r"PAR-2 s on the 0 levels all ran</th>(.*?)</tr>", body)
    assert row and re.findall(r"<td[^>]*>([^<]*)</td>", row.group(1)) == ["—", "—"], body
