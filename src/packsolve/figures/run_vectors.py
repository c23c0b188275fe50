"""A finished run's level vector (figures.level_vectors), kept as its VECTOR snapshot.

A finished run's attempts never change, so its attempts are packed once, after it finished (the
scheduler, a local solve's end, or the first compare that wants it), and kept as a snapshot
(figures.snapshots): the legend in the payload, the arrays' bytes one after the other in data.
Compare (figures.compare_pairs.read_figures) groups the cells of a set of finished runs from their
vectors instead of joining their attempts in SQL, when every run of the set has one that holds. A
set with a run going, a run whose vector cannot be made, or more than MAX_ATTEMPTS attempts is
compared in SQL, as before: the same figures, slower.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from sqlalchemy import Connection, DateTime, bindparam, select, text
from sqlalchemy.orm import Session

from packsolve.db.models import Run
from packsolve.db.session import read_only
from packsolve.figures import snapshots
from packsolve.figures.level_vectors import LevelVector, Unmatched, cells, pack

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
_DTYPES = {"keys": "<u8", "checks": "<u8", "kinds": "u1", "statuses": "u1", "walls": "<f8", "peaks": "<f8"}
# The arrays' bytes, read at the stamp their payload was read at: a vector made again is never mixed in.
_DATA = "SELECT data FROM run_snapshots WHERE run_id = :run AND name = :name AND stamp = :stamp"
_DATA_PG = "SELECT data FROM run_snapshots WHERE run_id = %(run)s AND name = %(name)s AND stamp = %(stamp)s"


def store_vector(db: Session | Connection, run_id: int) -> bool:
    """Pack the finished run's attempts, keep them as its VECTOR snapshot; return whether a vector was kept.

    Never raises: a vector that cannot be made (a level hash that is not a SHA-256, ...) is kept as
    such (its compares are then aggregated in SQL, and it is not packed again); a failing read or
    write leaves the run without one.
    """
    try:
        finished = db.execute(select(Run.finished_at).where(Run.id == run_id)).scalar()
        if finished is None:
            return False
        vector = pack(_batches(db, run_id))
        if vector is None:
            snapshots.keep(db, run_id, snapshots.VECTOR, {"unmade": True})
            return False
        legend = {"kinds": list(vector.kind_names), "statuses": list(vector.status_names)}
        data = b"".join(
            np.ascontiguousarray(getattr(vector, name), dtype=_DTYPES[name]).tobytes() for name in _ARRAYS
        )
        snapshots.keep(db, run_id, snapshots.VECTOR, {"attempts": len(vector), "legend": legend}, data)
    except Exception:  # an optimisation must fail nothing: the SQL path stays
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


def _data(db: Session | Connection, run_id: int, stamp: Any) -> bytes | None:
    """Return the bytes of the run's vector made at stamp; None if it is not there (made again meanwhile).

    On PostgreSQL through a binary cursor: bytea as hex text is twice the bytes and a decoding
    (4x slower over two runs of a million attempts).
    """
    conn = db.connection() if isinstance(db, Session) else db
    params = {"run": run_id, "name": snapshots.VECTOR, "stamp": stamp}
    if conn.dialect.name != "postgresql":
        stamped = text(_DATA).bindparams(bindparam("stamp", type_=DateTime(timezone=True)))
        got = conn.execute(stamped, params).first()
        return None if got is None else got[0]  # type: ignore[no-any-return]
    raw = conn.connection.driver_connection
    with raw.cursor(binary=True) as cur:  # type: ignore[union-attr]
        cur.execute(_DATA_PG, params)
        one = cur.fetchone()
    return None if one is None else one[0]  # type: ignore[no-any-return]


def _vector(db: Session | Connection, run_id: int, stamp: Any, payload: dict[str, Any]) -> LevelVector | None:
    """Read the run's vector made at stamp; None if it is not there (made again meanwhile)."""
    data = _data(db, run_id, stamp)
    if data is None:
        return None
    n, view, at = payload["attempts"], memoryview(data), 0
    arrays = {}
    for name in _ARRAYS:
        size = np.dtype(_DTYPES[name]).itemsize * n
        arrays[name] = np.frombuffer(view[at : at + size], dtype=_DTYPES[name])
        at += size
    names = payload["legend"]
    return LevelVector(kind_names=tuple(names["kinds"]), status_names=tuple(names["statuses"]), **arrays)


def make_missing(db: Session | Connection, runs: Sequence[Any]) -> None:
    """Make the vectors of the finished runs that have none that holds (their first compare's reader)."""
    if read_only(db):
        return
    for run in runs:
        if run.finished_at is not None and snapshots.kept(db, run.id, snapshots.VECTOR) is None:
            store_vector(db, run.id)


def load_vectors(db: Session | Connection, runs: Sequence[Any]) -> list[LevelVector] | None:
    """Return the runs' vectors in their order; None unless each is finished with a vector that holds.

    None too when the runs hold more than MAX_ATTEMPTS attempts together (counted before reading
    the arrays).
    """
    if not runs or any(r.finished_at is None for r in runs):
        return None
    found = {}
    for run_id in dict.fromkeys(r.id for r in runs):
        kept = snapshots.kept_stamp(db, run_id, snapshots.VECTOR)
        if kept is None or "attempts" not in kept[0]:
            return None
        found[run_id] = kept
    if sum(payload["attempts"] for payload, _ in found.values()) > MAX_ATTEMPTS:
        return None
    got = {}
    for run_id, (payload, stamp) in found.items():
        vector = _vector(db, run_id, stamp, payload)
        if vector is None:
            return None  # the SQL path reads the attempts as they are now
        got[run_id] = vector
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
