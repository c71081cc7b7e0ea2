"""ISO 8601 durations of fixed length (exception terms, the minimum release age).

Months and years have no fixed length, so "P1M" would mean a different span depending on the
instant it is applied at: they are refused, naming the field.
"""

from __future__ import annotations

import re
from datetime import timedelta

from domain.errors import FieldError, InvalidInputError
from domain.text import json_words

MAX_DURATION = timedelta(days=3660)
# ASCII digits only (`\d` would take any script's); a fraction only on seconds, as one is written.
_CALENDAR = re.compile(r"P(?=[0-9]+[YM])(?:[0-9]+Y)?(?:[0-9]+M)?(?:[0-9]+W)?(?:[0-9]+D)?(?:T[0-9.HMS]*)?")
_DURATION = re.compile(
    r"P(?!$)(?:([0-9]+)W)?(?:([0-9]+)D)?(?:T(?=[0-9])(?:([0-9]+)H)?(?:([0-9]+)M)?(?:([0-9]+(?:\.[0-9]{1,6})?)S)?)?"
)


def parse_duration(text: object, field: str = "duration") -> timedelta:
    """`P7D`, `PT12H`, `P1W`, `P1DT6H`: weeks, days, hours, minutes, seconds."""
    # ASCII before upper-casing: `ſ` (long s) upper-cases to `S`
    found = _DURATION.fullmatch(text.upper()) if isinstance(text, str) and len(text) <= 64 and text.isascii() else None
    if found is None and isinstance(text, str) and _CALENDAR.fullmatch(text.upper()):
        raise InvalidInputError(
            f"{field}: {json_words(text)}: months and years are not accepted, use days (such as P30D or P365D)",
            [FieldError(field, "months and years are not accepted (their length varies): use days, such as P30D")],
        )
    if found is None and isinstance(text, str) and text != text.strip():
        raise InvalidInputError(
            f"{field}: {json_words(text)} has blanks around it",
            [FieldError(field, "must be written without blanks around it")],
        )
    if found is None:
        raise InvalidInputError(
            f"{field}: {json_words(text)} is not an ISO 8601 duration such as P7D",
            [
                FieldError(
                    field,
                    "must be an ISO 8601 duration in whole weeks, days, hours and minutes, and seconds "
                    "(which may have a fraction), such as P7D or PT12H",
                )
            ],
        )
    weeks, days, hours, minutes, seconds = (float(g) if g else 0.0 for g in found.groups())
    try:
        length: timedelta | None = timedelta(weeks=weeks, days=days, hours=hours, minutes=minutes, seconds=seconds)
    except OverflowError:  # past timedelta's own range, so past the bound too
        length = None
    if length is None or not timedelta(0) < length <= MAX_DURATION:
        raise InvalidInputError(
            f"{field}: {text!r} is out of range",
            [FieldError(field, f"must be longer than zero and at most {MAX_DURATION.days} days")],
        )
    return length


def format_duration(length: timedelta) -> str:
    """The one ISO 8601 spelling of a span, in days and time (`P3D`, `PT12H`, `P1DT6H`), so
    equal spans compare equal however they were written (`P1W` is `P7D`)."""
    days, rest = length.days, length - timedelta(days=length.days)
    hours, rest_seconds = divmod(rest.seconds, 3600)
    minutes, seconds = divmod(rest_seconds, 60)
    time = "".join(f"{n}{unit}" for n, unit in ((hours, "H"), (minutes, "M")) if n)
    if seconds or rest.microseconds:
        whole = f"{seconds}.{rest.microseconds:06d}".rstrip("0").rstrip(".") if rest.microseconds else f"{seconds}"
        time += f"{whole}S"
    return "P" + (f"{days}D" if days else "") + (f"T{time}" if time else "") if days or time else "PT0S"
