"""Admitting a task: what a worker checks before it runs anything of it, and its refusals.

In order, nothing run before each check: the signature (the cluster's task key), the format,
the deployment id, the kinds, heuristics and programs this worker has (a program by name and
declaration digest, bound to this worker's own declaration), then the database's run, attempts,
kinds, heuristics and limits (matching, called once the task is taken), whose cap on tries is used.
A task that another worker may serve is sent back to the queue's tail to come back after a wait
(consumer.refuse), and the refusal recorded (db.refusals); one that nobody can is dropped; each
reason is logged once a minute.
"""

from __future__ import annotations

import functools
import logging
import random
import threading
import time
from dataclasses import replace
from typing import Any

from sqlalchemy import Connection, Engine

from packsolve.attempt import tries_cap
from packsolve.db import counters
from packsolve.db.retry import Transactional, in_transaction
from packsolve.db.task_match import KnownAttempts
from packsolve.db.workers import deployment_id
from packsolve.errors import UnknownHeuristic, UnknownKind
from packsolve.external.declaration import ExternalSolver, ProgramRef, Solvers, declared_as
from packsolve.external.resolution import ProgramMissing, resolve
from packsolve.levels import level_hash
from packsolve.masking import mask_url
from packsolve.puzzles import get_kind
from packsolve.queue.protocol import (
    SIGNATURE,
    Task,
    TaskKeys,
    decode,
    signature_problem,
)
from packsolve.settings import DEFAULT_DB_PATIENCE_S

log = logging.getLogger("packsolve.worker")

# A task refused for the nth time comes back to the queue's tail after REFUSE_FIRST_S * 2**(n-1)
# seconds, at most REFUSE_MAX_S: the task is acknowledged and sent again with that countdown
# (Celery's retry: the count travels in its headers, outside the signed body), so it never stops
# the tasks behind it, no pool process waits, and a worker that meets only such tasks does not spin.
# The wait stays short: the task waits in the memory of the worker that takes it next, which may
# be one that refuses it again; each time it comes back, one that can serve it may take it.
REFUSE_FIRST_S = 1.0
REFUSE_MAX_S = 5.0
# A task a worker may not trust (unsigned, signed with another key) or of another database is
# dropped after this many refusals (about a minute); its scheduler sends again what is still queued.
REFUSE_UNRECORDED = 16
# The same reason is logged as an error at most this often.
REFUSE_LOG_EVERY_S = 60.0


