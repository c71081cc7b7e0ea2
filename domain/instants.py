"""How an instant is written wherever the service writes one: RFC 3339 in UTC with a `Z`; how
one given is read (RFC 3339 with an offset, nothing guessed); and the instant a span after
another, which may be past the calendar's last."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from domain.errors import FieldError, InvalidInputError
from domain.text import quoted

# RFC 3339 date-time (section 5.6): seconds and an offset are required; `T` may be a space; a
# fraction has any number of digits (kept to the microsecond). ASCII digits only. The ranges of
# the offset's hours and minutes are checked apart (`parse_instant`): fromisoformat reads +00:99
# as 99 minutes.
RFC3339 = re.compile(
    r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:(?P<second>\d{2})(\.\d+)?(?:[Zz]|[+-](?P<hours>\d{2}):(?P<minutes>\d{2}))",
    re.ASCII,
)


def parse_instant(text: str, field: str, *, or_day: bool = False) -> datetime:
    """RFC 3339 with an explicit offset (`Z` or `+hh:mm`); anything else is refused, not guessed.
    A leap second (second 60) is refused too: no record is stamped with one (the clocks that
    stamp them never show it), and reading it as another instant would be a guess. `or_day`:
    a bare date is taken too (`application.formats.parse_bound`), and the refusal says so."""
    found = RFC3339.fullmatch(text.strip()) if isinstance(text, str) else None
    if found is None:
        also = ", or a date such as 2026-03-03" if or_day else ""
        raise refused(field, text, f"must be an RFC 3339 timestamp with an offset, such as 2026-03-03T14:05:00Z{also}")
    if found["second"] == "60":
        raise refused(field, text, "names a leap second (second 60), which no record is stamped with: give second 59")
    if found["hours"] is not None and (int(found["hours"]) > 23 or int(found["minutes"]) > 59):
        raise refused(field, text, "has an offset RFC 3339 does not allow: hours 00 to 23, minutes 00 to 59")
    cleaned = re.sub(r"(\.\d{6})\d+", r"\1", text.strip().upper().replace(" ", "T"))  # ns -> µs
    try:
        return datetime.fromisoformat(cleaned).astimezone(UTC)
    except (ValueError, OverflowError):
        raise refused(field, text, "is not a real instant within years 0001-9999 UTC") from None


def refused(field: str, text: object, rule: str) -> InvalidInputError:
    return InvalidInputError(f"{field}: {quoted(text)} {rule}", [FieldError(field, rule)])


def iso(moment: datetime | None) -> str | None:
    """UTC with a `Z` and microseconds; isoformat pads years below 1000 (strftime does not)."""
    if moment is None:
        return None
    if moment.tzinfo is not UTC:  # the store's and the library's instants are UTC already: no conversion
        moment = moment.astimezone(UTC)
    return moment.isoformat(timespec="microseconds")[:-6] + "Z"  # without its "+00:00"


def later(moment: datetime, length: timedelta) -> datetime | None:
    """`length` after `moment`; None when that is past 9999-12-31, an instant never reached.
    An upstream's upload time may be any date the calendar holds, its last days too."""
    try:
        return moment + length
    except OverflowError:
        return None
