"""Sealed snapshots: a snapshot is used only if the chain seals its exact bytes.

A snapshot is a copy of the policy's state, stored outside the event log, that loading starts
from instead of replaying every event; so an edited snapshot would silently change enforcement.
Each snapshot is therefore taken *before* its Save is recorded, and a `SnapshotSealed` event
carrying the hash of the snapshot's stored record (`links.event_hash`, the chain's own
canonical form) is saved in the same transaction as the Save's events. That event is sealed in
the workspace's chain like any other, so its digest is as tamper-evident as the policy's events.

Loading (`SealedRepository`) reads the snapshot, then its seal (checked against the chain on
use: `application.chain.facts`), and uses the snapshot only if its bytes hash to the sealed
digest. Otherwise — altered, inserted without a seal, or made before snapshots were sealed —
the aggregate is rebuilt from its events, and an integrity alarm names the snapshot. The
per-process rules cache (application.policies) loads each version once per worker, and each
process remembers the digests it found sealed (the same bytes hash to the same digest, so they
need no second look), so the check's one extra primary-key read is paid once per snapshot, not
per request; a point-in-time answer reads the seal in the statement that reads the snapshot
(`SnapshotCheck.policy_at`), so it pays no extra read at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain
from uuid import NAMESPACE_URL, UUID, uuid5

from eventsourcing.application import AggregateNotFoundError, Repository
from eventsourcing.domain import DomainEvent
from eventsourcing.persistence import StoredEvent
from eventsourcing.utils import register_topic

from application.chain.alarms import IntegrityAlarms
from application.chain.facts import Tampered, checked_facts
from application.chain.links import event_hash
from application.decision_writer import StoreUnavailableError
from application.store.chain import ChainStore

_NAMESPACE = uuid5(NAMESPACE_URL, "https://runcode-policy/snapshot-seals")
_SEAL = "\x00seal\x00"  # stands for the snapshot's words in a tamper message, until they are needed
VERIFIED_KEPT = 4096  # digests of stored snapshots this process found sealed (a snapshot every 50 Saves)


@dataclass(frozen=True)
class SnapshotSealed(DomainEvent):
    """The digest of the snapshot of aggregate X at version v, stored as version v of the seal
    stream `seal_id(X)` (its versions are the snapshotted ones: one seal per snapshot)."""

    TOPIC = "runcode_policy:SnapshotSeal.Sealed"
    workspace: str
    digest: str


register_topic(SnapshotSealed.TOPIC, SnapshotSealed)


def seal_id(originator_id: UUID) -> UUID:
    return uuid5(_NAMESPACE, str(originator_id))


def snapshot_digest(stored: StoredEvent) -> str:
    return event_hash(stored.originator_id, stored.originator_version, stored.topic, stored.state)


def take_sealed(snapshot, mapper, workspace: str) -> tuple[StoredEvent, SnapshotSealed]:
    """The snapshot's stored record (insert exactly these bytes) and the event that seals it."""
    stored = mapper.to_stored_event(snapshot)
    seal = SnapshotSealed(
        originator_id=seal_id(stored.originator_id),
        originator_version=stored.originator_version,
        timestamp=SnapshotSealed.create_timestamp(),
        workspace=workspace,
        digest=snapshot_digest(stored),
    )
    return stored, seal


