"""Per-level figures a designer orders a pack by: time against level size, and peak memory."""

from __future__ import annotations

from typing import TypedDict

from sqlalchemy import select
from sqlalchemy.orm import Session

from packsolve.db.models import Attempt, LevelRow, Run
from packsolve.outcome import NOT_RUN_VALUES
from packsolve.report.metrics import rounded

# Points drawn per run: a plot of more shows nothing more, and costs the browser.
MAX_POINTS = 5000


class SizeTime(TypedDict):
    """An attempt that ran, with its level's size: a point of the time-against-size plot."""

    level: str
    level_hash: str
    kind: str
    size: int | None
    status: str
    wall_s: float | None
    peak_rss_mb: float | None


def size_times(session: Session, run: Run, limit: int = MAX_POINTS) -> list[SizeTime]:
    """Return the run's attempts that ran (first `limit` in pack order): level, kind, size, status, wall_s."""
    q = (
        select(
            Attempt.name,
            Attempt.level_hash,
            Attempt.kind,
            LevelRow.size,
            Attempt.status,
            Attempt.wall_s,
            Attempt.peak_rss_mb,
        )
        .join(LevelRow, LevelRow.hash == Attempt.level_hash)
        .where(Attempt.run_id == run.id, Attempt.status.not_in(NOT_RUN_VALUES), Attempt.wall_s.is_not(None))
        .order_by(Attempt.seq)
        .limit(limit)
    )
    return [
        {
            "level": n,
            "level_hash": h,
            "kind": k,
            "size": s,
            "status": st,
            "wall_s": rounded(w),
            "peak_rss_mb": rounded(m, 1),
        }
        for n, h, k, s, st, w, m in session.execute(q)
    ]


def kinds_of(session: Session, hashes: list[str]) -> dict[str, str]:
    """Return {level hash: kind} of the levels named (unknown hashes are left out)."""
    out: dict[str, str] = {}
    for i in range(0, len(hashes), 500):
        part = hashes[i : i + 500]
        rows = session.execute(select(LevelRow.hash, LevelRow.kind).where(LevelRow.hash.in_(part)))
        out.update({h: k for h, k in rows})  # a Result is no mapping: dict(result) fails on SQLAlchemy 2
    return out
