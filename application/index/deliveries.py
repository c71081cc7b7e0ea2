"""Deliveries: what each transfer a download decision allowed really sent, recorded when it
ends, and shown with the decision.

The decision is durable before the first byte; the delivery follows as its own fact
(`domain.delivery`), through the same group commit, and is sealed into the audit chain like
every recorded event. Bytes already sent cannot be called back, so a delivery the store cannot
take is logged, and the decision shows none.

A decision shows `delivery`, the transfer that ended last, and `deliveries`, every one oldest
first: a run's decision on a file is one, however many workers serve it (application.index.gate),
and a client that fetches the file again is served again, so one decision may have several.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from uuid import UUID

from application.decision_writer import DecisionWriter, StoreUnavailableError
from application.formats import iso
from application.store.reads import ReadModel
from domain.delivery import STATUSES, Delivery

# What a decision shows besides its recorded record: follow-up facts, sealed as their own events.
FOLLOW_UPS = ("delivery", "deliveries")

log = logging.getLogger(__name__)

# (status, bytes sent, sha256 of the bytes sent), called once when a transfer ends.
Delivered = Callable[[str, int, str], None]


class Deliveries:
    def __init__(self, writer: DecisionWriter):
        self._writer = writer

    def recorder(self, workspace: str, decision_id: str) -> Delivered:
        """The hook a transfer calls when it ends."""

        def delivered(status: str, size: int, sha256: str) -> None:
            self.record(workspace, decision_id, status, size, sha256)

        return delivered

    def record(self, workspace: str, decision_id: str, status: str, size: int, sha256: str) -> None:
        if status not in STATUSES:
            raise ValueError(f"unknown delivery status {status!r}")  # a programming error, not input
        delivery = Delivery(
            workspace=workspace, decision=str(UUID(decision_id)), status=status, size=size, sha256=sha256
        )
        try:
            self._writer.record(delivery)
        except StoreUnavailableError:
            log.error("delivery of decision %s (%s, %d bytes) not recorded", decision_id, status, size)


def with_deliveries(readmodel: ReadModel, decisions: list[dict]) -> list[dict]:
    """These decision views, each with what was delivered for it (when anything was): one read."""
    found: dict[str, list[dict]] = {}
    for row in readmodel.deliveries([d["id"] for d in decisions if d.get("request") == "download"]):
        found.setdefault(row["decision"], []).append(
            {"status": row["status"], "bytes": row["bytes"], "sha256": row["sha256"], "at": iso(row["at"])}
        )
    for decision in decisions:
        if decision["id"] in found:
            decision["delivery"] = found[decision["id"]][-1]
            decision["deliveries"] = found[decision["id"]]
    return decisions
