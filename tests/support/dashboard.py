"""A real `packsolve serve` process and headless Chromium (Debian's, driven by Playwright) to look at it."""

from __future__ import annotations

import re
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.support.services import IN_CI, child_env, packsolve_cmd

CHROMIUM = "/usr/bin/chromium"
# No browser download (none is possible here): Playwright drives the system's Chromium with these flags,
# which keep it off the network, the GPU and the user's profile.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
_URL = re.compile(r"packsolve serve: (http://\S+/)")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Yield a Playwright Chromium browser (the system's), closed after the module's tests."""
    if not Path(CHROMIUM).exists() and shutil.which("chromium") is None:
        if IN_CI:
            pytest.fail("chromium is not installed (.ci/run must apt-get install chromium)", pytrace=False)
        pytest.skip("chromium is not installed")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=shutil.which("chromium") or CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """Yield a fresh page (its own cookies) whose console errors are kept in page.errors."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    p = context.new_page()
    p.set_default_timeout(20_000)
    p.errors = []
    p.on("pageerror", lambda exc: p.errors.append(str(exc)))
    yield p
    context.close()


class Served:
    """A running `packsolve serve`: its base URL and process."""

    def __init__(self, process: subprocess.Popen[str], url: str, log: Path) -> None:
        self.process = process
        self.url = url
        self.log = log

    def get(self, path: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
        """Return the status and body of GET path (errors included, redirects not followed)."""

        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args: Any) -> None:
                return None

        opener = urllib.request.build_opener(NoRedirect)
        request = urllib.request.Request(self.url + path.lstrip("/"), headers=headers or {})
        try:
            with opener.open(request, timeout=30) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()


@contextmanager
def serving(
    database: str,
    *args: str,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    log_dir: Path | None = None,
) -> Iterator[Served]:
    """Start `packsolve serve --port 0 ARGS` on database; yield it once it prints its URL; stop it after."""
    log = (log_dir or Path(cwd or ".")) / f"serve-{time.monotonic_ns()}.log"
    with log.open("w") as err:
        process = subprocess.Popen(
            packsolve_cmd("serve", "--port", "0", *args),
            stdout=subprocess.DEVNULL,
            stderr=err,
            text=True,
            env=child_env({"PACKSOLVE_DATABASE_URL": database, **(env or {})}),
            cwd=cwd,
        )
    try:
        deadline = time.monotonic() + 60
        while not (found := _URL.search(log.read_text())):
            assert process.poll() is None, f"serve exited {process.returncode}: {log.read_text()}"
            assert time.monotonic() < deadline, f"serve printed no URL: {log.read_text()}"
            time.sleep(0.05)
        yield Served(process, found.group(1), log)
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


def handled(app: Any, handler: Any, path: str, query: bytes = b"", **params: str) -> Any:
    """Return handler's response to a GET of path?query on app, in this process (no server, no HTTP).

    params are the route's path parameters (run="3"); the app's state (engine, caches) is the handler's.
    """
    from starlette.requests import Request

    scope = {
        "type": "http",
        "app": app,
        "method": "GET",
        "path": path,
        "query_string": query,
        "headers": [],
        "path_params": params,
    }
    return handler(Request(scope))
