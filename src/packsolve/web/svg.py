"""Small SVG charts drawn on the server: axes (linear or log), lines and points with hover names and links.

Every text is escaped; the charts carry no script, so they may sit inline in a page.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field

from markupsafe import escape

# Colour-blind-safe (Okabe-Ito), in order of use.
COLOURS = ("#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#f0e442", "#000000")
WIDTH, HEIGHT = 640, 360
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 16, 48
PAD = 0.04  # of an axis's range, beyond its data


def colour(i: int) -> str:
    return COLOURS[i % len(COLOURS)]


@dataclass
class Scale:
    """Data to pixels along one axis (log: base 10; values at or below 0 are drawn at the floor)."""

    low: float
    high: float
    start: float
    end: float
    log: bool = False

    def __post_init__(self) -> None:
        if self.log:
            self.low, self.high = math.log10(max(self.low, 1e-4)), math.log10(max(self.high, 1e-4))
        if self.high <= self.low:
            self.high = self.low + 1
        # A margin at the top (and at the bottom of a log axis, whose floor is data too): the points
        # at the extremes are drawn whole, not cut in half by the plot's edge.
        margin = PAD * (self.high - self.low)
        self.high += margin
        if self.log:
            self.low -= margin

    def __call__(self, v: float) -> float:
        x = math.log10(max(v, 1e-4)) if self.log else v
        return round(self.start + (x - self.low) / (self.high - self.low) * (self.end - self.start), 1)

    def ticks(self) -> list[float]:
        if self.log:
            decades = range(math.floor(self.low), math.ceil(self.high) + 1)
            # Two decades or fewer would leave one or two labels: add 2 and 5 of each decade.
            steps = (1, 2, 5) if len(decades) <= 3 else (1,)
            return [m * 10.0**e for e in decades for m in steps]
        step = 10 ** math.floor(math.log10((self.high - self.low) / 4 or 1))
        while (self.high - self.low) / step > 8:
            step *= 2
        first = math.ceil(self.low / step) * step
        return [first + i * step for i in range(int((self.high - first) / step) + 1)]


def _tick(v: float) -> str:
    """Return a tick's label: 0.25, 10, 1.5k, 120k, 2M (never 1e+05 for 100k, 120k and 140k alike)."""
    for unit, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= unit:
            return f"{v / unit:.4g}{suffix}"
    return f"{v:.4g}"


@dataclass
class Chart:
    """One chart: its two scales, axis names, and the SVG elements drawn so far."""

    x: Scale
    y: Scale
    x_name: str
    y_name: str
    title: str
    parts: list[str] = field(default_factory=list)

    @classmethod
    def over(
        cls,
        xs: Sequence[float],
        ys: Sequence[float],
        names: tuple[str, str, str],
        log_x: bool = False,
        log_y: bool = False,
    ) -> Chart:
        """Return a chart whose axes hold every (x, y) given."""

        def bounds(vs: Sequence[float], log: bool) -> tuple[float, float]:
            vs = [v for v in vs if v is not None and (v > 0 or not log)] or [1.0]
            return (min(vs) if log else min(0.0, min(vs))), max(vs)

        x = Scale(*bounds(xs, log_x), LEFT, WIDTH - RIGHT, log_x)
        y = Scale(*bounds(ys, log_y), HEIGHT - BOTTOM, TOP, log_y)
        return cls(x, y, *names)

    def line(self, points: Sequence[tuple[float, float]], i: int, name: str, step: bool = False) -> None:
        """Draw a line through points (step: a staircase, as counts grow) named name on hover."""
        coords: list[str] = []
        for n, (a, b) in enumerate(points):
            if step and n:
                coords.append(f"{self.x(a)},{self.y(points[n - 1][1])}")
            coords.append(f"{self.x(a)},{self.y(b)}")
        self.parts.append(
            f'<polyline fill="none" stroke="{colour(i)}" stroke-width="2" points="{" ".join(coords)}">'
            f"<title>{escape(name)}</title></polyline>"
        )

    def point(self, a: float, b: float, i: int, name: str, href: str | None = None) -> None:
        """Draw a point named name on hover, a link to href if given."""
        dot = (
            f'<circle cx="{self.x(a)}" cy="{self.y(b)}" r="3.5" fill="{colour(i)}" fill-opacity="0.75">'
            f"<title>{escape(name)}</title></circle>"
        )
        self.parts.append(f'<a href="{escape(href)}">{dot}</a>' if href else dot)

    def diagonal(self) -> None:
        """Draw y = x across the chart (the scatter's line of equal times)."""
        low = max(min(self.x.low, self.y.low), -4)
        high = max(self.x.high, self.y.high)
        a, b = (10**low, 10**high) if self.x.log else (low, high)
        self.parts.append(
            f'<line x1="{self.x(a)}" y1="{self.y(a)}" x2="{self.x(b)}" y2="{self.y(b)}" stroke="#888" '
            'stroke-dasharray="4 4"/>'
        )

    def svg(self) -> str:
        """Return the chart as an SVG element: axes, ticks, names, then what was drawn (clipped)."""
        clip = f"plot-{secrets.token_hex(6)}"  # each inline chart's clip path needs an id of its own
        out = [
            f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" class="chart" '
            f'role="img" font-family="system-ui, sans-serif" aria-label="{escape(self.title)}">',
            f'<clipPath id="{clip}"><rect x="{LEFT}" y="{TOP}" width="{WIDTH - LEFT - RIGHT}" '
            f'height="{HEIGHT - TOP - BOTTOM}"/></clipPath>',
        ]
        x0, y0 = LEFT, HEIGHT - BOTTOM
        for t in self.x.ticks():
            px = self.x(t)
            if LEFT <= px <= WIDTH - RIGHT:
                out.append(
                    f'<line x1="{px}" y1="{TOP}" x2="{px}" y2="{y0}" stroke="#eee"/>'
                    f'<text x="{px}" y="{y0 + 16}" text-anchor="middle" font-size="11">{_tick(t)}</text>'
                )
        for t in self.y.ticks():
            py = self.y(t)
            if TOP <= py <= y0:
                out.append(
                    f'<line x1="{x0}" y1="{py}" x2="{WIDTH - RIGHT}" y2="{py}" stroke="#eee"/>'
                    f'<text x="{x0 - 6}" y="{py + 4}" text-anchor="end" font-size="11">{_tick(t)}</text>'
                )
        out.append(
            f'<line x1="{x0}" y1="{y0}" x2="{WIDTH - RIGHT}" y2="{y0}" stroke="#444"/>'
            f'<line x1="{x0}" y1="{TOP}" x2="{x0}" y2="{y0}" stroke="#444"/>'
        )
        out.append(
            f'<text x="{(x0 + WIDTH - RIGHT) / 2}" y="{HEIGHT - 8}" text-anchor="middle" font-size="12">'
            f"{escape(self.x_name)}</text>"
        )
        out.append(
            f'<text x="14" y="{(TOP + y0) / 2}" text-anchor="middle" font-size="12" '
            f'transform="rotate(-90 14 {(TOP + y0) / 2})">{escape(self.y_name)}</text>'
        )
        out.append(f'<g clip-path="url(#{clip})">' + "".join(self.parts) + "</g></svg>")
        return "".join(out)
