"""Per-level figures across runs: finished runs are folded into `level_stats` once, running ones read live.

The database side of the hardest-levels report (report/hardest.py): a run that changes (resumed,
rerun into) is forgotten here so the next report folds it again.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import case, delete, func, literal, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from packsolve.db.models import Attempt, LevelStats, LevelStatsRun, Run
from packsolve.db.parts import attempt_seconds
from packsolve.db.session import read_only
from packsolve.figures.par2 import par2_limit_sql, par2_sql
from packsolve.outcome import NOT_RUN_VALUES, SUCCESS_VALUES, Status

COLUMNS = ("attempts", "decided", "solved", "best_wall_s", "best_nodes", "max_par2_s", "max_nodes")


def _least(a: Any, b: Any) -> Any:
    # min() of SQLite and LEAST() differ on NULL; this ignores NULL on both databases.
    return case((a.is_(None), b), (b.is_(None), a), (a < b, a), else_=b)


def _greatest(a: Any, b: Any) -> Any:
    return case((a.is_(None), b), (b.is_(None), a), (a > b, a), else_=b)


def _run_rows(run_ids: Any) -> Any:
    """Return a SELECT of one level_stats row per attempt that ran in the given runs."""
    decided = case((Attempt.status.in_(SUCCESS_VALUES), 1), else_=0)
    return (
        select(
            Attempt.level_hash,
            Attempt.kind,
            literal(1).label("attempts"),
            decided.label("decided"),
            case((Attempt.status == Status.SOLVED, 1), else_=0).label("solved"),
            # A decided level's time: its wall, or what it cost when split into parts (its parts' CPU).
            case((Attempt.status.in_(SUCCESS_VALUES), attempt_seconds())).label("best_wall_s"),
            case((Attempt.status.in_(SUCCESS_VALUES), Attempt.nodes)).label("best_nodes"),
            par2_sql(Attempt.status, Attempt.wall_s, par2_limit_sql(Run, Attempt)).label("max_par2_s"),
            Attempt.nodes.label("max_nodes"),
            Attempt.run_id.label("last_run_id"),
        )
        .join(Run, Run.id == Attempt.run_id)
        .where(Attempt.run_id.in_(run_ids), Attempt.status.not_in(NOT_RUN_VALUES))
    )


def fold_runs(session: Session, run_ids: list[int]) -> list[int]:
    """Fold finished runs' attempts into level_stats; return the runs this call folded.

    Marker rows are inserted first (ON CONFLICT DO NOTHING ... RETURNING), so two
    reports racing to fold a run cannot count it twice: each run is folded by
    whoever inserted its marker. The runs are aggregated per level first, so a
    level gets one upsert per call, not one per run (no row versions pile up on
    PostgreSQL when many runs are folded at once).
    """
    if not run_ids:
        return []
    dialect = session.get_bind().dialect.name
    insert_for = postgresql.insert if dialect == "postgresql" else sqlite.insert
    claim = (
        insert_for(LevelStatsRun)
        .values([{"run_id": r} for r in run_ids])
        .on_conflict_do_nothing()
        .returning(LevelStatsRun.run_id)
    )
    claimed = list(session.execute(claim).scalars())
    if not claimed:
        return []
    per_attempt = _run_rows(claimed).subquery()
    c = per_attempt.c
    per_level = select(
        c.level_hash,
        func.min(c.kind),
        func.sum(c.attempts),
        func.sum(c.decided),
        func.sum(c.solved),
        func.min(c.best_wall_s),
        func.min(c.best_nodes),
        func.max(c.max_par2_s),
        func.max(c.max_nodes),
        func.max(c.last_run_id),
    ).group_by(c.level_hash)
    stmt = insert_for(LevelStats).from_select(["level_hash", "kind", *COLUMNS, "last_run_id"], per_level)
    t, x = LevelStats.__table__.c, stmt.excluded
    stmt = stmt.on_conflict_do_update(
        index_elements=["level_hash"],
        set_={
            "attempts": t.attempts + x.attempts,
            "decided": t.decided + x.decided,
            "solved": t.solved + x.solved,
            "best_wall_s": _least(t.best_wall_s, x.best_wall_s),
            "best_nodes": _least(t.best_nodes, x.best_nodes),
            "max_par2_s": _greatest(t.max_par2_s, x.max_par2_s),
            "max_nodes": _greatest(t.max_nodes, x.max_nodes),
            "last_run_id": _greatest(t.last_run_id, x.last_run_id),
        },
    )
    session.execute(stmt)
    return claimed


def refresh(session: Session) -> int:
    """Fold every finished run not folded yet (rebuilding if a folded run was deleted); return runs folded.

    A read-only reader folds nothing: live_rows reads the runs not folded from their attempts.
    """
    if read_only(session):
        return 0
    gone = session.scalar(select(func.count()).where(LevelStatsRun.run_id.not_in(select(Run.id))))
    if gone:
        session.execute(delete(LevelStats))
        session.execute(delete(LevelStatsRun))
    todo = session.scalars(
        select(Run.id)
        .where(Run.finished_at.is_not(None), Run.id.not_in(select(LevelStatsRun.run_id)))
        .order_by(Run.id)
    ).all()
    folded = fold_runs(session, list(todo))
    if folded:
        session.commit()  # keep the fold even if the report itself fails later
    return len(folded)


def forget_run(session: Session, run_id: int) -> None:
    """Drop the folded figures if run_id was folded (it is about to change): the next report rebuilds them."""
    if session.get(LevelStatsRun, run_id) is not None:
        session.execute(delete(LevelStats))
        session.execute(delete(LevelStatsRun))


def live_rows(session: Session, kind: str | None = None) -> dict[str, dict[str, Any]]:
    """Return level hash -> figures of the attempts of runs not folded (not finished yet, or read-only)."""
    unfinished = select(Run.id).where(Run.id.not_in(select(LevelStatsRun.run_id)))
    q = _run_rows(unfinished)
    if kind:
        q = q.where(Attempt.kind == kind)
    out: dict[str, dict[str, Any]] = {}
    for row in session.execute(q).mappings():
        merge(out, dict(row))
    return out


def merge(into: dict[str, dict[str, Any]], row: dict[str, Any]) -> None:
    """Combine one level's figures into the dict keyed by level hash (the same rules as the fold)."""
    old = into.get(row["level_hash"])
    if old is None:
        into[row["level_hash"]] = dict(row)
        return
    for key in ("attempts", "decided", "solved"):
        old[key] += row[key]
    for key in ("best_wall_s", "best_nodes"):
        vals = [v for v in (old[key], row[key]) if v is not None]
        old[key] = min(vals) if vals else None
    for key in ("max_par2_s", "max_nodes", "last_run_id"):
        vals = [v for v in (old[key], row[key]) if v is not None]
        old[key] = max(vals) if vals else None


def stats_rows(session: Session, hashes: list[str]) -> list[dict[str, Any]]:
    """Return the folded figures of the given levels."""
    rows: list[dict[str, Any]] = []
    for i in range(0, len(hashes), 500):
        q = select(LevelStats).where(LevelStats.level_hash.in_(hashes[i : i + 500]))
        rows.extend(row_of(s) for s in session.scalars(q))
    return rows


def row_of(stats: LevelStats) -> dict[str, Any]:
    """Return one level's folded figures as the dict live_rows, merge and stats_rows use."""
    fixed = {"level_hash": stats.level_hash, "kind": stats.kind, "last_run_id": stats.last_run_id}
    return {**fixed, **{c: getattr(stats, c) for c in COLUMNS}}