class Refused(Exception):
    """A task this worker runs nothing of.

    requeue: another worker may serve it (it goes back to the queue's tail, see consumer.refuse).
    authentic: this worker lacks what the task needs and may trust the task (signed with its key,
    or a cluster without one): such refusals by every live worker give its attempts up
    (db.refusals). ours: the task is of this worker's database (its refusal can be recorded there).
    """

    def __init__(
        self,
        reason: str,
        requeue: bool,
        authentic: bool = False,
        ours: bool = True,
        counted: str = "malformed",
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.counted = counted  # the reason /metrics counts it under (db.counters.REFUSAL_REASONS)
        self.requeue = requeue
        self.authentic = authentic
        self.ours = ours


class Admission:
    """What one worker process admits: its declared programs, its task keys, its database and its id.

    The database's deployment id is read once, by the first task that asks; each database call is
    retried for up to patience_s on a dropped connection (the db_patience setting).
    """

    def __init__(
        self, declared: Solvers, keys: TaskKeys, engine: Engine, patience_s: float = DEFAULT_DB_PATIENCE_S
    ) -> None:
        self.declared = declared
        self.keys = keys
        self.engine = engine
        self.patience_s = patience_s
        self._deployment: str | None = None
        self.refusals = Refusals()
        # Tasks refused and not recorded with a refusal row: counted at the lease's next renewal.
        self.tally = Tally()
        # Recent reads of runs and attempts: a task of one level costs no round trip of its own.
        self.known = KnownAttempts()

    def deployment(self) -> str:
        """Return the id of this worker's database (read once per process: every task asks)."""
        if self._deployment is None:
            self._deployment = in_transaction(self.engine, deployment_id, self.patience_s)
        return self._deployment

    def admit(self, payload: Any) -> Task:
        """Return the task as this worker runs it, its programs bound to declared; else raise Refused.

        Unacknowledged (another worker may serve it): a bad or missing signature, another
        database, a kind, heuristic or program this worker lacks or declares otherwise.
        Dropped: what is no packsolve task at all, or names no deployment. Only a refusal for
        what this worker lacks, of a task it may trust, is authentic (see Refused).
        """
        problem = signature_problem(payload, self.keys)
        if problem is not None:
            signed = isinstance(payload, dict) and isinstance(payload.get(SIGNATURE), str)
            raise Refused(
                problem, requeue=True, authentic=False, counted="bad_signature" if signed else "unsigned"
            )
        try:
            task = decode(payload)
        except ValueError as exc:
            raise Refused(f"not a packsolve task ({exc})", requeue=False) from None
        if task.deployment is None:
            raise Refused(
                f"run {task.run_id}'s task names no deployment: "
                "not sent by `packsolve submit` or the scheduler",
                requeue=False,
            )
        other = self._other_database(task)
        if other is not None:
            raise Refused(other, requeue=True, authentic=False, ours=False, counted="wrong_deployment")
        found = _refusal(task, self.declared)
        if found is not None:
            raise Refused(found[0], requeue=True, authentic=True, counted=found[1])
        return bind(task, self.declared)

    def _other_database(self, task: Task) -> str | None:
        """Return why the task is not this worker's (another database sent it), or None."""
        mine = self.deployment()
        if task.deployment is None or mine == task.deployment:
            return None
        where = mask_url(self.engine.url.render_as_string(hide_password=False))
        return (
            f"run {task.run_id}'s tasks come from another database (deployment {task.deployment[:8]}) "
            f"than this worker's {where} (deployment {mine[:8]}): start the worker with "
            "PACKSOLVE_DATABASE_URL (or --database-url) set to the database `packsolve submit` used"
        )

    def matching(self, claims: Transactional, task: Task) -> Task:
        """Return the task as the database has it: its attempts that match, under the run's cap; log the rest.

        claims is the connection (or engine) the check runs on: one query, or none when the
        attempts named were read lately with those after them (db.task_match.KnownAttempts).
        An attempt runs only if its level is one of the run's, of the kind and heuristic the
        database has, and its content is the one its hash names; one already final (the task
        came again, or a finished run's was replayed) is skipped before any solver starts.
        Nothing of a task whose run is unknown, not distributed or of other limits is returned; nor an
        attempt the task gives other wall or CPU limits than the database has (its own, or its run's).
        The run's max_tries replaces the task's: a broker writer cannot choose how many tries
        an attempt gets.
        """
        items = list(task.items)
        if not items:
            return replace(task, items=())
        limits = items[0].spec.limits
        # Node and memory limits are the run's; wall and CPU ones may be each attempt's own (a relative
        # run's), so they are checked per attempt.
        run_wide = (limits.node_limit, limits.memory_limit_mb)
        if any((item.spec.limits.node_limit, item.spec.limits.memory_limit_mb) != run_wide for item in items):
            self.refusals.drop(f"run {task.run_id}'s task carries attempts of different limits")
            self.tally.add("mismatch")
            return replace(task, items=())
        check = functools.partial(
            self.known.mismatches,
            run_id=task.run_id,
            attempts={
                item.key: (item.spec.kind, item.spec.limits.time_limit, item.spec.limits.cpu_limit)
                for item in items
            },
            limits=(limits.time_limit, limits.node_limit, limits.memory_limit_mb, limits.cpu_limit),
        )
        verdict = in_transaction(claims, check, self.patience_s)
        if verdict.whole is not None:
            self.refusals.drop(verdict.whole)
            self.tally.add(verdict.refused_as)
            return replace(task, items=())
        wrong = dict(verdict.wrong)
        for item in items:
            h = item.level_hash
            if item.key not in wrong and level_hash(item.spec.level) != h:
                wrong[item.key] = (
                    f"level {h[:12]} of run {task.run_id}: its content is not the level its hash names"
                )
        for reason in sorted(set(wrong.values())):
            self.refusals.drop(reason)
        if wrong:  # a task some of whose levels are not the database's: counted once
            self.tally.add("mismatch")
        for (h, heuristic), status in verdict.final.items():  # a duplicate, a replay, a cancelled leftover
            log.info("run %s level %s %s: skip (already %s)", task.run_id, h[:12], heuristic, status)
        runnable = tuple(item for item in items if item.key not in wrong and item.key not in verdict.final)
        return replace(task, items=runnable, max_tries=tries_cap(verdict.max_tries))


def refusal(task: Task, declared: Solvers) -> str | None:
    """Return why this worker cannot run the task's kinds, heuristics or programs, or None.

    It cannot if it lacks a kind or a heuristic, or a program the task names is not
    declared here with the same declaration digest, or not found on this machine.
    """
    found = _refusal(task, declared)
    return None if found is None else found[0]


def _refusal(task: Task, declared: Solvers) -> tuple[str, str] | None:
    """Return (why, as what it is counted: missing_kind or undeclared_program) for refusal, or None."""
    programs: dict[str, ExternalSolver] = {}
    for spec in (item.spec for item in task.items):
        if spec.program is None:
            continue
        try:
            if not isinstance(spec.program, ProgramRef) or spec.program.name != spec.heuristic:
                name = getattr(spec.program, "name", "?")
                raise ValueError(f"program {name!r} does not name the heuristic {spec.heuristic!r}")
            program = declared_as(declared, spec.program)
        except ValueError as exc:
            return (
                f"this worker cannot run run {task.run_id}'s {spec.kind} levels: {exc}",
                "undeclared_program",
            )
        programs[program.name] = program
    kind = _missing_kind(task, programs)
    if kind is not None:
        return kind, "missing_kind"
    unfound = _missing_program(task, programs)
    return None if unfound is None else (unfound, "undeclared_program")


def _missing_kind(task: Task, programs: dict[str, ExternalSolver]) -> str | None:
    """Return why a kind or heuristic of the task is not installed here (a program is one), or None."""
    for kind_name, heuristic in sorted({(item.spec.kind, item.spec.heuristic) for item in task.items}):
        try:
            kind = get_kind(kind_name)
            if not any(p.name == heuristic and p.kind == kind_name for p in programs.values()):
                kind.solver(heuristic)
        except (UnknownKind, UnknownHeuristic) as exc:
            return f"this worker cannot run run {task.run_id}'s {kind_name} levels: {exc}"
    return None


def _missing_program(task: Task, programs: dict[str, ExternalSolver]) -> str | None:
    """Return why a declared program of the task cannot be found on this machine, or None."""
    for name in sorted(programs):
        try:
            resolve(programs[name])
        except ProgramMissing as exc:
            return f"this worker cannot run run {task.run_id}'s {programs[name].kind} levels: {exc}"
    return None


def bind(task: Task, declared: Solvers) -> Task:
    """Return the task with each program reference replaced by this worker's declaration (refusal passed)."""
    items = tuple(
        replace(item, spec=replace(item.spec, program=declared[item.spec.program.name]))
        if item.spec.program is not None
        else item
        for item in task.items
    )
    return replace(task, items=items)


def comes_back_in(refusals: int) -> float:
    """Return the seconds before a task refused this many times (1 the first) comes back to a worker.

    Drawn from the upper half of the wait: a wait in step with the refusing worker's own polls
    of the broker (Redis: one a second) would hand the task back to that worker every time.
    """
    wait = min(REFUSE_MAX_S, REFUSE_FIRST_S * 2 ** min(refusals - 1, 16))
    return float(wait * random.uniform(0.5, 1.0))


class Tally:
    """Tasks this process refused, by reason (db.counters.REFUSAL_REASONS), not yet written to the database.

    A refusal costs no statement of its own: the lease's next renewal writes the tally (Lease.renew,
    one statement), so /metrics shows it within a renewal; a process killed loses what it had not
    written.
    """

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}
        self._lock = threading.Lock()

    def add(self, reason: str) -> None:
        with self._lock:
            self._counts[reason] = self._counts.get(reason, 0) + 1

    def pending(self) -> dict[str, int]:
        """Return what is not written yet (written, it is taken off with written())."""
        with self._lock:
            return dict(self._counts)

    def written(self, counts: dict[str, int]) -> None:
        """Take counts (a pending() that was written) off the tally; what was added since stays."""
        with self._lock:
            for reason, n in counts.items():
                left = self._counts.get(reason, 0) - n
                if left > 0:
                    self._counts[reason] = left
                else:
                    self._counts.pop(reason, None)

    def write(self, connection: Connection) -> dict[str, int]:
        """Write what is pending (one statement) and return it: the caller calls written() once committed."""
        counts = self.pending()
        counters.add_many(connection, counters.TASKS_REFUSED, {r: float(n) for r, n in counts.items()})
        return counts


class Refusals:
    """What this process logged when (each reason at most once per REFUSE_LOG_EVERY_S)."""

    def __init__(self) -> None:
        self.logged: dict[str, float] = {}

    def refuse(self, reason: str, back_in: float | None) -> None:
        """Log a refusal: sent back to the queue (back_in seconds), or dropped after too many (None)."""
        if back_in is None:
            self._log("refused and dropped (none of its levels waits, or refused too often): %s", reason)
        else:
            self._log("refused, sent back to the queue for another worker: %s", reason)

    def drop(self, reason: str) -> None:
        """Log that a task was refused and acknowledged (nothing will run it), at most once per reason."""
        self._log("refused and dropped (nothing run): %s", reason)

    def _log(self, form: str, reason: str) -> None:
        now = time.monotonic()
        if now - self.logged.get(reason, -REFUSE_LOG_EVERY_S) >= REFUSE_LOG_EVERY_S:
            self.logged[reason] = now
            log.error(form, reason)
