"""Durations on the command line: seconds as a number, or with a unit (500ms, 2s, 1m, 1h)."""

from __future__ import annotations

import math
import re
from typing import Any

import click

UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
# A sign is read so that the options' range checks, not this type, say what a negative limit breaks.
_DURATION = re.compile(r"^\s*(-?(?:\d+(?:\.\d*)?|\.\d+))\s*(ms|s|m|h)?\s*$")


class Duration(click.ParamType):
    """A click type for a duration: a number of seconds, or one with a unit; returns seconds (float).

    Range checks (at least 0, below the broker's visibility timeout) stay with the options.
    """

    name = "duration"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        """Return value in seconds; fail with one line saying what a duration looks like."""
        if isinstance(value, int | float):
            return float(value)
        match = _DURATION.match(str(value))
        seconds = float(match.group(1)) * UNITS[match.group(2) or "s"] if match else math.nan
        if not math.isfinite(seconds):
            self.fail(f"{value!r} is not a duration: write seconds (2.5) or 500ms, 2s, 1m, 1h", param, ctx)
        return seconds


DURATION = Duration()
