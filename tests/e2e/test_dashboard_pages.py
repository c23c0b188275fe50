"""Every page and link the dashboard renders answers 200 with its content; the pages show what the docs say.

A real `packsolve serve` shows runs that share levels and runs that do not (one under another time
limit, a failing one, a cancelled one, a rerun, one still going). The crawler starts at / and follows
every same-origin href, src and data-live of every page it reads, and every GET form with the values
it shows; a POST form's action is an action, not a page, and is not sent. Each URL must answer 200
and carry a piece of what its kind of page shows. Then, in Chromium: peak memory, a plot panel per
kind with readable ticks and whole points, a cancelled run's bar, one sort arrow, unbroken worker names.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urljoin, urlsplit

import pytest

from packsolve import runs
from packsolve.db.session import get_engine
from packsolve.levels import make_level
from tests.support.dashboard import Served, serving
from tests.support.inprocess import invoke
from tests.support.report_runs import Planned, build_run, strip_level

pytestmark = pytest.mark.browser

# What each kind of page shows (a piece of it): the crawler checks every URL against its kind's.
EXPECTED: list[tuple[str, bytes]] = [
    (r"/", b"<h1>Runs</h1>"),
    (r"/live/runs", b'<table class="runs">'),
    (r"/runs/\d+", b"<h2>Summary</h2>"),
    (r"/runs/\d+/live", b"final ("),
    (r"/runs/\d+/progress\.svg", b"levels final"),
    (r"/runs/\d+/failures", b"<h1>Failures of"),
    (r"/runs/\d+/delete", b"<h1>Delete run"),
    (r"/runs/\d+/matrix|/matrix", b'<table class="sortable matrix" id="matrix">'),
    (r"/hardest", b"<h1>hardest levels"),
    (r"/compare", b'id="speedups"'),
    (r"/plots", b'id="cactus"'),
    (r"/workers", b"<h1>Workers</h1>"),
    (r"/levels/[0-9a-f]{64}", b"<h2>Every attempt at it</h2>"),
    (r"/levels/[0-9a-f]{64}/picture\.svg", b"<svg"),
    (r"/static/[\w.]+\.css", b"packsolve"),
    (r"/static/[\w.]+\.js", b'"use strict"'),
    (r"/static/favicon\.ico|/favicon\.ico", b"\x00\x00\x01\x00"),  # an ICO file's header
]
# Query parameters that only order or page a table: the crawler tries each value once per page, not
# in every combination with every filter (that would be thousands of pages of the same code).
ORDERING = ("sort", "desc", "page")


def expected(path: str) -> bytes:
    for pattern, piece in EXPECTED:
        if re.fullmatch(pattern, path):
            return piece
    raise AssertionError(f"the dashboard links {path}, a page this test does not know: add it to EXPECTED")


class Links(HTMLParser):
    """The URLs a page names: href, src, data-live, and the GET forms filled as they are shown."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []
        self.forms: list[tuple[str, list[tuple[str, str]], bool]] = []  # action, fields, all filled
        self._form: tuple[str, list[tuple[str, str]], list[bool]] | None = None
        self._select: tuple[str, list[tuple[bool, str | None]]] | None = None  # (selected, value)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        for name in ("href", "src", "data-live"):
            if a.get(name):
                self.urls.append(a[name])
        if tag == "form":
            get = a.get("method", "get").lower() == "get"
            self._form = (a.get("action", ""), [], [True]) if get else None
        elif self._form is not None and tag == "input" and a.get("name"):
            if a.get("type") == "checkbox":
                return  # unticked: not sent (its ticked form is a link elsewhere or a filter tried by hand)
            self._form[1].append((a["name"], a.get("value", "")))
            if "required" in a and not a.get("value"):
                self._form[2][0] = False  # the browser would not send it empty
        elif self._form is not None and tag == "select":
            self._select = (a.get("name", ""), [])
        elif self._select is not None and tag == "option":
            self._select[1].append(("selected" in a, dict(attrs).get("value")))

    def handle_data(self, data: str) -> None:
        if self._select is not None and self._select[1] and self._select[1][-1][1] is None:
            self._select[1][-1] = (self._select[1][-1][0], data.strip())  # no value=: it sends its text

    def handle_endtag(self, tag: str) -> None:
        if tag == "select" and self._select is not None and self._form is not None:
            name, options = self._select
            chosen = next((v for selected, v in options if selected), options[0][1] if options else "")
            self._form[1].append((name, chosen or ""))
            self._select = None
        elif tag == "form" and self._form is not None:
            self.forms.append((self._form[0], self._form[1], self._form[2][0]))
            self._form = None


def fetch(served: Served, url: str) -> tuple[int, str, bytes]:
    """Return status, content type and body of GET url (redirects not followed)."""

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any) -> None:
            return None

    try:
        with urllib.request.build_opener(NoRedirect).open(url, timeout=60) as r:
            return r.status, r.headers.get("content-type", ""), r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("content-type", ""), exc.read()


