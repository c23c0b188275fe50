"""The parts of split levels (models.Part): each part's run written as it ends, read back for reports."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import ColumnElement, and_, case, delete, exists, or_, select, tuple_
from sqlalchemy.orm import Session

from packsolve.db.models import Attempt, Part
from packsolve.outcome import Outcome


@dataclass(frozen=True)
class PartRun:
    """One part's run as a run's executor saw it end: which attempt and part, its round and window,
    its Outcome (its resume: the first bound it left), where and when it ran."""

    run_id: int
    level_hash: str
    heuristic: str
    part: int
    parts: int
    round: int
    window: tuple[int, int] | None
    outcome: Outcome
    worker: str
    started_at: datetime
    finished_at: datetime


def record_parts(session: Session, runs: Sequence[PartRun]) -> None:
    """Write the part runs (one row each: a part run again in a later round is a row of its own)."""
    session.add_all(
        Part(
            run_id=r.run_id,
            level_hash=r.level_hash,
            heuristic=r.heuristic,
            part=r.part,
            parts=r.parts,
            round=r.round,
            window_lo=None if r.window is None else r.window[0],
            window_hi=None if r.window is None else r.window[1],
            status=r.outcome.status,
            nodes=r.outcome.nodes,
            wall_s=r.outcome.stats.wall_s,
            cpu_s=r.outcome.stats.cpu_s,
            peak_rss_mb=r.outcome.stats.peak_rss_mb or None,
            resume=r.outcome.resume,
            worker=r.worker,
            started_at=r.started_at,
            finished_at=r.finished_at,
            message=r.outcome.message or None,
        )
        for r in runs
    )


def parts_of(session: Session, run_id: int, level_hash: str, heuristic: str | None = None) -> list[Part]:
    """Return the part runs of a level's attempt in a run (every heuristic's without one), by part, round
    (only those that count: of_its_claim)."""
    query = (
        select(Part)
        .join(Attempt, of_its_attempt())
        .where(Part.run_id == run_id, Part.level_hash == level_hash, of_its_claim())
    )
    if heuristic is not None:
        query = query.where(Part.heuristic == heuristic)
    return list(session.scalars(query.order_by(Part.heuristic, Part.part, Part.round)))


def of_its_attempt() -> ColumnElement[bool]:
    """The SQL condition joining a part run (models.Part) to its attempt (models.Attempt)."""
    return and_(
        Attempt.run_id == Part.run_id,
        Attempt.level_hash == Part.level_hash,
        Attempt.heuristic == Part.heuristic,
    )


def of_its_claim() -> ColumnElement[bool]:
    """The SQL condition on a part run joined to (or correlated with) its attempt: it counts. A local run's
    always; a worker's only under the attempt's last claim (its fencing token): the parts of an earlier
    leader, whose claim was taken back, are not the attempt's (a later claim splitting the level again
    forgets them; one running it whole leaves them, uncounted)."""
    return or_(Part.token.is_(None), Part.token == Attempt.claims)


def split_attempt() -> ColumnElement[bool]:
    """The SQL condition on an attempt (models.Attempt, in the enclosing query): it ran as parts."""
    return exists().where(of_its_attempt(), of_its_claim()).correlate(Attempt)


def attempt_seconds() -> ColumnElement[float]:
    """An attempt's seconds as the hardest levels rank it: its wall time, or, split into parts (issue
    38), its parts' CPU summed: what it cost, however short its wall time."""
    return case((split_attempt(), Attempt.cpu_s), else_=Attempt.wall_s)


def forget_parts(session: Session, run_id: int, keys: Sequence[tuple[str, str]]) -> None:
    """Delete the part runs of the run's attempts of these (level hash, heuristic) pairs (run again)."""
    if keys:
        pairs = tuple_(Part.level_hash, Part.heuristic).in_(list(keys))
        session.execute(delete(Part).where(Part.run_id == run_id, pairs))
