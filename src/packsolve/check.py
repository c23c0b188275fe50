"""`packsolve check`: what solve or submit would do with a pack, read the same way, creating nothing."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine

from packsolve.api import Preparation
from packsolve.db.session import get_engine, session_scope
from packsolve.errors import OptionError
from packsolve.execution.preparing import needed
from packsolve.external.declaration import ExternalSolver
from packsolve.external.resolution import ProgramMissing, resolve
from packsolve.planning import Plan, check_distributed, choose_chunk_size, max_chunk_for, plan_request
from packsolve.request import LocalPool, Request
from packsolve.settings import DEFAULT_VISIBILITY_TIMEOUT


@dataclass(frozen=True)
class PackCheck:
    """What a run of the pack would be: its levels per kind and heuristic, what is left out and why."""

    plan: Plan
    request: Request
    per_kind: dict[str, dict[str, Any]]  # kind -> {"levels", "heuristics": {name: levels}}
    invalid: list[tuple[str, str]]  # (name, message) of the levels that cannot be read
    pool: LocalPool  # what solve would use
    chunk_size: int  # what submit would put in a task
    tasks: int
    distributed_problem: str | None  # why submit would refuse these limits (None: it would not)
    history: bool  # whether past runs informed the chunk size
    # What the run's heuristics need once per machine (execution.preparing), and whether this one has it.
    preparations: list[tuple[Preparation, bool]] = field(default_factory=list)


def check_pack(
    engine: Engine | None,
    paths: Sequence[str],
    request: Request,
    pool: LocalPool,
    chunk_size: int = 0,
    visibility_timeout: int = DEFAULT_VISIBILITY_TIMEOUT,
) -> PackCheck:
    """Read and plan the pack as solve and submit would; raise PlanError or OptionError as they would.

    engine: the results database if one exists (its history sets the chunk size as
    submit's would); None reads none. visibility_timeout: the settings' (seconds), which
    bounds what a task may carry as submit's does. pool: the processes solve would use
    (LocalPool.checked). Nothing is written anywhere.
    """
    plan = plan_request(paths, request)
    per_kind: dict[str, dict[str, Any]] = {}
    invalid = []
    met: set[str] = set()  # a level tried with several heuristics (a matrix) is one level
    for p in plan.attempts:
        if not p.level.valid:
            invalid.append((p.level.name, p.level.error or "invalid level"))
            continue
        entry = per_kind.setdefault(p.level.kind, {"levels": 0, "heuristics": Counter()})
        entry["levels"] += p.level.hash not in met
        met.add(p.level.hash)
        entry["heuristics"][p.heuristic] += 1
    for entry in per_kind.values():
        entry["heuristics"] = dict(entry["heuristics"])
    problem = None
    try:
        check_distributed(request.limits, visibility_timeout, chunk_size)
    except OptionError as exc:  # only submit would refuse these limits; solve runs them
        problem = str(exc)
    specs = plan.pending(request.limits)
    sizes = {p.level.hash: p.level.size for p in plan.attempts}
    with session_scope(engine or get_engine("sqlite://")) as session:
        size = chunk_size or (choose_chunk_size(session, specs, sizes, visibility_timeout) if specs else 1)
    size = min(size, max_chunk_for(request.limits, visibility_timeout))
    return PackCheck(
        plan,
        request,
        dict(sorted(per_kind.items())),
        invalid,
        pool,
        size,
        math.ceil(len(specs) / size) if specs else 0,
        problem,
        engine is not None,
        [(prep, _ready(prep)) for _, prep in needed(s.spec for s in specs)],
    )


def _ready(prep: Preparation) -> bool:
    try:
        return bool(prep.ready())
    except Exception:
        return False


def program_problem(solver: ExternalSolver) -> str | None:
    """Return why a declared program cannot run on this machine (each of its levels would be an error)."""
    try:
        resolve(solver)
    except ProgramMissing as exc:
        return str(exc)
    return None


def as_json(check: PackCheck) -> dict[str, Any]:
    """Return a check as a JSON-ready dict (fields in docs/reports.md)."""
    reading = check.plan.reading
    limits = check.request.limits
    return {
        "levels": sum(e["levels"] for e in check.per_kind.values()),
        "kinds": check.per_kind,
        "invalid": [{"level": n, "message": m} for n, m in check.invalid],
        "skipped_files": [{"path": s.path, "reason": s.reason} for s in reading.skipped_files],
        "duplicates": [{"level": n, "same_as": first} for n, first in reading.duplicates],
        "other_kinds": reading.other_kinds,
        "notes": check.plan.notes,
        "solvers": {
            name: {**s.to_json(), "problem": program_problem(s)}
            for name, s in sorted(check.plan.programs.items())
        },
        "limits": {
            "time_limit": limits.time_limit,
            "node_limit": limits.node_limit,
            "memory_limit_mb": limits.memory_limit_mb,
            "cpu_limit": limits.cpu_limit,
            "wall_backstop": limits.wall_limit() if limits.wall_is_backstop() else None,
            # Nx: each level's own limit, from its history when the run is made ({"time_limit": "3x,1s"}).
            "relative": check.request.relative.to_options() or None,
        },
        "prepare": [
            {"key": p.key, "what": p.what, "cost": p.cost, "where": p.where, "ready": ready}
            for p, ready in check.preparations
        ],
        "local": {"processes": check.pool.processes, "cpus_per_attempt": check.pool.cpus_per_attempt},
        "distributed": {
            "chunk_size": check.chunk_size,
            "tasks": check.tasks,
            "problem": check.distributed_problem,
            "from_history": check.history,
        },
    }
