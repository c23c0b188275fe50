"""A local run's last chunks hold one level each: two long levels at the end of a pack run side by side.

A chunk's attempts run one after another in one pool process, and the chunk size is guessed from
the levels' sizes on a first night: without the taper (planning.tapered_chunks) the pack's last two
levels, each long, would share the last chunk and end the night on one process while the other waited.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from tests.support.inprocess import exported, invoke

pytestmark = pytest.mark.usefixtures("chaos_env")

LONG_MS = 1500


def nights(tmp_path: Path, sqlite_url: str, levels: list[dict], count: int = 1) -> list[dict]:
    """Solve the pack of levels on 2 processes count times in one database; return the last run's records."""
    pack = tmp_path / "night.jsonl"
    pack.write_text("".join(json.dumps(level) + "\n" for level in levels))
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url}
    for _ in range(count):
        out = invoke("solve", str(pack), "-j", "2", "--heuristic", "sleep", "--format", "json", "-q", env=env)
        assert out.returncode == 0, out.stderr
    records = exported(str(json.loads(out.stdout)["run"]), env)
    assert len(records) == len(levels) and all(r["status"] == "solved" for r in records)
    return records


def test_the_two_long_levels_at_the_end_of_a_first_night_run_on_two_processes_at_once(
    tmp_path: Path, sqlite_url
):
    levels = [{"kind": "chaos", "id": i, "ms": 5} for i in range(60)]
    levels += [{"kind": "chaos", "id": 100 + i, "ms": LONG_MS} for i in range(2)]
    records = nights(tmp_path, sqlite_url, levels)
    long = sorted((r for r in records if r["wall_s"] >= LONG_MS / 1000), key=lambda r: r["started_at"])
    assert len(long) == 2
    first_end = datetime.fromisoformat(long[0]["finished_at"])
    second_start = datetime.fromisoformat(long[1]["started_at"])
    # Side by side: the second began before the first ended (one after the other, it would begin after).
    assert second_start < first_end, long


def test_a_second_night_runs_the_levels_its_history_says_are_long_first_each_on_a_process_of_its_own(
    tmp_path: Path, sqlite_url
):
    # The long levels last in the pack: the first night runs it in order, the second by its history.
    levels = [{"kind": "chaos", "id": i, "ms": 5} for i in range(40)]
    levels += [{"kind": "chaos", "id": 100 + i, "ms": LONG_MS} for i in range(2)]
    records = nights(tmp_path, sqlite_url, levels, count=2)
    long = [r for r in records if r["wall_s"] >= LONG_MS / 1000]
    short = [r for r in records if r["wall_s"] < LONG_MS / 1000]
    assert len(long) == 2
    # Both long levels began before every short one: one on each process (not in one chunk), first.
    assert max(r["started_at"] for r in long) < min(r["started_at"] for r in short), long
