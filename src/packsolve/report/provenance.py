"""Where a run's means came from: its kinds (source, version) and the program binaries its workers ran.

A summary lists them and warns when a run's workers ran different builds of one program;
a comparison warns when two runs used different versions of a kind or different builds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypedDict

from sqlalchemy import select
from sqlalchemy.orm import Session

from packsolve.db.models import Attempt, Run
from packsolve.db.programs import ProgramBuild, programs_of
from packsolve.db.runs import Provenance
from packsolve.db.tables import PENDING_VALUES


class RunProvenance(TypedDict):
    """Where a run's means came from: its kinds as recorded, its programs as its workers ran them, doubts."""

    kinds: dict[str, Any]
    programs: list[ProgramBuild]
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
    return {"kinds": Provenance.of(run).kinds, "programs": programs, "warnings": warnings}


def _described(source: dict[str, Any]) -> str:
    if source.get("origin") == "built-in":
        return f"built-in (packsolve {source.get('version')})"
    return f"{source.get('source')} {source.get('version')}"


def comparison_warnings(session: Session, runs: list[Run]) -> list[str]:
    """Return one sentence per kind whose version, or program whose binary, differs from the first run's."""
    base = runs[0]
    base_kinds = Provenance.of(base).kinds
    base_builds = _builds(session, base)
    out = []
    for run in runs[1:]:
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


def _builds(session: Session, run: Run) -> dict[str, set[str]]:
    builds: dict[str, set[str]] = {}
    for p in programs_of(session, run.id):
        builds.setdefault(p["solver"], set()).add(p["sha256"])
    return builds


def provenance_rows(p: RunProvenance) -> list[tuple[str, str]]:
    """Return (label, text) rows for a summary table: kinds that are not built in, programs run."""
    rows = []
    plugins = [
        f"{k}: {_described(s)}" for k, s in sorted(p["kinds"].items()) if s.get("origin") != "built-in"
    ]
    if plugins:
        rows.append(("plug-in kinds", "; ".join(plugins)))
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
