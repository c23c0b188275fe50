"""The actions: rerun, resume, cancel, label, delete (each POST with a CSRF token), and the login form.

Each does what its CLI command does by calling the functions the command calls,
in this process: rerun and resume through the application's Starter (planning in
its thread pool; only a local run's solving is detached, as `packsolve resume
RUN`), cancel, label and delete directly. Their errors are the CLI's one-line
errors, shown as a page.
"""

from __future__ import annotations

import math
from typing import Any
from urllib.parse import parse_qs, quote

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from packsolve import runs
from packsolve.bounds import DURATION_FORM, duration_seconds
from packsolve.db.catalog import delete_run, relabel
from packsolve.db.runs import resolve_run, status_counts
from packsolve.errors import OptionError, PlanError, ReportError
from packsolve.execution.relative import Relative, parse_relative
from packsolve.external.declaration import load_solvers
from packsolve.request import RerunRequest, check_label
from packsolve.web.pages import db
from packsolve.web.render import page
from packsolve.web.security import COOKIE, safe_next


async def form(request: Request) -> dict[str, str]:
    """Return a POSTed form's fields (the first value of each); ReportError without the CSRF token."""
    body = (await request.body()).decode("utf-8", "replace")
    fields = {k: v[0] for k, v in parse_qs(body, keep_blank_values=True).items()}
    if not request.app.state.guard.csrf_matches(fields.get("csrf")):
        raise ReportError("this form is stale or came from another site: reload the page and send it again")
    return fields


def _to_run(run_id: int | str) -> RedirectResponse:
    return RedirectResponse(f"/runs/{quote(str(run_id))}", status_code=303)


def _resolve(request: Request, ref: str) -> int:
    with db(request) as session:
        return resolve_run(session, ref).id


async def _run_id(request: Request) -> int:
    """Return the id of the URL's run (RunNotFound if there is none)."""
    return await run_in_threadpool(_resolve, request, request.path_params["run"])


def _seconds(text: str | None, option: str = "--time-limit") -> float | Relative | None:
    """Return a form's limit in seconds, or relative (3x: execution.relative), None: the parent's;
    OptionError as the option would say it."""
    if not text or not text.strip():
        return None
    try:
        relative = parse_relative(text)
    except ValueError as exc:
        raise OptionError(option, str(exc)) from None
    if relative is not None:
        return relative
    seconds = duration_seconds(text)
    if seconds is None:
        raise OptionError(option, f"{text!r} is not a duration: {DURATION_FORM}")
    if not math.isfinite(seconds):
        raise OptionError(option, f"{text!r} is not a finite duration: {DURATION_FORM}")
    return seconds


def rerun_request(run_id: int, fields: dict[str, str]) -> tuple[RerunRequest, list[str]]:
    """Return the rerun a failure group's form asks for, and the `packsolve rerun` command it stands for.

    The command is recorded with the run (where it came from), never run.
    """
    status = fields.get("status") or "timeout"
    request = RerunRequest(
        parent=str(run_id),
        statuses=tuple(status.split(",")),
        kind=fields.get("kind") or None,
        heuristic=fields.get("heuristic") or None,
        time_limit=_seconds(fields.get("time_limit")),
        cpu_limit=_seconds(fields.get("cpu_limit"), "--cpu-limit"),
        label=fields.get("label") or None,
        message=fields.get("message") or None,
        group=fields.get("group") or None,
        solvers=load_solvers(None),
    )
    argv = ["rerun", str(run_id), f"--status={status}"]
    for option in ("group", "kind", "message", "heuristic", "time_limit", "cpu_limit", "label"):
        if fields.get(option):
            argv.append(f"--{option.replace('_', '-')}={fields[option]}")
    return request, argv


async def login(request: Request) -> Response:
    """The token form: a right token sets the cookie every later request carries."""
    guard = request.app.state.guard
    if request.method == "GET":
        return page(request, "login.html", wrong=False, next=safe_next(request.query_params.get("next")))
    body = (await request.body()).decode("utf-8", "replace")
    fields = parse_qs(body)
    given, back = fields.get("token", [""])[0], safe_next(fields.get("next", ["/"])[0])
    if not guard.token_matches(given):
        return page(request, "login.html", 401, wrong=True, next=back)
    response = RedirectResponse(back, status_code=303)  # back to the page asked for
    response.set_cookie(
        COOKIE, guard.token, httponly=True, samesite="strict", secure=request.url.scheme == "https"
    )
    return response


async def rerun(request: Request) -> Response:
    """Rerun a failure group with the heuristic chosen as `packsolve rerun` does; go to the new run's page."""
    fields = await form(request)
    run_id = await _run_id(request)
    asked, argv = await run_in_threadpool(rerun_request, run_id, fields)
    child = await request.app.state.starter.rerun(asked, argv)
    return _to_run(child)


async def resume(request: Request) -> Response:
    """Resume the run as `packsolve resume RUN` does; back to its page."""
    await form(request)
    run_id = await _run_id(request)
    await request.app.state.starter.resume(str(run_id))
    return _to_run(run_id)


def _cancel(request: Request, ref: str) -> Any:
    return runs.cancel(request.app.state.engine, ref)


async def cancel(request: Request) -> Response:
    """Cancel a run as `packsolve cancel` does; back to its page."""
    await form(request)
    done = await run_in_threadpool(_cancel, request, request.path_params["run"])
    return _to_run(done.run_id)


def _relabel(request: Request, ref: str, label: str, move: bool) -> int:
    new = None if label in ("", "-") else check_label(label)
    with db(request) as session:
        run_id = resolve_run(session, ref).id
        relabel(session, run_id, new, move)
    return run_id


async def label(request: Request) -> Response:
    """Name a run (empty: no label) as `packsolve runs label` does; back to its page."""
    fields = await form(request)
    run_id = await run_in_threadpool(
        _relabel, request, request.path_params["run"], fields.get("label", ""), fields.get("move") == "1"
    )
    return _to_run(run_id)


def _deletable(request: Request, ref: str) -> tuple[int, str]:
    """Return the run's id and what deleting it removes; PlanError for a run still going (as the CLI)."""
    with db(request) as session:
        target = resolve_run(session, ref)
        attempts = sum(status_counts(session, target.id).values())
        if target.finished_at is None:
            raise PlanError(f"run {target.id} is still going: cancel it first, then delete it")
        what = (
            f"run {target.id}"
            + (f" ({target.label})" if target.label else "")
            + f" and its {attempts} attempt(s)"
        )
        return target.id, what


def _delete(request: Request, ref: str) -> str:
    run_id, what = _deletable(request, ref)
    with db(request) as session:
        delete_run(session, run_id)
    return what


async def delete(request: Request) -> Response:
    """GET: ask for confirmation (data is lost). POST with confirm=yes: delete as `packsolve runs delete`."""
    ref = request.path_params["run"]
    if request.method == "GET":
        run_id, what = await run_in_threadpool(_deletable, request, ref)
        return page(request, "confirm.html", run_id=run_id, what=what)
    fields = await form(request)
    if fields.get("confirm") != "yes":
        raise ReportError("deleting a run needs its confirmation: tick the box on the delete page")
    what = await run_in_threadpool(_delete, request, ref)
    return page(request, "deleted.html", what=what)


ROUTES = [
    Route("/runs/{run}/rerun", rerun, methods=["POST"]),
    Route("/runs/{run}/resume", resume, methods=["POST"]),
    Route("/runs/{run}/cancel", cancel, methods=["POST"]),
    Route("/runs/{run}/label", label, methods=["POST"]),
    Route("/runs/{run}/delete", delete, methods=["GET", "POST"]),
]
