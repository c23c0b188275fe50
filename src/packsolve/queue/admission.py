"""Admitting a task: what a worker checks before it runs anything of it, and its refusals.

In order, nothing run before each check: the signature (the cluster's task key), the format,
the deployment id, the kinds, heuristics and programs this worker has (a program by name and
declaration digest, bound to this worker's own declaration), then the database's run, attempts,
heuristics and limits (matching, called once the task is taken). A task that another worker may
serve goes back to the broker unacknowledged; one that nobody can is dropped; each reason is
logged once a minute.
"""

from __future__ import annotations

import functools
import logging
import os
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from packsolve.db.session import get_engine
from packsolve.db.task_match import mismatches
from packsolve.db.workers import deployment_id
from packsolve.errors import UnknownHeuristic, UnknownKind
from packsolve.execution import AttemptSpec
from packsolve.execution.programs import ProgramMissing, resolve
from packsolve.levels import level_hash
from packsolve.puzzles import get_kind
from packsolve.queue.protocol import Task, TaskKeys, decode, signature_problem
from packsolve.solvers import ExternalSolver, ProgramRef, Solvers, declared_as

log = logging.getLogger("packsolve.worker")
# retry(engine or connection, work) runs work(connection) in a transaction, retried (consumer.with_db_retry).
Retry = Callable[[Any, Callable[[Any], Any]], Any]

# A worker refuses a task it cannot serve (a kind or heuristic it lacks) without acknowledging it,
# so the levels wait in the queue for a worker that can. A refusal is cheap, so a worker that
# meets only such tasks would spin: after each refusal in a row it waits longer before the next,
# from REFUSE_FIRST_S doubling up to REFUSE_MAX_S; a task it can run resets the wait.
REFUSE_FIRST_S = 0.05
REFUSE_MAX_S = 5.0
# The same reason is logged as an error at most this often.
REFUSE_LOG_EVERY_S = 60.0


