"""The ranges numbers from outside (options, task fields) must lie in: what the database can store.

An Integer column holds a 32-bit signed integer, a BigInteger column a 64-bit one (PostgreSQL
refuses more, SQLite stores up to 64 bits): a value past them must be refused where it comes
in, in one line giving the range, never by the database's driver mid-run.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

INT32_MAX = 2**31 - 1  # an Integer column
INT64_MAX = 2**63 - 1  # a BigInteger column


@dataclass(frozen=True)
class Range:
    """A closed range of numbers; whole numbers only unless real."""

    low: float
    high: float
    real: bool = False

    def holds(self, value: object) -> bool:
        """Return whether value is a number of this range (a bool is not a number here)."""
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        if not self.real and not isinstance(value, int):
            return False
        return math.isfinite(value) and self.low <= value <= self.high

    def __str__(self) -> str:
        return f"{shown(self.low)} to {shown(self.high)}"


def shown(x: float) -> str:
    """Return x as written by a person: whole numbers in full (2147483647, not 2.14748e+09)."""
    return str(int(x)) if x == int(x) else f"{x:g}"


# Seconds: stored as a float, but also handed to RLIMIT_CPU and to Celery's limits, which take
# whole seconds of a C integer. 2**31 - 1 seconds is 68 years.
TIME_LIMIT_S = Range(0, INT32_MAX, real=True)
WHOLE_SECONDS = Range(1, INT32_MAX)  # the broker's visibility timeout
NODE_LIMIT = Range(1, INT64_MAX)
MEMORY_LIMIT_MB = Range(1, INT32_MAX)
MAX_TRIES = Range(1, INT32_MAX)
PROCESSES = Range(1, INT32_MAX)
RUN_ID = Range(1, INT32_MAX)
COUNT = Range(0, INT32_MAX)  # rows, levels per task, pictures: an SQL LIMIT or a column
# A part of a split level (a task's "part"): its 0-based index, the parts asked of the split and the
# parts it gave, and (best of all) its iteration window and the best length known: lengths of a level.
PART_INDEX = Range(0, INT32_MAX - 1)
PARTS = Range(1, INT32_MAX)
SEARCH_BOUND = Range(0, INT32_MAX)


DURATION_FORM = "write seconds (2.5) or 500ms, 2s, 1m, 1h"
DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
# A sign and an exponent are read so that the range check, not the syntax, says what is wrong with -1, 1e300.
_DURATION = re.compile(r"^\s*(-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*(ms|s|m|h)?\s*$")


def duration_seconds(text: str) -> float | None:
    """Return a duration (seconds as a number, or 500ms, 2s, 1m, 1h) in seconds; None if it is not one.

    What Python reads as a float ('nan', 'inf') is returned as read: the caller refuses what is not finite.
    """
    if match := _DURATION.match(text):
        return float(match.group(1)) * DURATION_UNITS[match.group(2) or "s"]
    try:
        return float(text)
    except ValueError:
        return None
