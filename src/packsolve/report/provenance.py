"""Where a run's means came from: its kinds (source, version) and the program binaries its workers ran.

A summary lists them and warns when a run's workers ran different builds of one program;
a comparison warns when two runs used different versions of a kind or different builds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypedDict

from sqlalchemy import select
from sqlalchemy.orm import Session

from packsolve.db.models import Attempt, Run, Worker
from packsolve.db.programs import ProgramBuild, programs_of
from packsolve.db.runs import Provenance
from packsolve.db.tables import PENDING_VALUES
from packsolve.puzzles import KindOrigin
from packsolve.runstate import RunMode


class RunProvenance(TypedDict):
    """Where a run's means came from: its kinds as recorded, its programs as its workers ran them, doubts."""

    kinds: dict[str, Any]
    programs: list[ProgramBuild]
    measurement: list[
        str
    ]  # how its attempts were measured: cgroup-v1, cgroup-v2, rusage (one per machine kind)
    warnings: list[str]


def run_provenance(session: Session, run: Run) -> RunProvenance:
    """Return {kinds, programs, warnings}: the run's kinds, its programs as its workers ran them, doubts."""
    programs = programs_of(session, run.id)
    warnings = []
    by_solver: dict[str, list[ProgramBuild]] = {}
    for p in programs:
        by_solver.setdefault(p["solver"], []).append(p)
    for solver, builds in sorted(by_solver.items()):
        if len(builds) > 1:
            where = "; ".join(f"{b['sha256'][:12]} on {', '.join(b['workers'])}" for b in builds)
            warnings.append(f"workers ran different binaries of solver {solver!r}: {where}")
    measured = measurement_of(session, run)
    if len(measured) > 1:
        warnings.append(
            f"its attempts were measured in different ways ({', '.join(measured)}): see docs/limits.md"
        )
    return {
        "kinds": Provenance.of(run).kinds,
        "programs": programs,
        "measurement": measured,
        "warnings": warnings,
    }


def measurement_of(session: Session, run: Run) -> list[str]:
    """Return how the run's attempts were measured: a local run's machine's way, or its workers' ways.

    cgroup-v1 (each attempt's process tree in a cgroup of its own) or rusage (the solver child's
    rusage and /proc); [] for a run made before this was recorded.
    """
    if run.mode == RunMode.LOCAL:
        recorded = (run.options or {}).get("measurement")
        return [recorded] if recorded else []
    found = session.execute(
        select(Worker.measurement)
        .where(Worker.host.in_(select(Attempt.worker).where(Attempt.run_id == run.id).distinct()))
        .distinct()
    ).scalars()
    return sorted(m for m in found if m)


def _described(source: dict[str, Any]) -> str:
    if source.get("origin") == KindOrigin.BUILT_IN:
        return f"built-in (packsolve {source.get('version')})"
    return f"{source.get('source')} {source.get('version')}"


def cpus_per_attempt(run: Run) -> int | None:
    """Return the CPUs of its own each attempt of a local run was pinned to; None: not pinned."""
    return (run.options or {}).get("cpus_per_attempt")


def comparison_warnings(session: Session, runs: list[Run]) -> list[str]:
    """Return one sentence per kind whose version, or program whose binary, differs from the first run's,
    and one if the runs' attempts were pinned differently (their CPU times may then differ by it)."""
    base = runs[0]
    base_kinds = Provenance.of(base).kinds
    base_builds = _builds(session, base)
    out = []
    for run in runs[1:]:
        if cpus_per_attempt(run) != cpus_per_attempt(base):
            mine, theirs = _pinning(cpus_per_attempt(run)), _pinning(cpus_per_attempt(base))
            out.append(f"run {run.id} pinned {mine}, run {base.id} {theirs}")
        kinds = Provenance.of(run).kinds
        for kind in sorted(set(base_kinds) & set(kinds)):
            a, b = base_kinds[kind], kinds[kind]
            if (a.get("source"), a.get("version")) != (b.get("source"), b.get("version")):
                out.append(
                    f"run {run.id} used kind {kind} from {_described(b)}, run {base.id} from {_described(a)}"
                )
        builds = _builds(session, run)
        for solver in sorted(set(base_builds) & set(builds)):
            if base_builds[solver] != builds[solver]:
                mine = ", ".join(sorted(s[:12] for s in builds[solver]))
                theirs = ", ".join(sorted(s[:12] for s in base_builds[solver]))
                out.append(f"run {run.id} ran solver {solver!r} as {mine}, run {base.id} as {theirs}")
    return out


def _pinning(cpus: int | None) -> str:
    return "no attempt to CPUs of its own" if cpus is None else f"each attempt to {cpus} CPU(s) of its own"


def _builds(session: Session, run: Run) -> dict[str, set[str]]:
    builds: dict[str, set[str]] = {}
    for p in programs_of(session, run.id):
        builds.setdefault(p["solver"], set()).add(p["sha256"])
    return builds


def provenance_rows(p: RunProvenance) -> list[tuple[str, str]]:
    """Return (label, text) rows for a summary table: kinds that are not built in, programs run."""
    rows = []
    plugins = [
        f"{k}: {_described(s)}"
        for k, s in sorted(p["kinds"].items())
        if s.get("origin") != KindOrigin.BUILT_IN
    ]
    if plugins:
        rows.append(("plug-in kinds", "; ".join(plugins)))
    if p.get("measurement"):
        rows.append(("measured by", ", ".join(p["measurement"])))
    for prog in p["programs"]:
        rows.append(
            (
                f"program {prog['solver']}",
                f"{prog['command']} (sha256 {prog['sha256'][:16]}) on {len(prog['workers'])} worker(s)",
            )
        )
    return rows


def kinds_no_worker_offers(session: Session, run_id: int, offers: Iterable[Mapping[str, Any]]) -> list[str]:
    """Return the kinds of the run's pending attempts that no worker offers, sorted.

    offers holds what each live worker offers, as packsolve.puzzles.offered() returns it in
    that worker (kind -> source and version): for `status` to say which levels wait in vain.
    """
    offered = {kind for offer in offers for kind in offer}
    pending = session.execute(
        select(Attempt.kind).where(Attempt.run_id == run_id, Attempt.status.in_(PENDING_VALUES)).distinct()
    ).scalars()
    return sorted(set(pending) - offered)
