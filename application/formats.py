"""What crosses the boundary as text: instants (RFC 3339 in, with any offset or a bare date for day
ranges; UTC `Z` out, written by `domain.instants.iso`), opaque pagination cursors, ids, and JSON
whose objects name each key once."""

from __future__ import annotations

import base64
import binascii
import json
import re
from datetime import UTC, date, datetime, time, timedelta
from uuid import UUID

from domain.errors import FieldError, InvalidInputError
from domain.instants import iso, parse_instant, refused  # the layers above read and write instants here
from domain.limits import MAX_INTEGER, MAX_PAGE

DAY = re.compile(r"\d{4}-\d{2}-\d{2}", re.ASCII)


def parse_day(text: str, field: str) -> tuple[datetime, datetime]:
    """A date alone means that day in UTC: [00:00, next day 00:00)."""
    if not isinstance(text, str) or not DAY.fullmatch(text.strip()):
        raise refused(field, text, "must be a date such as 2026-03-03")
    try:
        start = datetime.combine(date.fromisoformat(text.strip()), time(), UTC)
    except ValueError:
        raise refused(field, text, "is not a real day within years 0001-9999") from None
    # The last day there is ends at the last instant there is (one microsecond short of the day).
    return start, start + timedelta(days=1) if start.date() < date.max else datetime.max.replace(tzinfo=UTC)


def parse_bound(text: str, field: str, *, end: bool = False) -> datetime:
    """A range bound: a full timestamp, or a bare date meaning that whole day (UTC): `from` is
    its first instant, `to` (exclusive) the first instant of the next day."""
    if isinstance(text, str) and DAY.fullmatch(text.strip()):
        return parse_day(text, field)[1 if end else 0]
    return parse_instant(text, field, or_day=True)


def optional_instant(text: str | None, field: str) -> datetime | None:
    return None if text is None else parse_instant(text, field)


def optional_bound(text: str | None, field: str) -> datetime | None:
    """A `from`/`to` query bound, if given (`to` with a bare date ends after that day)."""
    return None if text is None else parse_bound(text, field, end=field == "to")


def require_period(start: datetime | None, end: datetime | None) -> None:
    """A `from` and `to` with nothing between them are refused: an empty answer would read as
    "nothing happened then"."""
    if start is not None and end is not None and end <= start:
        raise InvalidInputError(
            "the period is empty: to must come after from", [FieldError("to", "must come after from")]
        )


def not_future(moment: datetime | None, now: datetime, field: str = "at") -> datetime | None:
    """The instant a point-in-time question asks about, refused when later than `now`, the moment
    it is asked: the record holds what was decided up to the present, and an answer for a later
    instant would be a guess that a Save or a revocation made before it changes."""
    if moment is not None and moment > now:
        raise InvalidInputError(
            f"{field}: {iso(moment)} is later than now ({iso(now)}); the record answers for the past and the present",
            [FieldError(field, "must not be in the future")],
        )
    return moment


def until_now(start: datetime, end: datetime, now: datetime, field: str) -> tuple[datetime, datetime]:
    """A timeline's period cut at `now` (a timeline of today ends at the present, not at midnight),
    for the reason `not_future` gives; one that begins later is refused, naming `field`."""
    not_future(start, now, field)
    return start, min(end, now)


# Opaque pagination cursors: base64url JSON, validated on the way back in.
def encode_cursor(value: list | int) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


def decode_cursor(cursor: str, shape: type, field: str = "cursor"):
    """The value of a cursor we issued, or a 422 naming the field (never a 500): its JSON as
    `encode_cursor` writes it (not `" 5"` or `5.0`), each number in it an integer the stores hold,
    0 to MAX_INTEGER (SQLite had refused a larger one with a 500), and no NUL (PostgreSQL's text
    refuses it): none is in a cursor we issue."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        value = json.loads(raw)
    except (ValueError, binascii.Error, UnicodeDecodeError, TypeError, RecursionError):
        raise cursor_refusal(field) from None
    parts = value if isinstance(value, list) else [value]
    if (
        not isinstance(value, shape)
        or encode_cursor(value) != cursor  # its base64 too as written: no padding, no stray bits
        or raw != json.dumps(value).encode()
        or any(isinstance(p, bool | float) or isinstance(p, int) and not 0 <= p <= MAX_INTEGER for p in parts)
        or b"\\u0000" in raw
    ):
        raise cursor_refusal(field)
    return value


def cursor_instant(text: str) -> datetime:
    """An instant as a cursor holds it: exactly as `iso` wrote it (not another spelling of it)."""
    instant = parse_instant(text, "cursor")
    if iso(instant) != text:
        raise cursor_refusal()
    return instant


def cursor_id(text: str) -> str:
    """An id as a cursor holds it: a UUID, exactly as `str(UUID)` writes it."""
    found = parse_uuid(text)
    if found is None or str(found) != text:
        raise cursor_refusal()
    return text


def cursor_refusal(field: str = "cursor") -> InvalidInputError:
    return InvalidInputError(
        "the cursor is not one this service issued",
        [FieldError(field, "must be a next_cursor value from a previous page")],
    )


def paged(rows: list[dict], limit: int, position) -> tuple[list[dict], str | None]:
    """One page of rows fetched with limit + 1, and the cursor after it when there is more."""
    page = rows[:limit]
    return page, encode_cursor(position(page[-1])) if len(rows) > limit else None


def check_limit(limit: int) -> int:
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_PAGE:
        raise InvalidInputError("limit out of range", [FieldError("limit", f"must be 1 to {MAX_PAGE}")])
    return limit


class KeyTwiceError(ValueError):
    """One object of a JSON text names a key twice."""


def strict_json(text: str | bytes):
    """JSON, refused (ValueError) when one object names a key twice (KeyTwiceError): which one
    counts differs between parsers (Python's keeps the last), so a reader taking the first would
    see other facts than those judged or verified. `NaN`, `Infinity` and `-Infinity` are refused
    too: no JSON (Python's reader took them, and `"exempt": NaN` had been the name `nan`)."""
    return json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constant)


def _unique_keys(pairs: list[tuple[str, object]]) -> dict:
    found = dict(pairs)
    if len(found) != len(pairs):
        seen: set[str] = set()
        twice = next(key for key, _ in pairs if key in seen or seen.add(key))
        raise KeyTwiceError(f"the key {twice!r} appears twice in one object")
    return found


def _no_constant(word: str) -> object:
    raise ValueError(f"{word} is not a JSON number")


def parse_uuid(text) -> UUID | None:
    """An id that arrived as text (URL path, CLI argument): a UUID, or None for anything else."""
    try:
        return UUID(text)
    except (ValueError, TypeError, AttributeError):
        return None
