"""The chain's arithmetic: an event's canonical bytes, its hash, a link, a checkpoint's message.

The canonical form is taken from the stored record, not from the domain event: the originator id
as its 16 raw bytes, the originator version as 8 bytes big-endian, the topic as UTF-8 and the
state exactly as the library stored it, each length-prefixed so no two records share bytes.
Those four fields are what the database holds and what a replay reads; re-encoding a domain
event instead would tie every hash to the library's JSON encoder, the Python classes and their
upcasters, so an upgrade could "alter" every record. The notification id is left out on
purpose: it is a storage position (a restore may renumber it), and order is what the chain's
sequence numbers and links already carry.

Each link hashes the workspace, the sequence number, the previous link and the event's hash, so a
record cannot be moved to another position or another workspace's chain without breaking it.
Linking the event's hash (rather than its bytes again) lets an export carry 32 bytes per record
it omits and still be checked against a signed head.
"""

from __future__ import annotations

import hashlib
from uuid import UUID

EVENT_TAG = b"runcode-policy/event/v1\x00"
LINK_TAG = b"runcode-policy/link/v1\x00"
CHECKPOINT_TAG = "runcode-policy/checkpoint/v1"
GENESIS = "0" * 64  # the "previous link" of a chain's first record


def canonical_bytes(originator_id: UUID | str, originator_version: int, topic: str, state: bytes) -> bytes:
    topic_bytes = topic.encode("utf-8")
    state = bytes(state)
    return b"".join(
        (
            EVENT_TAG,
            as_uuid(originator_id).bytes,
            int(originator_version).to_bytes(8, "big"),
            len(topic_bytes).to_bytes(4, "big"),
            topic_bytes,
            len(state).to_bytes(8, "big"),
            state,
        )
    )


def event_hash(originator_id: UUID | str, originator_version: int, topic: str, state: bytes) -> str | None:
    """None for a record not as the library stores one (`unlike_stored`): it hashes to no sealed value."""
    if unlike_stored(originator_id, originator_version, topic, state) is not None:
        return None
    return hashlib.sha256(canonical_bytes(originator_id, originator_version, topic, state)).hexdigest()


def unlike_stored(originator_id, originator_version, topic, state) -> tuple[str, object, str] | None:
    """The first field of a stored record that is not of the kind the library stores, as (column,
    value, kind), or None: a state that is not bytes (SQLite TEXT holding the same characters, or
    NULL), a topic that is not text, an originator version that is no whole number, an originator
    id that is no UUID. No record sealed is such, so none hashes to a sealed value."""
    if stored_bytes(state) is None:
        return "state", state, "bytes"
    if not isinstance(topic, str):
        return "topic", topic, "text"
    if not isinstance(originator_version, int) or isinstance(originator_version, bool) or originator_version < 0:
        return "originator_version", originator_version, "a whole number"
    if readable_uuid(originator_id) is None:
        return "originator_id", originator_id, "a UUID"
    return None


def readable_uuid(value) -> UUID | None:
    """A UUID as either store spells it (PostgreSQL's uuid, SQLite's hex text); None for anything else."""
    if isinstance(value, UUID):
        return value
    try:
        return UUID(value) if isinstance(value, str) else None
    except ValueError:
        return None


def stored_bytes(state) -> bytes | None:
    """A stored state as the bytes the chain hashes; None for a value of another type (SQLite TEXT
    where the library writes a BLOB, however alike its characters): no record sealed is that."""
    return bytes(state) if isinstance(state, (bytes, bytearray, memoryview)) else None


def link_hash(workspace: str, seq: int, previous: str, event: str) -> str:
    workspace_bytes = workspace.encode("utf-8")
    return hashlib.sha256(
        b"".join(
            (
                LINK_TAG,
                len(workspace_bytes).to_bytes(2, "big"),
                workspace_bytes,
                seq.to_bytes(8, "big"),
                bytes.fromhex(previous),
                bytes.fromhex(event),
            )
        )
    ).hexdigest()


def checkpoint_message(workspace: str, seq: int, head: str, at: str) -> bytes:
    """What a checkpoint's signature covers: one line per field, so any language can rebuild it."""
    return "\n".join((CHECKPOINT_TAG, workspace, str(seq), head, at)).encode("utf-8")


def as_uuid(value: UUID | str) -> UUID:
    return value if isinstance(value, UUID) else UUID(str(value))
