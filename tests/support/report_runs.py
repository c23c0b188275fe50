"""Build runs with known results straight into a database (create_run + record), for report tests."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from packsolve.attempt import Result
from packsolve.db.attempts import record
from packsolve.db.models import utcnow
from packsolve.db.runs import PlannedAttempt, RunOptions, create_run
from packsolve.db.session import get_engine, session_scope
from packsolve.levels import Level, make_level
from packsolve.outcome import Outcome, SearchStats, Status
from packsolve.runstate import RunMode


def strip_level(n: int, name: str | None = None) -> Level:
    """Return a one-row onestroke level of n+2 cells (distinct per n), named name or strip-N."""
    return make_level(name or f"strip-{n}", {"kind": "onestroke", "grid": ["S" + "." * (n + 1)]})


def strip_path(level: Level) -> list[list[int]]:
    """Return the solution of a strip level: left to right."""
    return [[0, c] for c in range(len(level.data["grid"][0]))]


@dataclass(frozen=True)
class Planned:
    """What one attempt of a built run ends as; status None leaves it queued."""

    level: Level
    status: str | None
    wall_s: float = 0.0
    cpu_s: float = 0.0
    nodes: int = 0
    message: str = ""
    peak_rss_mb: float = 20.0
    # A run of several heuristics side by side tries a level with each: None, the run's heuristic.
    heuristic: str | None = None


def build_run(
    url: str,
    attempts: list[Planned],
    heuristic: str = "plain",
    time_limit: float | None = 10.0,
    label: str | None = None,
    worker: str = "w1@hostA",
    concurrency: int = 2,
    parent: int | None = None,
    mode: str = "local",
) -> int:
    """Create a run of the attempts and record every one with a status; return the run id.

    A distributed one (mode) is left unsent, as a submit that stopped before sending leaves it.
    """
    engine = get_engine(url)
    with session_scope(engine) as session:
        run_id = create_run(
            session,
            [PlannedAttempt(p.level, p.heuristic or heuristic, i) for i, p in enumerate(attempts)],
            RunOptions(
                mode=RunMode(mode),
                heuristic=heuristic,
                time_limit=time_limit,
                concurrency=concurrency,
                label=label,
                parent_id=parent,
            ),
        )
    started = utcnow() - timedelta(seconds=60)
    results = []
    for p in attempts:
        if p.status is None or not p.level.valid:
            continue
        solution: Any = strip_path(p.level) if p.status == Status.SOLVED.value else None
        outcome = Outcome(
            Status(p.status), solution, SearchStats(p.nodes, p.wall_s, p.cpu_s, p.peak_rss_mb), p.message
        )
        length = len(solution) if solution else None
        results.append(Result(run_id, p.level.hash, outcome, length, worker, started, heuristic=p.heuristic))
    with session_scope(engine) as session:
        record(session, results)
    return run_id


def overlapping_failures(url: str) -> int:
    """A run whose timeouts fall in two groups, one's words inside the other's ("time limit"), and an error.

    The messages are the solver budget's and the CPU backstop's, as written.
    """
    planned = [Planned(strip_level(i), "solved", 0.1, 0.1, 5) for i in range(2)]
    planned += [
        Planned(strip_level(10 + i), "timeout", 10.2, 9.9, 900 + i, f"time limit 1{i} s reached")
        for i in range(3)
    ]
    planned += [
        Planned(strip_level(20 + i), "timeout", 3.0, 0.4, 0, f"CPU time limit reached (0.{i + 3} s CPU)")
        for i in range(2)
    ]
    planned += [Planned(strip_level(30), "error", 0.1, 0.1, 1, "solver crashed with code 3")]
    return build_run(url, planned)