def key(url: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    """Return what makes url another page: its path and its query, an ordering parameter's value aside."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    filtered = tuple(sorted((k, v) for k, v in query if k not in ORDERING and v))
    ordering = tuple(sorted((k, v) for k, v in query if k in ORDERING))
    # An ordering is tried once per path on the table unfiltered; a filter once in the default order.
    return parts.path, filtered if filtered else ordering


def crawl(served: Served) -> Iterator[tuple[str, int, bytes]]:
    """Yield (url, status, body) of every same-origin URL reachable from /, each page once."""
    origin = urlsplit(served.url)
    todo, seen = [served.url], {key(served.url)}
    while todo:
        url = todo.pop(0)
        status, ctype, body = fetch(served, url)
        yield url, status, body
        if status != 200 or not ctype.startswith(("text/html", "image/svg+xml")):
            continue
        parser = Links()
        parser.feed(body.decode())
        found = list(parser.urls)
        for action, fields, filled in parser.forms:
            if filled:  # action "#attempts" or none: the page's own path
                found.append(f"{action.split('#')[0] or urlsplit(url).path}?{urlencode(fields)}")
        for ref in found:
            target = urljoin(url, ref).split("#")[0]
            parts = urlsplit(target)
            if (parts.scheme, parts.netloc) != (origin.scheme, origin.netloc) or key(target) in seen:
                continue
            seen.add(key(target))
            todo.append(target)


@pytest.fixture
def night(sqlite_url: str) -> dict[str, int]:
    """Runs as a night leaves them: shared levels, other limits, failures, a cancel, a rerun, one going."""
    shared = [strip_level(i) for i in range(6)]
    timeout = [Planned(lv, "timeout", 1.0, 1.0, 9, "time limit") for lv in shared]
    solved = [Planned(lv, "solved", 0.2 + 0.1 * i, 0.1, 10 * i) for i, lv in enumerate(shared)]
    slow = [solved[i] if i % 3 else timeout[i] for i in range(len(shared))]
    ids = {"slow": build_run(sqlite_url, slow, time_limit=1.0, worker="w1@hostA:4242424242")}
    same_limit = [Planned(lv, "solved", 0.1 + 0.01 * i, 0.1, 5 * i) for i, lv in enumerate(shared)]
    ids["fast"] = build_run(sqlite_url, same_limit, time_limit=1.0, label="fast")
    ids["other_limit"] = build_run(sqlite_url, same_limit, time_limit=2.0, label="longer")
    failing = [Planned(strip_level(20 + i), "error", 0.01, 0.01, 0, "boom") for i in range(3)]
    ids["failing"] = build_run(sqlite_url, failing)
    cancelled = [Planned(strip_level(30 + i), "solved" if i == 0 else None, 0.1) for i in range(4)]
    ids["cancelled"] = build_run(sqlite_url, cancelled)
    runs.cancel(get_engine(sqlite_url), str(ids["cancelled"]))
    ids["rerun"] = build_run(sqlite_url, [Planned(shared[0], "solved", 0.1)], parent=ids["slow"])
    going = [Planned(strip_level(40 + i), "solved" if i == 0 else None, 0.1) for i in range(3)]
    ids["going"] = build_run(sqlite_url, going)
    # A run of several heuristics side by side, on levels the others ran too (its matrix, its cactus lines).
    names = ("plain", "warnsdorff", "prune")
    tried = [
        Planned(lv, "solved", 0.1 * (1 + (i + j) % 3), 0.1, i, "", 20.0, h)
        for i, lv in enumerate(shared[:4])
        for j, h in enumerate(names)
    ]
    ids["matrix"] = build_run(sqlite_url, tried, heuristic=",".join(names), time_limit=1.0, label="matrix")
    return ids


def test_every_page_and_link_the_dashboard_renders_answers_200_with_its_content(
    sqlite_url: str, tmp_path: Path, night: dict[str, int]
) -> None:
    ids = night
    with serving(sqlite_url, log_dir=tmp_path) as served:
        # Pages a user reaches by typing in a form (the crawler sends forms only as they are shown).
        slow = ids["slow"]
        starts = [f"compare?runs={slow},{ids[b]}" for b in ("fast", "failing", "other_limit")]
        starts += [f"plots?runs={ids['failing']},{slow}", f"plots?runs={slow},{ids['other_limit']}"]
        for start in starts:
            status, _, body = fetch(served, served.url + start)
            assert status == 200 and expected(urlsplit("/" + start).path) in body, start
        pages = list(crawl(served))
        bad = [(url, status) for url, status, _ in pages if status != 200]
        assert not bad, f"{bad}\n{served.log.read_text()[-3000:]}"
        for url, _, body in pages:
            assert expected(urlsplit(url).path) in body, url
        paths = {urlsplit(u).path for u, _, _ in pages}
        # Shared levels and not: the compare page of a rerun links the plots of the two runs.
        assert f"/plots?runs={ids['slow']},{ids['rerun']}" in {
            unquote(u).removeprefix(served.url.rstrip("/")) for u, _, _ in pages
        }
        for run in ids.values():
            assert {f"/runs/{run}", f"/runs/{run}/failures", f"/runs/{run}/progress.svg"} <= paths
        assert {"/live/runs", f"/runs/{ids['going']}/live", "/favicon.ico", "/hardest", "/plots"} <= paths
        # A matrix run's matrix, from its page; a rerun's and its run's, from their compare page.
        assert {f"/runs/{ids['matrix']}/matrix", "/matrix"} <= paths
        assert f"/matrix?runs={ids['slow']},{ids['rerun']}" in {
            unquote(u).removeprefix(served.url.rstrip("/")) for u, _, _ in pages
        }
        assert len(pages) > 50


def test_a_walk_in_chromium_loads_each_kind_of_page_with_every_request_answered_200(
    page: Any, sqlite_url: str, tmp_path: Path, night: dict[str, int]
) -> None:
    ids = night
    answers: list[tuple[int, str]] = []
    page.on("response", lambda r: answers.append((r.status, r.url)))
    walk = [
        "",
        f"runs/{ids['slow']}",
        f"runs/{ids['cancelled']}",
        f"runs/{ids['going']}",
        f"runs/{ids['failing']}/failures",
        f"runs/{ids['slow']}/delete",
        f"hardest?run={ids['slow']}",
        f"compare?runs={ids['slow']},{ids['rerun']}",
        f"compare?runs={ids['slow']},{ids['other_limit']}",
        f"plots?runs={ids['slow']},{ids['fast']}",
        f"plots?runs={ids['slow']},{ids['failing']}",
        "plots",
    ]
    with serving(sqlite_url, log_dir=tmp_path) as served:
        for path in walk:
            response = page.goto(served.url + path)
            assert response.status == 200, path
            page.wait_for_load_state("networkidle")
            assert page.locator("main h1").count() == 1, path
        # A link on a page, followed by a click: the compare page's plots of a pair sharing levels.
        page.goto(f"{served.url}compare?runs={ids['slow']},{ids['fast']}")
        with page.expect_navigation():
            page.click("text=plots of these runs")
        assert page.locator("#scatter svg circle").count() == 6
        page.click("#scatter a >> nth=0")
        page.wait_for_selector("#level-picture")
        # Loaded (or broken: complete with no width), not only in the page: on a busy machine the image
        # may still be on its way when the element is there.
        page.wait_for_function("document.getElementById('level-picture').complete")
        assert page.evaluate("document.getElementById('level-picture').naturalWidth") > 0
        # The icon every page links (headless Chromium does not fetch icons by itself).
        icon = page.request.get(served.url + page.get_attribute("link[rel=icon]", "href").lstrip("/"))
        assert icon.status == 200 and icon.headers["content-type"] == "image/vnd.microsoft.icon"
    bad = [(s, u) for s, u in answers if s != 200]
    assert not bad and not page.errors, (bad, page.errors)


def test_compare_gives_report_compare_s_reason_for_no_speedup(
    page: Any, sqlite_url: str, tmp_path: Path, night: dict[str, int]
) -> None:
    a, b = night["slow"], night["other_limit"]
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url}
    out = invoke("report", "compare", str(a), str(b), "--format", "json", env=env)
    why = json.loads(out.stdout)["footer"][1]["speedup_why_not"]
    assert why.startswith("time limits differ")
    with serving(sqlite_url, log_dir=tmp_path) as served:
        page.goto(f"{served.url}compare?runs={a},{b}")
        said = page.inner_text("#speedups")
        assert f"no speedup: {why}" in said and "no level decided by both" not in said


@pytest.fixture
def sized(sqlite_url: str) -> dict[str, int]:
    """A run of two kinds, sizes and peaks differing (strips of 100,000 cells and more); a cancelled run."""
    strips = [
        make_level(f"long-{n}", {"kind": "onestroke", "grid": ["S" + "." * n]})
        for n in range(100_000, 150_001, 10_000)
    ]
    coins = [
        make_level(f"coins-{k}", {"kind": "coins", "notes": list(range(1, k + 1)), "target": 7 * k})
        for k in range(3, 9)
    ]
    plan = [
        Planned(lv, "timeout", 1 + 0.2 * i, 1, 9, "time limit", 20 + 15 * i) for i, lv in enumerate(strips)
    ]
    plan += [Planned(lv, "no_solution", 0.01 * (i + 1), 0.01, 9, "", 5 + i) for i, lv in enumerate(coins)]
    ids = {
        "sized": build_run(
            sqlite_url, plan, time_limit=1.0, worker="celery@a-rather-long-worker-host.example:1234567"
        )
    }
    cancelled = [
        Planned(strip_level(30 + i), "solved" if i == 0 else None, 0.1, 0.1, 1, "", 12.5) for i in range(4)
    ]
    ids["cancelled"] = build_run(sqlite_url, cancelled)
    runs.cancel(get_engine(sqlite_url), str(ids["cancelled"]))
    return ids


# Every point of a chart lies whole inside its plot area (the clip rectangle): none cut by an edge.
POINTS_WHOLE = """svg => {
  const box = svg.querySelector('clipPath rect'), at = (e, a) => Number(e.getAttribute(a));
  const [x, y, w, h] = ['x', 'y', 'width', 'height'].map(a => at(box, a));
  return Array.from(svg.querySelectorAll('circle')).every(p => {
    const [cx, cy, r] = ['cx', 'cy', 'r'].map(a => at(p, a));
    return cx - r >= x && cx + r <= x + w && cy - r >= y && cy + r <= y + h;
  });
}"""
# A cell's text on one line: all its line boxes share a top.
ONE_LINE = """td => { const r = document.createRange(); r.selectNodeContents(td);
  return new Set(Array.from(r.getClientRects()).map(b => Math.round(b.top))).size === 1; }"""


def test_pages_show_what_the_docs_say_peaks_panels_per_kind_ticks_bars_arrows(
    page: Any, sqlite_url: str, tmp_path: Path, sized: dict[str, int]
) -> None:
    a, c = sized["sized"], sized["cancelled"]
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url}
    summary = json.loads(invoke("report", "summary", str(a), "--format", "json", env=env).stdout)
    peaks = summary["memory"]["by_kind"]
    assert peaks == {"coins": 10.0, "onestroke": 95.0}
    with serving(sqlite_url, log_dir=tmp_path) as served:
        # Peak memory on the run page, overall and per kind, as report summary gives it.
        page.goto(f"{served.url}runs/{a}?sort=wall_s")
        assert page.inner_text("#peak-memory") == "coins 10.0 MB, onestroke 95.0 MB"
        kinds = page.locator("table.kinds tbody tr td:last-child").all_inner_texts()
        assert kinds == ["10.0", "95.0"]
        # One sort arrow on the column sorted by (the style draws it from aria-sort; no second in the text).
        arrows = page.evaluate(
            "() => Array.from(document.querySelectorAll('table.attempts th')).map(th => th.textContent"
            " + getComputedStyle(th, '::after').content).join('')"
        )
        assert sum(arrows.count(a) for a in "▲▼") == 1
        # A worker's name, pid included, stays on one line, even on a narrow screen.
        page.set_viewport_size({"width": 600, "height": 900})
        workers = page.locator("table.attempts td.worker")
        assert workers.count() == 12 and all(w.evaluate(ONE_LINE) for w in workers.all())
        page.set_viewport_size({"width": 1280, "height": 900})
        # Plots: a panel per kind for time and memory, ticks in k, every point drawn whole.
        page.goto(f"{served.url}plots?runs={a}")
        for section in ("#size", "#memory"):
            panels = page.locator(f"{section} figure.kind-panel")
            assert [p.get_attribute("data-kind") for p in panels.all()] == ["coins", "onestroke"]
            assert all(p.locator("svg").evaluate(POINTS_WHOLE) for p in panels.all()), section
        ticks = page.locator("#size figure[data-kind=onestroke] svg text").all_text_contents()
        assert {"100k", "120k", "140k"} <= set(ticks) and not any("e+" in t for t in ticks)
        assert page.locator("#memory figure[data-kind=onestroke] svg circle").count() == 6
        # A cancelled run's bar shows what ran (1 of 4), on its page and in the runs list.
        page.goto(f"{served.url}runs/{c}")
        assert page.inner_text("#run-done") == "4 / 4 final, 3 of them cancelled: 1 ran (25 %)"
        assert page.get_attribute("#run-progress", "value") == "1"
        page.goto(served.url)
        row = page.locator(f"tr[data-run='{c}']")
        assert row.locator("progress").get_attribute("value") == "1"
        assert row.locator(".pct").inner_text() == "25 % ran, 3 cancelled"
        assert not page.errors
    # report html shows the peak memory too: overall and per kind.
    out = tmp_path / "report.html"
    assert invoke("report", "html", str(c), "-o", str(out), env=env).returncode == 0
    html = out.read_text()
    assert re.search(r"<th>peak memory \(MB\)</th><td class=\"n\">12\.5", html), (
        "no peak memory in report html"
    )
    assert re.search(r"<td>onestroke</td>(<td class=\"n\">[^<]*</td>){6}<td class=\"n\">12\.5", html)
