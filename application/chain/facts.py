"""An aggregate's stored events, each checked against the chain before the service acts on it.

Authentication and snapshot loading read the events (the sealed record), never a read-model
table alone, and take each event only if it is what the chain sealed:

- sealed, and its stored bytes still hash to the sealed value: used;
- not sealed yet, stored after the sealer's position: used (the sealer is under a second
  behind; verification checks it later);
- not sealed but stored at a position the sealer has passed: inserted behind its back;
- sealed, but its bytes hash otherwise (altered) or it is gone from the store (deleted).

The last three are `Tampered`. Rewriting the chain's own rows to match altered events is what
the signed checkpoints catch, at verification (docs: "What is verified, and when").
"""

from __future__ import annotations

from dataclasses import dataclass

from application.chain.links import event_hash
from application.chain.stored import shown


class Tampered(Exception):
    """The store holds something the chain does not seal; the message says what."""


@dataclass(frozen=True)
class Fact:
    version: int
    topic: str
    state: dict


def checked_facts(rows: list[dict], read_state, what: str) -> list[Fact]:
    """`rows` from `ChainStore.facts` (or a read that returns the same columns); oldest first."""
    for row in rows:  # what anyone with the database could have put there, read as its kind
        if not _whole(row["originator_version"]):
            raise Tampered(f"{what}: an event's version is {shown(row['originator_version'])}, not a number (altered)")
        if row["position"] is not None and not _whole(row["position"]):
            raise Tampered(f"{what}: the sealer's position is {shown(row['position'])}, not a number (altered)")
    facts = []
    for row in sorted(rows, key=lambda r: r["originator_version"]):
        version = row["originator_version"]
        if row["state"] is None:
            raise Tampered(f"{what}: event {version} is sealed in the chain but gone from the store (deleted)")
        if row["event_hash"] is None:
            if row["notification_id"] <= (row["position"] or 0):
                raise Tampered(f"{what}: event {version} is stored at a sealed position but in no chain (inserted)")
        elif event_hash(row["originator_id"], version, row["topic"], row["state"]) != row["event_hash"]:
            raise Tampered(f"{what}: event {version} no longer hashes to its sealed value (altered)")
        facts.append(Fact(version, row["topic"], read_state(row["state"]) or {}))
    return facts


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
