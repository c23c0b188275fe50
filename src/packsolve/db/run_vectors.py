"""run_vectors: each finished run's level vector (db.level_vectors), made when it is stamped finished.

A finished run's attempts never change, so db.runs.finish_run_if_done packs them once and keeps the
arrays here with the run's finished_at; compare (db.compare_figures.read_figures) groups the cells of
a set of finished runs from their vectors instead of joining their attempts in SQL, when every run
of the set has one made at its current finished_at (a run resumed and finished again has it made
again; migration 0018 packed the runs finished before it). A set with a run going, a run whose
vector could not be made, or more than MAX_ATTEMPTS attempts is compared in SQL, as before: the
same figures, slower.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from sqlalchemy import Connection, and_, delete, insert, select, text
from sqlalchemy.orm import Session

from packsolve.db.level_vectors import LevelVector, Unmatched, cells, pack
from packsolve.db.models import Run, RunVector

log = logging.getLogger("packsolve.db")

# A vector takes 34 bytes an attempt while a compare holds it: two runs of a million attempts
# took the dashboard from 80-87 MB to 184-189 MB at its peak. Past this many attempts in one
# compare the server would grow past 200 MB: the set is compared in SQL.
MAX_ATTEMPTS = 2_000_000
_ROWS = "SELECT level_hash, kind, status, wall_s, peak_rss_mb FROM attempts WHERE run_id = :run"
# Rows read at once when packing: a batch takes a few megabytes of Python objects, the run's
# million would take hundreds.
_BATCH = 50_000
_ARRAYS = ("keys", "checks", "kinds", "statuses", "walls", "peaks")
# One statement per array, spelled out: SQL is never composed from strings (a test reads the source).
_READ_ONE = {
    "keys": "SELECT keys FROM run_vectors WHERE run_id = %s AND finished_at = %s",
    "checks": "SELECT checks FROM run_vectors WHERE run_id = %s AND finished_at = %s",
    "kinds": "SELECT kinds FROM run_vectors WHERE run_id = %s AND finished_at = %s",
    "statuses": "SELECT statuses FROM run_vectors WHERE run_id = %s AND finished_at = %s",
    "walls": "SELECT walls FROM run_vectors WHERE run_id = %s AND finished_at = %s",
    "peaks": "SELECT peaks FROM run_vectors WHERE run_id = %s AND finished_at = %s",
}
_DTYPES = {"keys": "<u8", "checks": "<u8", "kinds": "u1", "statuses": "u1", "walls": "<f8", "peaks": "<f8"}


def store_vector(db: Session | Connection, run_id: int) -> bool:
    """Pack the finished run's attempts, keep them with its finished_at (replacing any); return whether kept.

    Never raises: a vector that cannot be made or written (a level hash that is not a SHA-256, a
    failing write) leaves the run without one, in a savepoint, so the transaction stamping the
    run finished goes on; its compares are then aggregated in SQL.
    """
    try:
        with db.begin_nested():
            db.execute(delete(RunVector).where(RunVector.run_id == run_id))
            finished = db.execute(select(Run.finished_at).where(Run.id == run_id)).scalar()
            vector = pack(_batches(db, run_id)) if finished is not None else None
            if vector is None:
                return False
            db.execute(insert(RunVector).values(run_id=run_id, finished_at=finished, **_columns(vector)))
    except Exception:  # the finish must not fail for an optimisation: the SQL path stays
        log.warning("run %s: no level vector kept, its compares read its attempts", run_id, exc_info=True)
        return False
    return True


def _batches(db: Session | Connection, run_id: int) -> Iterator[list[tuple[Any, ...]]]:
    """Yield the run's (level_hash, kind, status, wall_s, peak_rss_mb) rows a batch at a time.

    Through the driver's own cursor, in the transaction: SQLAlchemy's rows took twice the time,
    and its psycopg streaming held the run's million rows at once (700 MB) where this holds a batch.
    """
    conn = db.connection() if isinstance(db, Session) else db
    raw: Any = conn.connection.driver_connection
    postgres = conn.dialect.name == "postgresql"
    # PostgreSQL's: a server-side cursor, its numbers in binary (a quarter less time than as text).
    cursor = raw.cursor(name=f"run_vector_{run_id}", binary=True) if postgres else raw.cursor()
    try:
        cursor.execute(_ROWS.replace(":run", "%s" if postgres else "?"), (run_id,))
        while batch := cursor.fetchmany(_BATCH):
            yield batch
    finally:
        cursor.close()


def _columns(vector: LevelVector) -> dict[str, Any]:
    legend = {"kinds": list(vector.kind_names), "statuses": list(vector.status_names)}
    out: dict[str, Any] = {"attempts": len(vector), "legend": json.dumps(legend)}
    for name in _ARRAYS:
        out[name] = np.ascontiguousarray(getattr(vector, name), dtype=_DTYPES[name]).tobytes()
    return out


def _arrays(db: Session | Connection, run_id: int, stamp: Any) -> dict[str, bytes] | None:
    """Return the bytes of each array of the run's vector made at stamp; None if not there (made again)."""
    conn = db.connection() if isinstance(db, Session) else db
    if conn.dialect.name != "postgresql":
        # One row read: SQLite reaches a later blob of a row through the pages of the ones before it.
        # The columns as text: the driver's bytes as they come, without a copy by the column type.
        columns = text(", ".join(_ARRAYS))
        row = conn.execute(
            select(columns)
            .select_from(RunVector)
            .where(RunVector.run_id == run_id, RunVector.finished_at == stamp)
        )
        got = row.first()
        return None if got is None else dict(zip(_ARRAYS, got, strict=True))
    # psycopg reads bytea as hex text unless asked for binary: twice the bytes to carry and a decoding,
    # 4x slower over two runs of a million attempts (0.45 s against 0.1 s). An array at a time, so
    # that the driver's buffer holds one array, not the run's.
    raw = conn.connection.driver_connection
    out = {}
    for name in _ARRAYS:
        with raw.cursor(binary=True) as cur:  # type: ignore[union-attr]
            cur.execute(_READ_ONE[name], (run_id, stamp))
            one = cur.fetchone()
        if one is None:
            return None
        out[name] = one[0]
    return out


