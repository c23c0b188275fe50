"""`export`: one record per attempt, as JSON lines or CSV (DESIGN's export record)."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from datetime import datetime
from typing import IO, Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from packsolve.db.models import Attempt, as_utc
from packsolve.figures.measures import MEASURED, measured

FIELDS = [
    "run",
    "level",
    "level_hash",
    "kind",
    "heuristic",
    "status",
    "solution",
    "length",
    *MEASURED,
    "worker",
    "tries",
    "started_at",
    "finished_at",
    "message",
]


def export_records(session: Session, run_id: int) -> Iterator[dict[str, Any]]:
    """Yield the export record of every attempt of the run, in pack order."""
    rows = session.scalars(select(Attempt).where(Attempt.run_id == run_id).order_by(Attempt.seq))
    for a in rows:
        yield {
            "run": a.run_id,
            "level": a.name,
            "level_hash": a.level_hash,
            "kind": a.kind,
            "heuristic": a.heuristic,
            "status": a.status,
            "solution": json.loads(a.solution) if a.solution is not None else None,
            "length": a.length,
            **measured(a),
            "worker": a.worker,
            "tries": a.tries,
            "started_at": iso(a.started_at),
            "finished_at": iso(a.finished_at),
            "message": a.message,
        }


def iso(dt: datetime | None) -> str | None:
    """Return dt in ISO 8601 with its UTC offset (SQLite hands back naive UTC datetimes)."""
    return None if dt is None else as_utc(dt).isoformat()


def write_jsonl(records: Iterator[dict[str, Any]], out: IO[str]) -> int:
    n = 0
    for rec in records:
        out.write(json.dumps(rec, ensure_ascii=False) + "\n")
        n += 1
    return n


def write_json(records: Iterator[dict[str, Any]], out: IO[str]) -> int:
    """Write the records as one JSON array, one record a line (streamed: a big run is never held whole)."""
    n = 0
    out.write("[")
    for rec in records:
        out.write(("," if n else "") + "\n" + json.dumps(rec, ensure_ascii=False))
        n += 1
    out.write("\n]\n")
    return n


def write_csv(records: Iterator[dict[str, Any]], out: IO[str]) -> int:
    writer = csv.DictWriter(out, fieldnames=FIELDS)
    writer.writeheader()
    n = 0
    for rec in records:
        if rec["solution"] is not None:
            rec = {**rec, "solution": json.dumps(rec["solution"], separators=(",", ":"))}
        writer.writerow(rec)
        n += 1
    return n


# What `packsolve export --format` names, and the writer of each.
WRITERS = {"jsonl": write_jsonl, "json": write_json, "csv": write_csv}
