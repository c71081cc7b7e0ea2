"""The SVG charts' geometry: stacked day bars on a round axis, and a band in proportion to time."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from interface.console.charts import BAND_WIDTH, BARS_HEIGHT, band, day_bars, nice_ceiling


def test_the_axis_top_is_round_and_its_middle_tick_whole():
    assert [nice_ceiling(n) for n in (0, 1, 3, 5, 9, 11, 59, 61, 999, 1001)] == [2, 2, 4, 6, 10, 20, 60, 80, 1000, 2000]


def test_bars_stack_denied_under_allowed_and_scale_to_the_top_tick():
    days = [date(2026, 3, 1), date(2026, 3, 2), date(2026, 3, 3)]
    chart = day_bars(days, {days[0]: {"allowed": 6, "denied": 2}, days[2]: {"denied": 1}})
    first, empty, last = chart["bars"]
    assert chart["ticks"] == [(0, BARS_HEIGHT), (4, BARS_HEIGHT / 2), (8, 0)]
    assert first.denied_height == BARS_HEIGHT * 2 / 8 and first.allowed_height == BARS_HEIGHT * 6 / 8
    assert first.denied_y + first.denied_height == BARS_HEIGHT  # on the base line
    assert first.allowed_y + first.allowed_height == first.denied_y  # right on top of the denied part
    assert (empty.allowed, empty.denied, empty.allowed_height) == (0, 0, 0) and last.allowed == 0
    assert first.x < empty.x < last.x and last.x + last.width <= chart["width"]


def test_a_band_gives_each_interval_its_share_of_the_period():
    start = datetime(2026, 3, 3, tzinfo=UTC)
    end = start + timedelta(days=1)
    cut = start + timedelta(hours=6)
    drawn = band([{"from_at": start, "to_at": cut}, {"from_at": cut, "to_at": end}], start, end)
    assert [(d["x"], d["width"]) for d in drawn] == [(0, BAND_WIDTH / 4), (BAND_WIDTH / 4, BAND_WIDTH * 3 / 4)]
