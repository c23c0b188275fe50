"""What a rerun form offers per kind: the kind's heuristics and the programs declared for it."""

from __future__ import annotations

from collections.abc import Iterable

from packsolve.db.models import Run
from packsolve.db.runs import Provenance
from packsolve.errors import PacksolveError
from packsolve.external.declaration import declared_in, load_solvers
from packsolve.puzzles import get_kind


def heuristic_choices(run: Run, kinds: Iterable[str]) -> dict[str, list[str]]:
    """Return {kind: heuristics} to rerun run with: the kind's own, then programs declared for it."""
    try:
        declared = {**declared_in(Provenance.of(run).solvers), **load_solvers(None)}
    except PacksolveError:
        declared = declared_in(Provenance.of(run).solvers)  # a broken packsolve.toml: the run's own only
    out = {}
    for kind in sorted(kinds):
        try:
            own = list(get_kind(kind).solvers)
        except PacksolveError:
            own = []  # a kind no longer installed: only its declared programs can run it
        out[kind] = own + sorted(n for n, s in declared.items() if s.kind == kind and n not in own)
    return out
