"""The ASGI application: routes, the token check, security headers, and errors as one-line pages."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
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

from packsolve.db.session import get_engine
from packsolve.errors import LevelNotFound, PacksolveError, RunNotFound, ServiceError
from packsolve.queue.app import Cluster
from packsolve.report.html import SORT_JS
from packsolve.settings import Settings
from packsolve.web import actions, matrix, pages, plots
from packsolve.web.cache import Caches
from packsolve.web.metrics import metrics, metrics_registry
from packsolve.web.render import page, templates
from packsolve.web.security import COOKIE, HEADER, Guard, same_origin
from packsolve.web.starter import Starter

log = logging.getLogger("packsolve.web")
STATIC = Path(__file__).parent / "static"
# Scripts and styles come from this server only: a string that slipped into a page as markup still
# could not run (no inline script), and nothing is fetched from elsewhere.
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
OPEN_PATHS = ("/login", "/static/", "/favicon.ico")
# Answered to programs, not browsers: a missing token is a 401 line, never the login page.
MACHINE_PATHS = ("/metrics",)


def _bearer(authorization: str | None) -> str | None:
    """Return the token of an `Authorization: Bearer TOKEN` header (how Prometheus sends one), or None."""
    scheme, _, token = (authorization or "").partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


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
        header = request.headers.get(HEADER) or _bearer(request.headers.get("authorization"))
        if not request.url.path.startswith(OPEN_PATHS) and not guard.admits(
            request.cookies.get(COOKIE), header
        ):
            if request.url.path in MACHINE_PATHS or getattr(request.app.state, "machine_only", False):
                return PlainTextResponse(
                    "this server needs its access token: send it as `Authorization: Bearer TOKEN`\n",
                    status_code=401,
                )
            if request.method == "GET" and HEADER not in request.headers and header is None:
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
    """A request that cannot be answered as asked: 404 for what does not exist, else 400; one line.

    A service an action needs (the broker, the database) that cannot be reached: 503, one line.
    """
    if isinstance(exc, ServiceError):
        log.warning("%s: %s", request.url.path, exc)
        message = " ".join(line.strip() for line in str(exc).splitlines() if line.strip())
        return page(request, "error.html", 503, message=message)
    status = 404 if isinstance(exc, RunNotFound | LevelNotFound | matrix.NoMatrix) else 400
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
    settings: Settings,
    guard: Guard | None = None,
    read_only: bool = False,
    engine: Engine | None = None,
    cluster: Cluster | None = None,
) -> Starlette:
    """Return the dashboard of settings' database; read_only serves no action (no POST route at all).

    Its state is its own (app.state): the engine (engine, else one opened on settings.database_url,
    never creating a database), the guard (None: no token, any host), the caches, the templates, the
    Starter of its actions (its thread pool stops with the application), and the registry of /metrics
    (its queue depth of cluster, else of settings' broker).
    """
    engine = engine or get_engine(settings.database_url, create=False, read_only=read_only)
    starter = Starter(settings, engine)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            starter.close()

    routes: list[Any] = [
        Route("/", pages.runs_page),
        Route("/live/runs", pages.runs_live),
        Route("/runs/{run}", pages.run_page),
        Route("/runs/{run}/live", pages.run_live),
        Route("/runs/{run}/progress.svg", plots.progress_svg),
        Route("/runs/{run}/failures", pages.failures_page),
        Route("/runs/{run}/matrix", matrix.run_matrix_page),
        Route("/matrix", matrix.matrix_page),
        Route("/hardest", pages.hardest_page),
        Route("/compare", pages.compare_page),
        Route("/plots", plots.plots_page),
        Route("/workers", pages.workers_page),
        Route("/levels/{hash}", pages.level_page),
        Route("/levels/{hash}/picture.svg", pages.level_picture),
        Route("/metrics", metrics),
        Route("/login", actions.login, methods=["GET", "POST"]),
        Route("/favicon.ico", _favicon),
        Route("/static/sort.js", _sort_js),  # the report's own table sorter: one script for both
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    if not read_only:
        routes += actions.ROUTES
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        middleware=[Middleware(_Gate)],
        exception_handlers={
            PacksolveError: _usage,
            DBAPIError: _database,
            HTTPException: _http,
            Exception: _bug,
        },
    )
    app.state.settings = settings
    app.state.engine = engine
    app.state.guard = guard or Guard()
    app.state.read_only = read_only
    app.state.caches = Caches()
    app.state.templates = templates()
    app.state.starter = starter
    app.state.metrics = metrics_registry(engine, cluster or Cluster.of(settings))
    return app


def metrics_app(
    settings: Settings, engine: Engine, cluster: Cluster, guard: Guard | None = None
) -> Starlette:
    """Return a server of /metrics alone (`packsolve metrics`), under the dashboard's access rule."""
    app = Starlette(
        routes=[Route("/metrics", metrics)],
        middleware=[Middleware(_Gate)],
        exception_handlers={HTTPException: _plain_http, Exception: _plain_bug},
    )
    app.state.settings = settings
    app.state.guard = guard or Guard()
    app.state.metrics = metrics_registry(engine, cluster)
    app.state.machine_only = True  # no page, no login: every refusal is a line of text
    return app


def _plain_http(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    text = {404: "no such page: this server answers /metrics only"}.get(exc.status_code, str(exc.detail))
    return PlainTextResponse(text + "\n", status_code=exc.status_code)


def _plain_bug(request: Request, exc: Exception) -> Response:
    log.exception("error serving %s", request.url.path, exc_info=exc)
    return PlainTextResponse("internal error: the server's log has the details\n", status_code=500)
