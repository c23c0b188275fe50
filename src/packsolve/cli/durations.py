"""Durations on the command line: seconds as a number, or with a unit (500ms, 2s, 1m, 1h)."""

from __future__ import annotations

import math
import re
from typing import Any

import click

from packsolve.bounds import Range

WRITE = "write seconds (2.5) or 500ms, 2s, 1m, 1h"
UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
# A sign and an exponent are read so that the range check, not the syntax, says what is wrong with -1, 1e300.
_DURATION = re.compile(r"^\s*(-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*(ms|s|m|h)?\s*$")


class Duration(click.ParamType):
    """A click type for a duration: a number of seconds, or one with a unit; returns seconds (float).

    With a span, a duration outside it fails here; without one, the caller checks the range (the run
    options leave it to request.limits_from_options, which solve, submit, check and rerun share).
    """

    name = "duration"

    def __init__(self, span: Range | None = None) -> None:
        self.span = span

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        """Return value in seconds; fail with one line saying what a duration looks like."""
        if isinstance(value, int | float):
            seconds = float(value)
        elif match := _DURATION.match(str(value)):
            seconds = float(match.group(1)) * UNITS[match.group(2) or "s"]
        else:
            number = _number(str(value))
            if number is None:
                self.fail(f"{value!r} is not a duration: {WRITE}", param, ctx)
            seconds = number
        # NaN compares false with every bound, so no range would catch it: a `--interval nan` loop spins.
        if not math.isfinite(seconds):
            self.fail(f"{value!r} is not a finite duration: {WRITE}", param, ctx)
        if self.span is not None and not self.span.holds(seconds):
            self.fail(f"{value!r} is not in the range {self.span} seconds.", param, ctx)
        return seconds


DURATION = Duration()


def _number(text: str) -> float | None:
    """Return text as a float if Python reads it as one ('nan', 'inf': convert refuses them as not finite)."""
    try:
        return float(text)
    except ValueError:
        return None


def duration_within(span: Range, low: float | None = None) -> Duration:
    """Return the click type of a duration in span (from low if given): out of it, one line with the range."""
    return Duration(span if low is None else Range(low, span.high, real=span.real))
