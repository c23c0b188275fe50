"""Helpers for tests that drive real workers with the test-only `chaos` kind."""

from __future__ import annotations

import json
import os
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

KINDS_DIR = Path(__file__).parent


@pytest.fixture
def chaos_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the chaos kind importable here and in every subprocess (workers, CLI)."""
    monkeypatch.syspath_prepend(str(KINDS_DIR))
    path = os.environ.get("PYTHONPATH", "")
    monkeypatch.setenv("PYTHONPATH", str(KINDS_DIR) + (os.pathsep + path if path else ""))
    monkeypatch.setenv("PACKSOLVE_EXTRA_KINDS", "chaos:chaos_kind")


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
