"""Pages from Jinja2 templates (autoescaped: every string from a level, run or solver is shown as text)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from jinja2 import Environment
from starlette.requests import Request
from starlette.responses import HTMLResponse

from packsolve.report.cactus import time_text
from packsolve.report.jinja import environment
from packsolve.report.progress import duration
from packsolve.runstate import ShownState


def _secs(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


def _time(value: float | None) -> str:
    return "—" if value is None else time_text(value)


def _count(value: int | None) -> str:
    return "—" if value is None else f"{value:,}"


def _query(request: Request, **changes: Any) -> str:
    """Return the request's query string with some parameters changed (None: removed)."""
    params = dict(request.query_params)
    params.update({k: v for k, v in changes.items() if v is not None})
    for k, v in changes.items():
        if v is None:
            params.pop(k, None)
    return "?" + urlencode(params)


def templates() -> Environment:
    """Return the dashboard's template environment (one per application: app.state.templates)."""
    env = environment("packsolve.web")
    env.filters.update(secs=_secs, count=_count, duration=duration, time=_time)
    env.globals.update(url_with=_query, zip=zip, ShownState=ShownState)
    return env


def page(request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
    """Return the template rendered for request (its guard's CSRF token and read-only flag included)."""
    state = request.app.state
    html = state.templates.get_template(template).render(
        request=request, csrf=state.guard.csrf, read_only=state.read_only, **context
    )
    return HTMLResponse(html, status_code=status)