def _vector(db: Session | Connection, run_id: int, stamp: Any, legend: str) -> LevelVector | None:
    """Read the run's vector made at stamp; None if it is not there (made again meanwhile)."""
    arrays = _arrays(db, run_id, stamp)
    if arrays is None:
        return None
    names = json.loads(legend)
    return LevelVector(
        kind_names=tuple(names["kinds"]),
        status_names=tuple(names["statuses"]),
        **{name: np.frombuffer(data, dtype=_DTYPES[name]) for name, data in arrays.items()},
    )


def load_vectors(db: Session | Connection, runs: Sequence[Any]) -> list[LevelVector] | None:
    """Return the runs' vectors in their order; None unless each is finished with a vector of its finished_at.

    None too when the runs hold more than MAX_ATTEMPTS attempts together (counted before reading).
    """
    ids = {r.id for r in runs}
    if not runs or any(r.finished_at is None for r in runs):
        return None
    current = and_(Run.id == RunVector.run_id, Run.finished_at == RunVector.finished_at)
    found = db.execute(
        select(RunVector.run_id, RunVector.finished_at, RunVector.attempts, RunVector.legend)
        .join(Run, current)
        .where(RunVector.run_id.in_(ids))
    ).all()
    if len(found) != len(ids) or sum(f.attempts for f in found) > MAX_ATTEMPTS:
        return None
    got = {}
    for f in found:
        # Each array is read where the vector still has the finished_at read above: a vector made
        # again meanwhile (the run resumed and finished) is never mixed with this one.
        vector = _vector(db, f.run_id, f.finished_at, f.legend)
        if vector is None:
            return None  # the SQL path reads the attempts as they are now
        got[f.run_id] = vector
    return [got[r.id] for r in runs]


def vector_cells(db: Session | Connection, runs: Sequence[Any]) -> list[dict[str, Any]] | None:
    """Return compare's grouped cells of the runs from their vectors; None if they must be aggregated in SQL.

    None when load_vectors gives none, when two levels of the runs share a 64-bit prefix (the join
    would not be exact), or when the runs' statuses make too many groups (level_vectors.MAX_CODES).
    """
    vectors = load_vectors(db, runs)
    if vectors is None:
        return None
    try:
        return cells(vectors)
    except (Unmatched, OverflowError):
        return None
