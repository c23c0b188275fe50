"""Durations on the command line: seconds as a number, or with a unit (500ms, 2s, 1m, 1h); run limits
also take a factor of each level's expected time (3x, 3x,10s)."""

from __future__ import annotations

import math
from typing import Any

import click

from packsolve.bounds import DURATION_FORM as WRITE
from packsolve.bounds import Range, duration_seconds
from packsolve.execution.relative import RELATIVE_FORM, Relative, parse_relative
from packsolve.request import SHARE


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
        else:
            number = duration_seconds(str(value))
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


def duration_within(span: Range, low: float | None = None) -> Duration:
    """Return the click type of a duration in span (from low if given): out of it, one line with the range."""
    return Duration(span if low is None else Range(low, span.high, real=span.real))


class RunLimit(Duration):
    """A click type for --time-limit and --cpu-limit: a duration (seconds, float), or a limit relative
    to each level's expected time from history (execution.relative: 3x, 3x,10s), returned as Relative."""

    name = "duration|Nx"

    def get_metavar(self, param: click.Parameter, ctx: click.Context) -> str | None:
        """Return how --help writes the value: DURATION|Nx (the default would shout NX)."""
        return "DURATION|Nx"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """Return seconds, or the Relative limit; fail with one line saying what would work."""
        if isinstance(value, Relative):
            return value
        if not isinstance(value, int | float):
            try:
                relative = parse_relative(str(value))
            except ValueError as exc:
                self.fail(str(exc), param, ctx)
            if relative is not None:
                return relative
            if duration_seconds(str(value)) is None:
                self.fail(f"{value!r} is not a duration: {WRITE}, {RELATIVE_FORM}", param, ctx)
        return super().convert(value, param, ctx)


RUN_LIMIT = RunLimit()


class SplitAfterType(Duration):
    """A click type for --split-after: a duration (seconds, float), or `share` (request.SHARE: each
    process's share of the night's expected time, worked out when the run is made)."""

    name = "duration|share"

    def get_metavar(self, param: click.Parameter, ctx: click.Context) -> str | None:
        """Return how --help writes the value."""
        return "DURATION|share"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """Return seconds, or SHARE; fail with one line saying what would work."""
        if isinstance(value, str) and value.strip().lower() == SHARE:
            return SHARE
        if isinstance(value, str) and duration_seconds(value) is None:
            self.fail(f"{value!r} is not a duration ({WRITE}) or share", param, ctx)
        return super().convert(value, param, ctx)
