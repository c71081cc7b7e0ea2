"""Geometry for the console's server-rendered SVG charts: stacked day bars and a timeline band.

Only numbers and links are computed here; the templates draw them. No JavaScript and no
stylesheet from elsewhere: the console's CSP forbids both, and a picture must not need them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime

BARS_WIDTH, BARS_HEIGHT, AXIS = 900, 180, 44  # viewBox units; the SVG scales to its box
BAND_WIDTH = 900


@dataclass(frozen=True)
class Bar:
    """One day: its allowed part stacked on its denied part, each with its height in units."""

    day: date
    allowed: int
    denied: int
    x: float
    width: float
    allowed_y: float
    allowed_height: float
    denied_y: float
    denied_height: float


def day_bars(days: list[date], counts: dict[date, dict[str, int]]) -> dict:
    """Bars for `days` (oldest first) from {day: {"allowed": n, "denied": n}}, plus the axis."""
    top = nice_ceiling(max((sum(counts.get(d, {}).values()) for d in days), default=0))
    slot = (BARS_WIDTH - AXIS) / max(len(days), 1)
    scale = BARS_HEIGHT / top
    bars = []
    for index, day in enumerate(days):
        allowed = counts.get(day, {}).get("allowed", 0)
        denied = counts.get(day, {}).get("denied", 0)
        denied_height, allowed_height = denied * scale, allowed * scale
        bars.append(
            Bar(
                day,
                allowed,
                denied,
                AXIS + index * slot + slot * 0.12,
                slot * 0.76,
                BARS_HEIGHT - denied_height - allowed_height,
                allowed_height,
                BARS_HEIGHT - denied_height,
                denied_height,
            )
        )
    ticks = [(value, BARS_HEIGHT - value * scale) for value in (0, top // 2, top)]
    return {"bars": bars, "ticks": ticks, "width": BARS_WIDTH, "height": BARS_HEIGHT, "axis": AXIS}


def nice_ceiling(value: int) -> int:
    """The axis top: 2, 4, 6, 8 or 10 times a power of ten, at least `value`, so that the middle
    tick is a whole, round number too."""
    step = 1
    while True:
        for factor in (2, 4, 6, 8, 10):
            if step * factor >= value:
                return step * factor
        step *= 10


def band(intervals: list[dict], start: datetime, end: datetime) -> list[dict]:
    """Each interval with its x and width in units, proportional to its share of the period."""
    span = (end - start).total_seconds() or 1.0
    drawn = []
    for interval in intervals:
        left = max((interval["from_at"] - start).total_seconds(), 0.0)
        right = min((interval["to_at"] - start).total_seconds(), span)
        drawn.append({**interval, "x": BAND_WIDTH * left / span, "width": max(BAND_WIDTH * (right - left) / span, 0.5)})
    return drawn
