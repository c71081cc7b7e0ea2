"""Instants in and out: RFC 3339 in (any offset, or a bare date for day ranges), UTC `Z` out."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta

from domain.errors import FieldError, InvalidInputError


def iso(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_instant(text: str, field: str) -> datetime:
    """RFC 3339 with an explicit offset (`Z` or `+hh:mm`); a naive time is refused as ambiguous."""
    try:
        moment = datetime.fromisoformat(text.strip().replace("z", "Z"))
    except (ValueError, AttributeError, TypeError):
        raise _bad(field, text, "must be an RFC 3339 timestamp such as 2026-03-03T14:05:00Z") from None
    if moment.tzinfo is None:
        raise _bad(field, text, "must carry a UTC offset (Z or +hh:mm)")
    return moment.astimezone(UTC)


def parse_day(text: str, field: str) -> tuple[datetime, datetime]:
    """A date alone means that day in UTC: [00:00, next day 00:00)."""
    try:
        day = date.fromisoformat(text.strip())
    except (ValueError, AttributeError, TypeError):
        raise _bad(field, text, "must be a date such as 2026-03-03") from None
    start = datetime.combine(day, time(), UTC)
    return start, start + timedelta(days=1)


def parse_instant_or_day_start(text: str, field: str) -> datetime:
    """For range bounds: a full timestamp, or a bare date meaning its first instant in UTC."""
    if isinstance(text, str) and len(text.strip()) == 10:
        return parse_day(text, field)[0]
    return parse_instant(text, field)


def _bad(field: str, text, rule: str) -> InvalidInputError:
    return InvalidInputError(f"{field}: {text!r} {rule}", [FieldError(field, rule)])
