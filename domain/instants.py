"""How an instant is written wherever the service writes one: RFC 3339 in UTC with a `Z`."""

from __future__ import annotations

from datetime import UTC, datetime


def iso(moment: datetime | None) -> str | None:
    """UTC with a `Z` and microseconds; isoformat pads years below 1000 (strftime does not)."""
    if moment is None:
        return None
    if moment.tzinfo is not UTC:  # the store's and the library's instants are UTC already: no conversion
        moment = moment.astimezone(UTC)
    return moment.isoformat(timespec="microseconds")[:-6] + "Z"  # without its "+00:00"
