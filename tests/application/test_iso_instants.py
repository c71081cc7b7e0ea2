"""Instants cross the boundary as UTC with microseconds and a `Z`, whatever offset they carry."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from application.formats import iso, parse_instant
from domain.errors import InvalidInputError


@pytest.mark.parametrize(
    ("moment", "text"),
    [
        (datetime(2026, 3, 3, 14, 5, tzinfo=UTC), "2026-03-03T14:05:00.000000Z"),
        (datetime(2026, 3, 3, 17, 5, 0, 12, tzinfo=timezone(timedelta(hours=3))), "2026-03-03T14:05:00.000012Z"),
        (datetime(2026, 3, 3, 9, 5, tzinfo=timezone(timedelta(hours=-5))), "2026-03-03T14:05:00.000000Z"),
        (datetime(2026, 7, 1, 16, 0, tzinfo=ZoneInfo("Europe/Paris")), "2026-07-01T14:00:00.000000Z"),
        (datetime(2026, 3, 3, 14, 5, tzinfo=ZoneInfo("UTC")), "2026-03-03T14:05:00.000000Z"),
        (datetime(5, 1, 2, 3, 4, 5, tzinfo=UTC), "0005-01-02T03:04:05.000000Z"),
    ],
)
def test_an_instant_is_written_in_utc_with_a_z(moment: datetime, text: str) -> None:
    assert iso(moment) == text


def test_no_instant_is_none() -> None:
    assert iso(None) is None


def test_a_fraction_of_any_length_is_read_to_the_microsecond_and_only_ascii_digits_are_digits():
    assert iso(parse_instant("2026-12-06T23:26:19.1234567891Z", "at")) == "2026-12-06T23:26:19.123456Z"
    with pytest.raises(InvalidInputError, match="must be an RFC 3339 timestamp"):
        parse_instant("\uff12\uff10\uff12\uff16-12-06T23:26:19Z", "at")  # full-width digits: not the format
