"""The HTML report opened in real headless Chromium: tables and pictures render, level names stay text."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.dashboard import CHROMIUM_ARGS
from tests.support.inprocess import invoke
from tests.support.report_runs import Planned, build_run, strip_level
from tests.support.services import IN_CI

pytestmark = pytest.mark.browser

XSS = "<script>alert(1)</script>"
# Debian's chromium with the dashboard tests' flags (off the network, the GPU and the user's profile);
# virtual time lets the page's script finish before the DOM is dumped.
FLAGS = [*CHROMIUM_ARGS, "--virtual-time-budget=5000"]
# Test-only probe, appended to a copy of the report (the report's CSP allows its sorter only):
# counts decoded images, tables, alert() calls and cells whose text is the script-named level.
PROBE_HEAD = "<script>window.__alerts = 0; window.alert = function () { window.__alerts += 1; };</script>"
PROBE_TAIL = """<script>window.addEventListener('load', function () {
  var imgs = Array.prototype.slice.call(document.images);
  var ok = imgs.filter(function (i) { return i.complete && i.naturalWidth > 0; }).length;
  var named = Array.prototype.filter.call(document.querySelectorAll('td, figcaption'),
    function (e) { return e.textContent.indexOf('<script>alert(1)</' + 'script>') >= 0; }).length;
  var p = document.createElement('div'); p.id = 'probe';
  p.textContent = 'images ' + ok + '/' + imgs.length + ' tables ' + document.querySelectorAll('table').length
    + ' alerts ' + window.__alerts + ' named ' + named;
  document.body.appendChild(p);
});</script>"""


def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        if IN_CI:
            pytest.fail("chromium is not installed (CI must apt-get install chromium)", pytrace=False)
        pytest.skip("chromium is not installed")
    return path


def browse(tmp_path: Path, page: Path, *args: str) -> str:
    """Run headless Chromium on page with a fresh profile; return its stdout."""
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
    out = subprocess.run(
        [chromium(), *FLAGS, f"--user-data-dir={profile}", *args, page.as_uri()],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


@pytest.fixture
def report(tmp_path: Path, sqlite_url: str) -> Path:
    levels = [strip_level(i) for i in range(5)] + [strip_level(9, name=XSS)]
    a = build_run(
        sqlite_url,
        [
            Planned(lv, "timeout" if i == 2 else "solved", 0.1 * (i + 1), 0.1, 10 * i)
            for i, lv in enumerate(levels)
        ],
        heuristic="plain",
    )
    fast = [Planned(lv, "solved", 0.05 * (i + 1), 0.05, 5 * i) for i, lv in enumerate(levels)]
    b = build_run(sqlite_url, fast, heuristic="warnsdorff", label=XSS)
    path = tmp_path / "report.html"
    out = invoke(
        "report", "html", str(a), str(b), "-o", str(path), env={"PACKSOLVE_DATABASE_URL": sqlite_url}
    )
    assert out.returncode == 0, out.stderr
    return path


def test_report_dom_has_its_tables_and_shows_the_script_named_level_as_text(
    tmp_path: Path, report: Path
) -> None:
    dom = browse(tmp_path, report, "--dump-dom")
    # Nothing a level or label holds became an element: the one script is the report's table sorter.
    assert dom.lower().count("<script") == 1 and "table.sortable" in dom
    assert dom.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 4  # hardest, levels, picture caption, label
    assert len(re.findall(r"<table", dom)) >= 5  # summary, per kind, hardest ×2, levels
    assert len(re.findall(r"<img ", dom)) == 2 + 6  # cactus, scatter, one picture per level
    assert "cactus" in dom and "PAR-2" in dom


def test_report_images_decode_and_no_script_runs(tmp_path: Path, report: Path) -> None:
    page = report.read_text(encoding="utf-8")
    # The copy drops the page's Content-Security-Policy so the probe may run: escaping alone must hold.
    page = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page)
    probed = tmp_path / "probed.html"
    probed.write_text(
        page.replace("<head>", "<head>" + PROBE_HEAD).replace("</body>", PROBE_TAIL + "</body>")
    )
    dom = browse(tmp_path, probed, "--dump-dom")
    probe = re.search(r'<div id="probe">([^<]*)</div>', dom)
    assert probe, dom[-2000:]
    # Tables: summary, per kind, run a's failures, hardest ×2, levels. Named cells: both hardest
    # tables, the levels table, the picture's caption and run b's label.
    assert probe.group(1) == "images 8/8 tables 6 alerts 0 named 5"


def test_report_screenshot_is_drawn(tmp_path: Path, report: Path) -> None:
    from matplotlib.image import imread

    shot = tmp_path / "report.png"
    browse(tmp_path, report, "--window-size=1300,2400", f"--screenshot={shot}", "--hide-scrollbars")
    pixels = imread(shot)
    assert pixels.shape[0] == 2400 and pixels.shape[1] == 1300
    # A blank or failed page is one or two colours; tables, plots and pictures are many.
    colours = {tuple(p) for p in pixels[::7, ::7, :3].reshape(-1, 3).round(2).tolist()}
    assert len(colours) > 50
    if os.environ.get("PACKSOLVE_KEEP_SCREENSHOT"):
        shutil.copy(shot, os.environ["PACKSOLVE_KEEP_SCREENSHOT"])
