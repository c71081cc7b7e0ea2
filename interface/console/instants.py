"""Instants as a person types them into the console, always in UTC.

One text input per instant (a browser's date-time picker shows local, 12-hour time and cannot
say UTC): a date, a date and time as the console prints them (`2026-03-03 14:05:00 UTC`), or
RFC 3339 with an offset. A refusal names the field by its label and says what to type.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime, timedelta

from application.formats import DAY, parse_day, parse_instant
from domain.errors import FieldError, InvalidInputError
from interface.console.forms import field_label

_UTC_TIME = re.compile(r"(?P<day>\d{4}-\d{2}-\d{2})[Tt ](?P<clock>\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?)(?: ?UTC)?")
RULE = (
    "type a UTC date such as 2026-03-03, a UTC time such as 2026-03-03 14:05:00, "
    "or RFC 3339 with an offset such as 2026-03-03T16:05:00+02:00"
)


def instant(text: str | None, field: str, *, day_start: bool = False, end: bool = False) -> datetime | None:
    """The instant typed into `field`, or None when it is blank. A date alone is its first
    instant; with `day_start` and `end` (a period's "To") it includes that whole day. A time as the
    console prints it (whole seconds or minutes, which its events' microseconds fall within) is,
    with `end`, the whole of that second or minute: a time travel's instant is its last
    microsecond, a period's "To" (exclusive) the next second or minute. What the console shows
    happening at 14:05:00 was in force at 14:05:00."""
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
            return parse_day(text, field)[1 if day_start and end else 0]
        moment = parse_instant(text, field)
        return moment + whole if whole is not None else moment
    except InvalidInputError:
        raise InvalidInputError(
            f"{field_label(field)}: “{typed}” is not a date or time this console can read",
            [FieldError(field, RULE)],
        ) from None


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
