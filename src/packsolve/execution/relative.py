"""Relative limits: `--time-limit 3x` gives each level three times its expected time from history.

GNU parallel's `--timeout 200%` stops a job that runs twice the median; here the factor applies per
level, to what earlier runs of the same level, kind and heuristic took, with an absolute floor so a
level that took a millisecond still gets a usable limit: `3x` (floor 1 s) or `3x,10s` (floor 10 s).
Pure: the database layer reads the history, this module turns it into limits.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from packsolve.bounds import TIME_LIMIT_S, duration_seconds

DEFAULT_FLOOR_S = 1.0
RELATIVE_FORM = "or N times each level's expected time from history (3x, 1.5x; floor 1s, or 3x,10s)"
_FLOOR_FORM = "write the floor as a duration after the comma: 3x,10s"


@dataclass(frozen=True)
class Relative:
    """A limit of factor times a level's expected time, never below floor seconds."""

    factor: float
    floor: float = DEFAULT_FLOOR_S

    def limit(self, expected: float) -> float:
        """Return the limit of a level expected to take `expected` seconds (at most what can be stored)."""
        return min(TIME_LIMIT_S.high, max(self.floor, self.factor * expected))

    def spelled(self) -> str:
        """Return the option value that gives this limit (parse_relative reads it back): 3x,1s."""
        return f"{self.factor:g}x,{self.floor:g}s"

    def __str__(self) -> str:
        return f"{self.factor:g}x expected, floor {self.floor:g} s"


def parse_relative(text: str) -> Relative | None:
    """Return the Relative limit text writes (Nx, or Nx,FLOOR); None if text is not of that form.

    Raise ValueError saying what would work for a value of the form that is wrong: a factor that is
    not a number > 0, or a floor that is not a duration > 0.
    """
    head, comma, tail = text.strip().partition(",")
    head = head.strip()
    if head[-1:] not in ("x", "X"):
        if comma:
            raise ValueError(f"{text!r}: a floor after a comma follows a factor such as 3x (3x,10s)")
        return None
    try:
        factor = float(head[:-1])
    except ValueError:
        raise ValueError(f"{text!r}: write the factor as a number before the x: 3x, 1.5x") from None
    if not math.isfinite(factor) or factor <= 0:
        raise ValueError(f"{text!r}: the factor must be a number > 0 (3x, 1.5x)")
    floor = DEFAULT_FLOOR_S
    if comma:
        seconds = duration_seconds(tail.strip())
        if seconds is None or not math.isfinite(seconds):
            raise ValueError(f"{text!r}: {_FLOOR_FORM}")
        if seconds <= 0 or seconds > TIME_LIMIT_S.high:
            raise ValueError(f"{text!r}: the floor must be a duration > 0 (3x,10s)")
        floor = seconds
    return Relative(factor, floor)


def expected_seconds(decided: Sequence[float], timed_out_at: Sequence[float]) -> float | None:
    """Return a level's expected time: the median of its decided attempts' times, else the largest
    limit it timed out at (a lower bound: it took at least that); None without either."""
    if decided:
        return float(statistics.median(decided))
    if timed_out_at:
        return max(timed_out_at)
    return None


def spread(relative: Relative, limits: Iterable[float]) -> str:
    """Return how a report shows a relative limit and the limits it gave: "3x expected, 1–42 s"."""
    given = list(limits)
    if not given:
        return f"{relative.factor:g}x expected (floor {relative.floor:g} s)"
    low, high = min(given), max(given)
    span = f"{low:.3g} s" if low == high else f"{low:.3g}–{high:.3g} s"
    return f"{relative.factor:g}x expected, {span}"


@dataclass(frozen=True)
class RelativeLimits:
    """A run's relative limits: of wall time (--time-limit Nx), of CPU time (--cpu-limit Nx), or none."""

    time: Relative | None = None
    cpu: Relative | None = None

    def __bool__(self) -> bool:
        return self.time is not None or self.cpu is not None

    def to_options(self) -> dict[str, str]:
        """Return what a run records of them (its options' "relative"): {"time_limit": "3x,1s", ...}."""
        given = (("time_limit", self.time), ("cpu_limit", self.cpu))
        return {name: relative.spelled() for name, relative in given if relative is not None}

    @classmethod
    def from_options(cls, recorded: object) -> RelativeLimits:
        """Return the relative limits a run recorded with to_options (none if it recorded none)."""
        if not isinstance(recorded, dict):
            return cls()

        def read(name: str) -> Relative | None:
            text = recorded.get(name)
            try:
                return parse_relative(text) if isinstance(text, str) else None
            except ValueError:
                return None

        return cls(read("time_limit"), read("cpu_limit"))
