"""The actions: rerun, resume, cancel, label, delete (each POST with a CSRF token), and the login form.

Each does what its CLI command does by the same code: rerun and resume run the
command itself in a process of their own (a local pool outlives the request),
handed the run's id as read from the database (never the URL's text, which could
pass for an option) and every form value as --option=VALUE; cancel, label and
delete call the functions their commands call.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, quote

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from packsolve import runs
from packsolve.db.catalog import delete_run, relabel
from packsolve.db.runs import resolve_run, status_counts
from packsolve.errors import PlanError, ReportError
from packsolve.request import check_label
from packsolve.web.commands import run_command
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
    """Return the id of the URL's run: the command is handed a number, never the URL's text."""
    return await run_in_threadpool(_resolve, request, request.path_params["run"])


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
    """Start `packsolve rerun` of a failure group with the heuristic chosen; go to the new run's page."""
    fields = await form(request)
    run_id = await _run_id(request)
    args = ["rerun", str(run_id), f"--status={fields.get('status') or 'timeout'}", "--quiet", "--format=json"]
    for option in ("group", "kind", "message", "heuristic", "time_limit", "label"):
        if fields.get(option):
            # --name=VALUE: a value starting with "-" stays the option's value, never an option.
            args.append(f"--{option.replace('_', '-')}={fields[option]}")
    child = await run_command(request.app.state, args, r"run (\d+): rerun of")
    return _to_run(child)


async def resume(request: Request) -> Response:
    """Start `packsolve resume RUN`; back to its page."""
    await form(request)
    run_id = await _run_id(request)
    await run_command(request.app.state, ["resume", str(run_id), "--quiet"], r"^run (\S+): (?:resuming|sent)")
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
