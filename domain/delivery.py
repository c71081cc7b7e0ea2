"""What the package index delivered for a download decision: a follow-up fact, recorded once
the transfer ends.

A download decision is recorded (durable) before any byte flows, so it cannot say whether the
bytes arrived. Each transfer it allowed then ends in one `Delivery`: its own small aggregate
(never a second event on the Decision: two workers serving one decision would conflict on its
version), naming the decision, what became of the transfer and exactly what was sent.
"""

from __future__ import annotations

import hashlib

from eventsourcing.domain import Aggregate, event

SERVED = "served"  # relayed from upstream to its end
CACHED = "cached"  # sent whole from the service's own copy
FAILED = "failed"  # the upstream refused or broke off, or the client stopped reading: not delivered whole
STATUSES = (SERVED, CACHED, FAILED)
NOTHING_SENT = hashlib.sha256(b"").hexdigest()


class Delivery(Aggregate):
    """One transfer a download decision allowed, as it ended."""

    TOPIC = "runcode_policy:Delivery"

    class Created(Aggregate.Created):
        # Unused base "created" class; the library requires an explicit topic on it too.
        TOPIC = "runcode_policy:Delivery.Created"

    @event("Recorded", topic="runcode_policy:Delivery.Recorded")
    def __init__(self, workspace: str, decision: str, status: str, size: int, sha256: str):
        # Worked out by the application (the hash of the bytes sent, their count): replay only assigns.
        self.workspace = workspace
        self.decision = decision
        self.status = status
        self.size = size
        self.sha256 = sha256