class Refused(Exception):
    """A task this worker runs nothing of; requeue: back to the broker unacknowledged, for another worker."""

    def __init__(self, reason: str, requeue: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.requeue = requeue


def admit(payload: Any, declared: Solvers, keys: TaskKeys, retry: Retry) -> Task:
    """Return the task as this worker runs it, its programs bound to declared; raise Refused saying why not.

    retry(engine, work) runs work(connection) with the worker's retries (consumer.with_db_retry).

    Unacknowledged (another worker may serve it): a bad or missing signature, another
    database, a kind, heuristic or program this worker lacks or declares otherwise.
    Dropped: what is no packsolve task at all, or names no deployment.
    """
    problem = signature_problem(payload, keys)
    if problem is not None:
        raise Refused(problem, requeue=True)
    try:
        task = decode(payload)
    except ValueError as exc:
        raise Refused(f"not a packsolve task ({exc})", requeue=False) from None
    if task.deployment is None:
        raise Refused(
            f"run {task.run_id}'s task names no deployment: not sent by `packsolve submit` or the scheduler",
            requeue=False,
        )
    reason = refusal(task, declared, retry)
    if reason is not None:
        raise Refused(reason, requeue=True)
    return bind(task, declared)


def refusal(task: Task, declared: Solvers, retry: Retry) -> str | None:
    """Return why this worker cannot run the task, or None.

    It cannot if the task comes from another database than this worker's (its
    deployment id differs), or if it lacks a kind or a heuristic, or a program
    the task names is not declared here with the same declaration digest, or
    not found on this machine.
    """
    if task.deployment is not None:
        engine = get_engine(os.environ.get("PACKSOLVE_DATABASE_URL"), pre_ping=False)
        mine = _DEPLOYMENT.get(str(engine.url)) or _DEPLOYMENT.setdefault(
            str(engine.url), retry(engine, deployment_id)
        )  # read once per process: every task asks
        if mine != task.deployment:
            where = engine.url.render_as_string(hide_password=True)
            return (
                f"run {task.run_id}'s tasks come from another database (deployment {task.deployment[:8]}) "
                f"than this worker's {where} (deployment {mine[:8]}): start the worker with "
                "PACKSOLVE_DATABASE_URL (or --database-url) set to the database `packsolve submit` used"
            )
    programs: dict[str, ExternalSolver] = {}
    for _, spec in task.items:
        if spec.program is None:
            continue
        try:
            if not isinstance(spec.program, ProgramRef) or spec.program.name != spec.heuristic:
                name = getattr(spec.program, "name", "?")
                raise ValueError(f"program {name!r} does not name the heuristic {spec.heuristic!r}")
            program = declared_as(declared, spec.program)
        except ValueError as exc:
            return f"this worker cannot run run {task.run_id}'s {spec.kind} levels: {exc}"
        programs[program.name] = program
    for kind_name, heuristic in sorted({(spec.kind, spec.heuristic) for _, spec in task.items}):
        try:
            kind = get_kind(kind_name)
            if not any(p.name == heuristic and p.kind == kind_name for p in programs.values()):
                kind.solver(heuristic)
        except (UnknownKind, UnknownHeuristic) as exc:
            return f"this worker cannot run run {task.run_id}'s {kind_name} levels: {exc}"
    for name in sorted(programs):
        try:
            resolve(programs[name])
        except ProgramMissing as exc:
            return f"this worker cannot run run {task.run_id}'s {programs[name].kind} levels: {exc}"
    return None


def bind(task: Task, declared: Solvers) -> Task:
    """Return the task with each program reference replaced by this worker's declaration (refusal passed)."""
    items = tuple(
        (h, replace(spec, program=declared[spec.program.name]) if spec.program is not None else spec)
        for h, spec in task.items
    )
    return replace(task, items=items)


_DEPLOYMENT: dict[str, str] = {}


class Refusals:
    """This process's refusals in a row: how long to wait before the next, and what was logged when."""

    def __init__(self) -> None:
        self.in_a_row = 0
        self.logged: dict[str, float] = {}

    def refuse(self, reason: str) -> float:
        """Log the reason (at most once per REFUSE_LOG_EVERY_S) and return the seconds to wait first."""
        self._log("refused without acknowledging (left for another worker): %s", reason)
        self.in_a_row += 1
        return min(REFUSE_MAX_S, REFUSE_FIRST_S * 2 ** (self.in_a_row - 1))

    def drop(self, reason: str) -> None:
        """Log that a task was refused and acknowledged (nothing will run it), at most once per reason."""
        self._log("refused and dropped (nothing run): %s", reason)

    def _log(self, form: str, reason: str) -> None:
        now = time.monotonic()
        if now - self.logged.get(reason, -REFUSE_LOG_EVERY_S) >= REFUSE_LOG_EVERY_S:
            self.logged[reason] = now
            log.error(form, reason)

    def accepted(self) -> None:
        self.in_a_row = 0


REFUSALS = Refusals()


def matching(claims: Any, task: Task, retry: Retry) -> list[tuple[str, AttemptSpec]]:
    """Return the task's attempts that match the database (run, level, heuristic, limits); log the rest.

    claims is the connection (or engine) retry(claims, work) runs the one query on.

    A level whose content is not the one its hash names is left out too. Nothing of
    a task whose run is unknown, not distributed, or of other limits is returned.
    """
    items = list(task.items)
    if not items:
        return []
    limits = items[0][1].limits
    if any(spec.limits != limits for _, spec in items):
        REFUSALS.drop(f"run {task.run_id}'s task carries attempts of different limits")
        return []
    heuristics = {h: spec.heuristic for h, spec in items}
    check = functools.partial(
        mismatches,
        run_id=task.run_id,
        heuristics=heuristics,
        limits=(limits.time_limit, limits.node_limit, limits.memory_limit_mb),
    )
    whole, wrong = retry(claims, check)
    if whole is not None:
        REFUSALS.drop(whole)
        return []
    for h, spec in items:
        if level_hash(spec.level) != h:
            wrong[h] = f"level {h[:12]} of run {task.run_id}: its content is not the level its hash names"
    for reason in sorted(set(wrong.values())):
        REFUSALS.drop(reason)
    return [(h, spec) for h, spec in items if h not in wrong]
