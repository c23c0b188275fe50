"""What the query modules share: the Core attempts table, status values as stored, batch size, rowcount."""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy import Table

from packsolve.db.models import Attempt
from packsolve.outcome import FINAL, PENDING

# The Core table, for bulk statements that skip the ORM's per-row bookkeeping.
ATTEMPTS = cast(Table, Attempt.__table__)
PENDING_VALUES = tuple(s.value for s in PENDING)
FINAL_VALUES = tuple(s.value for s in FINAL)
# Rows per statement when writing many at once: well under SQLite's variable limit.
BATCH = 500


def rowcount(result: Any) -> int:
    """Return the rows an UPDATE/INSERT matched (typed loosely: Result hides CursorResult's rowcount)."""
    return int(result.rowcount)
