"""Helpers for tests that drive real workers with the test-only `chaos` kind."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.support.kinds import chaos_kind


@pytest.fixture
def chaos_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Register the chaos kind here and in every subprocess the test starts (workers, CLI).

    Subprocesses import it from the repository root, which services.child_env puts on their PYTHONPATH.
    """
    monkeypatch.setenv("PACKSOLVE_EXTRA_KINDS", chaos_kind.ENV)


def write_pack(directory: Path, count: int, ms: Any = 50, seed: int = 0, name: str = "pack.jsonl") -> Path:
    """Write count chaos levels (ms: a number, or (lo, hi) drawn from seed) as one JSONL file."""
    rng = random.Random(seed)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    with path.open("w") as f:
        for i in range(count):
            m = rng.randint(*ms) if isinstance(ms, tuple) else ms
            f.write(json.dumps({"kind": "chaos", "id": i, "ms": m}) + "\n")
    return path


def export_records(database: str, run_id: int) -> list[dict[str, Any]]:
    """Return the run's export records, as `packsolve export` writes them."""
    from packsolve.db.session import get_engine, session_scope
    from packsolve.report.export import export_records as records

    with session_scope(get_engine(database)) as session:
        return [dict(r) for r in records(session, run_id)]


def audit(records: list[dict[str, Any]], levels: int) -> dict[str, Any]:
    """Return the figures a chaos test asserts on: final, lost, duplicated, statuses."""
    from packsolve.outcome import FINAL

    finals = {s.value for s in FINAL}
    per_level = Counter(r["level_hash"] for r in records)
    statuses = Counter(r["status"] for r in records)
    return {
        "levels": levels,
        "records": len(records),
        "final": sum(1 for r in records if r["status"] in finals),
        "lost": statuses.get("lost", 0),
        "duplicated": sum(n - 1 for n in per_level.values() if n > 1),
        "statuses": dict(statuses),
        "max_tries": max((r["tries"] or 0 for r in records), default=0),
    }
