"""Stored values read totally, as the chain's sealer and verifier read them.

Whoever can write the database can put any value in any column (SQLite keeps whatever it is
given, whatever the column's type). So what the chain reads — the events it seals, its own
tables, the Merkle tree and the read models held against it — is read through these: a value
not of its column's kind is `Unreadable`, which names the table, the row, the column and what
was found. The verifier answers it as `altered`, the sealer stops on it with an integrity alarm,
and any other answer that meets one is `503`; none of them is a crash deep inside the reader.
"""

from __future__ import annotations

from uuid import UUID

from application.chain.links import readable_uuid, stored_bytes
from application.decision_writer import StoreUnavailableError

SHOWN = 40  # characters of an unreadable value a message shows


class Unreadable(StoreUnavailableError):
    """A stored value that is not of its column's kind; the message names where and what."""

    title = "Stored value unreadable"
    record: dict = {}  # the verifier's failed record: the message names the row

    def __init__(self, table: str, row: str, column: str, value, kind: str):
        super().__init__(f"the {table} table's {column} of {row} is {shown(value)}, not {kind}")


def integer(value, table: str, row: str, column: str, least: int = 0) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and value >= least:
        return value
    raise Unreadable(table, row, column, value, f"a whole number from {least}")


def text(value, table: str, row: str, column: str) -> str:
    if isinstance(value, str):
        return value
    raise Unreadable(table, row, column, value, "text")


def uuid(value, table: str, row: str, column: str) -> UUID:
    found = readable_uuid(value)
    if found is None:
        raise Unreadable(table, row, column, value, "a UUID")
    return found


def sha256(value, table: str, row: str, column: str) -> bytes:
    """A SHA-256 digest as the chain stores it: 64 hex digits."""
    if isinstance(value, str) and len(value) == 64:
        try:
            return bytes.fromhex(value)
        except ValueError:  # not hex digits
            pass
    raise Unreadable(table, row, column, value, "a SHA-256 digest (64 hex digits)")


def state(value, table: str, row: str) -> bytes:
    found = stored_bytes(value)
    if found is None:
        raise Unreadable(table, row, "state", value, "bytes")
    return found


def shown(value) -> str:
    """A found value in a message: NULL, or its repr cut short (a state may be large)."""
    if value is None:
        return "NULL"
    said = repr(value)
    return said if len(said) <= SHOWN else said[: SHOWN - 1] + "…"


def record(row: dict) -> dict:
    """The chain record a verification failure names, with what of it can be read (None for the
    rest: an event inserted behind the sealer may hold anything)."""
    originator, topic = readable_uuid(row["originator_id"]), row.get("topic")
    return {
        "seq": _whole(row.get("seq")),
        "notification_id": _whole(row.get("notification_id")),
        "originator_id": None if originator is None else str(originator),
        "originator_version": _whole(row["originator_version"]),
        "topic": topic if isinstance(topic, str) else None,
    }


def named(record: dict) -> str:
    """A record in a message: its topic, originator and version, `?` for what cannot be read."""
    topic = f"{record['topic']} " if record.get("topic") else ""
    return f"{topic}{record['originator_id'] or '?'} v{record['originator_version'] or '?'}"


def _whole(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
