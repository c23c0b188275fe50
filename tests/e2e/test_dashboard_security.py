"""What a web page in the user's browser can do to a loopback dashboard: read nothing, post nothing.

A real `packsolve serve` on its own database; requests with the headers a browser sends (a
rebinding domain's Host, another site's Origin), and a real page of another site in Chromium.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.support.dashboard import Served, serving
from tests.support.inprocess import invoke
from tests.support.report_runs import Planned, build_run, strip_level


@pytest.fixture
def two_runs(sqlite_url: str) -> tuple[int, int]:
    levels = [strip_level(i) for i in range(4)]
    a = build_run(sqlite_url, [Planned(lv, "timeout" if i else "solved", 0.5) for i, lv in enumerate(levels)])
    b = build_run(sqlite_url, [Planned(lv, "solved", 0.1) for lv in levels])
    return a, b


def runs_of(url: str) -> list[dict[str, Any]]:
    out = invoke("runs", "--format", "json", env={"PACKSOLVE_DATABASE_URL": url})
    assert out.returncode == 0, out.stderr
    return list(json.loads(out.stdout))


def csrf_of(served: Served, path: str) -> str:
    code, body = served.get(path)
    assert code == 200, body
    found = re.search(r'name="csrf" value="([^"]+)"', body)
    assert found, body
    return found.group(1)


def post(served: Served, path: str, fields: dict[str, str], headers: dict[str, str]) -> tuple[int, str]:
    """Return the status and body of POST path (redirects not followed)."""
    body = "&".join(f"{k}={urllib.request.quote(v)}" for k, v in fields.items()).encode()
    request = urllib.request.Request(
        served.url + path.lstrip("/"),
        data=body,
        headers={"Content-Type": "application/x-www-form-urlencoded", **headers},
        method="POST",
    )

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any) -> None:
            return None

    try:
        with urllib.request.build_opener(NoRedirect).open(request, timeout=60) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def label_of(url: str, run: int) -> str | None:
    return next(r["label"] for r in runs_of(url) if r["run"] == run)


def test_a_rebinding_domain_reads_nothing_and_another_site_posts_nothing(
    sqlite_url: str, tmp_path: Path, two_runs: tuple[int, int]
) -> None:
    a, _ = two_runs
    with serving(sqlite_url, log_dir=tmp_path) as served:
        port = urlsplit(served.url).port
        token = csrf_of(served, f"runs/{a}")
        # DNS rebinding: the attacker's name resolved to 127.0.0.1, the browser sends that name as Host.
        for host in (f"rebind.example:{port}", "rebind.example", f"127.0.0.1:{port + 1}", ""):
            code, body = served.get(f"runs/{a}", {"Host": host})
            assert code == 400 and token not in body and "own address" in body, (host, code, body[:200])
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"LOCALHOST:{port}", f"[::1]:{port}"):
            assert served.get(f"runs/{a}", {"Host": host})[0] == 200, host
        # A POST from another page, even with the right CSRF token, is refused; the run keeps its label.
        own = f"http://127.0.0.1:{port}"
        for headers in (
            {"Origin": "http://rebind.example"},
            {"Origin": f"http://127.0.0.1:{port + 1}"},
            {"Origin": "null"},
            {"Sec-Fetch-Site": "cross-site"},
            {"Sec-Fetch-Site": "same-site", "Origin": own},
        ):
            code, body = post(served, f"runs/{a}/label", {"csrf": token, "label": "stolen"}, headers)
            assert code == 403 and "another site" in body, (headers, code, body[:200])
        assert label_of(sqlite_url, a) is None
        # The dashboard's own page (as Chromium sends it), and a client that is no browser, are served.
        same = {"Origin": own, "Sec-Fetch-Site": "same-origin"}
        assert post(served, f"runs/{a}/label", {"csrf": token, "label": "mine"}, same)[0] == 303
        assert label_of(sqlite_url, a) == "mine"
        assert post(served, f"runs/{a}/label", {"csrf": token, "label": "again"}, {})[0] == 303
        assert label_of(sqlite_url, a) == "again"


@pytest.mark.browser
def test_a_form_of_another_site_in_the_browser_is_refused_even_with_the_csrf_token(
    page: Any, sqlite_url: str, tmp_path: Path, two_runs: tuple[int, int]
) -> None:
    a, _ = two_runs
    with serving(sqlite_url, log_dir=tmp_path) as served:
        token = csrf_of(served, f"runs/{a}")
        # The attacker's page (served by the browser's router: no network), posting to the dashboard.
        html = (
            f'<form method="post" action="{served.url}runs/{a}/label"><input name="csrf" value="{token}">'
            '<input name="label" value="stolen"><button id="go" type="submit">go</button></form>'
        )
        page.route("http://attacker.example/**", lambda r: r.fulfill(content_type="text/html", body=html))
        page.goto("http://attacker.example/")
        with page.expect_navigation():
            page.click("#go")
        assert "another site" in page.content()
    assert label_of(sqlite_url, a) is None


def test_rerun_and_resume_take_the_url_s_run_as_a_run_never_as_an_option(
    sqlite_url: str, tmp_path: Path, two_runs: tuple[int, int]
) -> None:
    a, _ = two_runs
    before = runs_of(sqlite_url)
    with serving(sqlite_url, log_dir=tmp_path) as served:
        token = csrf_of(served, f"runs/{a}")
        for path in ("runs/--label/rerun", "runs/--status/rerun", "runs/--local/resume"):
            code, body = post(served, path, {"csrf": token, "status": "timeout"}, {})
            ref = path.split("/")[1]
            assert code == 404 and f"no run with id or label &#39;{ref}&#39;" in body, (path, body[:300])
    assert runs_of(sqlite_url) == before


def test_compare_pages_are_bounded(sqlite_url: str, tmp_path: Path, two_runs: tuple[int, int]) -> None:
    a, b = two_runs
    with serving(sqlite_url, log_dir=tmp_path) as served:
        code, body = served.get(f"compare?runs={a},{b}&rows=100000")
        assert code == 400 and "rows=&#39;100000&#39;: give a whole number from 1 to 1000" in body, body[:300]
        assert served.get(f"compare?runs={a},{b}&rows=1000")[0] == 200