class SnapshotCheck:
    def __init__(self, store: ChainStore, read_state, alarms: IntegrityAlarms):
        self.store, self.read_state, self.alarms = store, read_state, alarms
        self._verified: dict[str, None] = {}

    def policy_at(self, workspace: str, at, policy: UUID, snapshots: str) -> tuple[list[StoredEvent], bool]:
        """The stored events that make the policy at instant `at` (its last snapshot there, if
        any, then the events after it; none: no such workspace), read in one statement with the
        snapshot's seal (`ChainStore.policy_at`), and whether the snapshot holds (as `holds`)."""
        oid = self.store.oid
        rows = self.store.policy_at(workspace, at, oid(policy), oid(seal_id(policy)), snapshots)
        parts: dict[str, list[dict]] = {"snapshot": [], "event": [], "seal": []}
        for row in rows:
            parts[row["part"]].append(row)
        self._checked(policy, parts["event"])
        stored = [
            StoredEvent(policy, r["originator_version"], r["topic"], bytes(r["state"]))
            for r in chain(parts["snapshot"], sorted(parts["event"], key=lambda r: r["originator_version"]))
        ]
        return stored, not parts["snapshot"] or self.holds(stored[0], parts["seal"])

    def holds(self, stored: StoredEvent, seal: list[dict] | None = None) -> bool:
        """Whether the chain seals this stored snapshot; raises the alarm when it does not. `seal`:
        the facts of its seal (`ChainStore.facts`), when the caller read them with the snapshot."""
        digest = snapshot_digest(stored)
        if digest in self._verified:  # these very bytes were found sealed before
            return True
        problem = self.problem(stored, digest, seal)
        if problem is None:
            if len(self._verified) >= VERIFIED_KEPT:
                self._verified.clear()
            self._verified[digest] = None
            return True
        subject = f"{stored.originator_id} v{stored.originator_version}"
        return self._refuse(subject, f"{problem}; it was not used, the policy was rebuilt from its events")

    def problem(self, stored: StoredEvent, digest: str | None = None, seal: list[dict] | None = None) -> str | None:
        """What is wrong with this stored snapshot against its seal, or None when it holds
        (`digest` and `seal`, as `holds`: read here when the caller has not)."""
        if seal is None:
            seal = self.store.facts(self.store.oid(seal_id(stored.originator_id)), stored.originator_version)
        try:
            facts = checked_facts(seal, self.read_state, _SEAL)
        except Tampered as tampered:
            return str(tampered).replace(_SEAL, f"{self._what(stored)}'s seal", 1)
        if not facts:
            return f"{self._what(stored)} has no seal"
        if facts[0].state.get("digest") != (digest or snapshot_digest(stored)):
            return f"{self._what(stored)} did not verify: its stored bytes differ from the sealed digest"
        return None

    def _what(self, stored: StoredEvent) -> str:
        """The snapshot in words (its state decoded, a large read: only when something is wrong)."""
        subject = f"{stored.originator_id} v{stored.originator_version}"
        state = (self.read_state(stored.state) or {}).get("state")
        workspace = state.get("workspace", "?") if isinstance(state, dict) else "?"
        return f"the snapshot of workspace {workspace!r} at policy version {stored.originator_version - 1} ({subject})"

    def events(self, aggregate_id: UUID, gt: int | None, lte: int | None, mapper) -> list:
        """The aggregate's events after version `gt` (up to `lte`), each checked against the chain
        as authentication's are (`checked_facts`): an event edited, removed or slipped in behind
        the sealer raises the alarm, and nothing is built from it (StoreUnavailableError: a 503,
        fail closed), where the service once enforced an edited policy event without a word."""
        rows = self.store.facts(self.store.oid(aggregate_id), after=gt or 0)
        rows = [r for r in rows if lte is None or r["originator_version"] <= lte]
        self._checked(aggregate_id, rows)
        rows.sort(key=lambda r: r["originator_version"])
        return [
            mapper.to_domain_event(StoredEvent(aggregate_id, r["originator_version"], r["topic"], bytes(r["state"])))
            for r in rows
        ]

    def _checked(self, aggregate_id: UUID, rows: list[dict]) -> None:
        """Raise the alarm and refuse (StoreUnavailableError) unless every row is what the chain sealed."""
        try:
            checked_facts(rows, self.read_state, f"aggregate {aggregate_id}")
        except Tampered as tampered:
            self.alarms.alarm("event", str(aggregate_id), str(tampered))
            raise StoreUnavailableError(
                f"{tampered}; it was not used: nothing is judged on it until the store is restored"
            ) from None

    def _refuse(self, subject: str, detail: str) -> bool:
        self.alarms.alarm("snapshot", subject, detail)
        return False


class SealedRepository(Repository):
    """The library's repository, except that a snapshot is used only when `check` holds, and the
    events replayed after it only when the chain seals them (`SnapshotCheck.events`)."""

    check: SnapshotCheck | None = None  # set once the application has its chain store

    def _reconstruct_aggregate(self, aggregate_id, version, projector_func):
        if self.check is None or self.snapshot_store is None:
            return super()._reconstruct_aggregate(aggregate_id, version, projector_func)
        stored = self.snapshot_store.recorder.select_events(aggregate_id, desc=True, limit=1, lte=version)
        snapshots = []
        if stored and self.check.holds(stored[0]):
            snapshots = [self.snapshot_store.mapper.to_domain_event(stored[0])]
        gt = snapshots[0].originator_version if snapshots else None
        events = self.check.events(aggregate_id, gt, version, self.event_store.mapper)
        aggregate = projector_func(None, chain(snapshots, events))
        if aggregate is None:
            raise AggregateNotFoundError(f"Aggregate {aggregate_id!r} version {version!r} not found.")
        return aggregate
