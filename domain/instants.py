"""How an instant is written wherever the service writes one: RFC 3339 in UTC with a `Z`; and
the instant a span after another, which may be past the calendar's last."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


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
