"""The ASGI application: routes, the token check, security headers, and errors as one-line pages."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import FileResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from packsolve.errors import LevelNotFound, PacksolveError, RunNotFound
from packsolve.report.html import SORT_JS
from packsolve.web import actions, pages, plots
from packsolve.web.render import page
from packsolve.web.security import COOKIE, HEADER, Guard, same_origin

log = logging.getLogger("packsolve.web")
STATIC = Path(__file__).parent / "static"
# Scripts and styles come from this server only: a string that slipped into a page as markup still
# could not run (no inline script), and nothing is fetched from elsewhere.
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
OPEN_PATHS = ("/login", "/static/", "/favicon.ico")


class _Gate(BaseHTTPMiddleware):
    """Refuse a foreign Host (no token: DNS rebinding) and a POST from another page; ask for the token
    where one is set; add the security headers to every answer."""

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        guard: Guard = request.app.state.guard
        # Plain text, no page: a page carries the CSRF token, which another site must never read.
        if not guard.serves_host(request.headers.get("host")):
            return PlainTextResponse(
                f"this dashboard answers only at its own address ({', '.join(sorted(guard.hosts or ()))}); "
                "behind a reverse proxy, give it a token (PACKSOLVE_SERVE_TOKEN or --token-file)",
                status_code=400,
            )
        if request.method == "POST" and not same_origin(request.headers):
            return PlainTextResponse(
                "this form came from another site: send it from the dashboard's own page", status_code=403
            )
        if not request.url.path.startswith(OPEN_PATHS) and not guard.admits(
            request.cookies.get(COOKIE), request.headers.get(HEADER)
        ):
            if request.method == "GET" and HEADER not in request.headers:
                asked = request.url.path + (f"?{request.url.query}" if request.url.query else "")
                return RedirectResponse(f"/login?{urlencode({'next': asked})}", status_code=303)
            return page(request, "error.html", 401, message="this dashboard needs its access token")
        response = await call_next(request)
        response.headers.setdefault("Content-Security-Policy", CSP)
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "same-origin"
        response.headers.setdefault("Cache-Control", "no-store")
        return response


def _usage(request: Request, exc: Exception) -> Response:
    """A request that cannot be answered as asked: 404 for what does not exist, else 400; one line."""
    status = 404 if isinstance(exc, RunNotFound | LevelNotFound) else 400
    return page(request, "error.html", status, message=str(exc))


def _database(request: Request, exc: Exception) -> Response:
    """The database cannot be reached: 503, and the page tries again by itself."""
    first = next((line for line in str(getattr(exc, "orig", exc)).splitlines() if line.strip()), "")
    log.warning("database unavailable: %s", first)
    message = f"the database is not answering ({first.strip()}); this page retries by itself"
    return page(request, "error.html", 503, retry=True, message=message)


def _http(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    text = {404: "no such page", 405: "this page does not take that method"}.get(exc.status_code, exc.detail)
    return page(request, "error.html", exc.status_code, message=text)


def _bug(request: Request, exc: Exception) -> Response:
    log.exception("error serving %s", request.url.path, exc_info=exc)
    return page(request, "error.html", 500, message="internal error: the server's log has the details")


def _sort_js(request: Request) -> Response:
    return Response(SORT_JS, media_type="text/javascript")


def _favicon(request: Request) -> Response:
    # Browsers ask /favicon.ico of every site whatever the page links: answer it, not 404.
    return FileResponse(STATIC / "favicon.ico", media_type="image/vnd.microsoft.icon")


def create_app(
    engine: Engine, guard: Guard, read_only: bool = False, broker_url: str | None = None
) -> Starlette:
    """Return the dashboard over engine; read_only serves no action (no POST route at all)."""
    routes: list[Any] = [
        Route("/", pages.runs_page),
        Route("/live/runs", pages.runs_live),
        Route("/runs/{run}", pages.run_page),
        Route("/runs/{run}/live", pages.run_live),
        Route("/runs/{run}/progress.svg", plots.progress_svg),
        Route("/runs/{run}/failures", pages.failures_page),
        Route("/hardest", pages.hardest_page),
        Route("/compare", pages.compare_page),
        Route("/plots", plots.plots_page),
        Route("/levels/{hash}", pages.level_page),
        Route("/levels/{hash}/picture.svg", pages.level_picture),
        Route("/login", actions.login, methods=["GET", "POST"]),
        Route("/favicon.ico", _favicon),
        Route("/static/sort.js", _sort_js),  # the report's own table sorter: one script for both
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    if not read_only:
        routes += actions.ROUTES
    app = Starlette(
        routes=routes,
        middleware=[Middleware(_Gate)],
        exception_handlers={
            PacksolveError: _usage,
            DBAPIError: _database,
            HTTPException: _http,
            Exception: _bug,
        },
    )
    app.state.engine = engine
    app.state.guard = guard
    app.state.read_only = read_only
    app.state.broker_url = broker_url
    return app
