"""Instants as a person types them into the console, always in UTC.

One text input per instant (a browser's date-time picker shows local, 12-hour time and cannot
say UTC): a date, a date and time as the console prints them (`2026-03-03 14:05:00 UTC`), or
RFC 3339 with an offset. A refusal names the field by its label and says what to type.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime, timedelta

from application.formats import DAY, not_future, parse_day, parse_instant, until_now
from domain.errors import FieldError, InvalidInputError
from interface.console.forms import field_label

_UTC_TIME = re.compile(r"(?P<day>\d{4}-\d{2}-\d{2})[Tt ](?P<clock>\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?)(?: ?UTC)?")
RULE = (
    "type a UTC date such as 2026-03-03, a UTC time such as 2026-03-03 14:05:00, "
    "or RFC 3339 with an offset such as 2026-03-03T16:05:00+02:00"
)


def instant(
    text: str | None, field: str, *, day_start: bool = False, end: bool = False, now: datetime | None = None
) -> datetime | None:
    """The instant typed into `field`, or None when it is blank. A date alone is its first
    instant; with `day_start` and `end` (a period's "To") it includes that whole day. A time as the
    console prints it (whole seconds or minutes, which its events' microseconds fall within) is,
    with `end`, the whole of that second or minute: a time travel's instant is its last
    microsecond, a period's "To" (exclusive) the next second or minute. What the console shows
    happening at 14:05:00 was in force at 14:05:00. With `now` (a point-in-time question), one
    typed after it is refused (`not_future`), and the second or minute that holds it ends there."""
    text = (text or "").strip()
    if not text:
        return None
    written = _UTC_TIME.fullmatch(text)
    typed, whole = text, None
    if written:  # no offset: the console says UTC everywhere
        minutes = written["clock"].count(":") == 1
        clock = written["clock"] + (":00" if minutes else "")
        text = f"{written['day']}T{clock}Z"
        if end and "." not in clock:  # a period's To excludes its bound, an instant includes itself
            whole = timedelta(minutes=1) if minutes else timedelta(seconds=1)
            if not day_start:
                whole -= timedelta(microseconds=1)
    try:
        if DAY.fullmatch(text):
            moment = parse_day(text, field)[1 if day_start and end else 0]
        else:
            moment = parse_instant(text, field)
    except InvalidInputError:
        raise InvalidInputError(
            f"{field_label(field)}: “{typed}” is not a date or time this console can read",
            [FieldError(field, RULE)],
        ) from None
    through = moment + whole if whole is not None else moment
    if now is None:
        return through
    try:
        not_future(moment, now, field)
    except InvalidInputError as error:
        raise later_than_now(error, field, typed) from None
    return min(through, now)


def later_than_now(error: InvalidInputError, field: str, typed: str) -> InvalidInputError:
    """`not_future`'s refusal in the console's words."""
    detail = f"{field_label(field)}: “{typed}” is later than now, and the record answers only up to now"
    return InvalidInputError(detail, error.errors)


def timeline_period(typed: Mapping[str, str], now: datetime) -> tuple[datetime, datetime]:
    """A timeline's typed period (From and To both given: `package_page.period_typed`), up to
    `now` (`until_now`)."""
    start, end = period(typed)
    try:
        return until_now(start, end, now, "from")
    except InvalidInputError as error:
        raise later_than_now(error, "from", typed["from"]) from None


def period(typed: Mapping[str, str]) -> tuple[datetime | None, datetime | None]:
    """The typed From and To (each optional; a To date includes its day). A To at or before its
    From is refused in plain words: an empty list would look like "nothing happened"."""
    start = instant(typed.get("from"), "from", day_start=True)
    end = instant(typed.get("to"), "to", day_start=True, end=True)
    if start is not None and end is not None and end <= start:
        to, since = field_label("to"), field_label("from")
        raise InvalidInputError(
            f"{to} is not after {since}: no period lies between them", [FieldError("to", f"must come after {since}")]
        )
    return start, end
