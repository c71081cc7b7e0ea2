"""Event classes and snapshots whose stored shape changed are versioned: what an older version
stored is upcast on reading (by the library's mapper, as the store reads it), and what is
written now carries its version, so it is never upcast again."""

from __future__ import annotations

import json
from uuid import uuid4

from eventsourcing.persistence import DatetimeAsISO, JSONTranscoder, Mapper, StoredEvent, UUIDAsHex

from domain.events import Attributed
from domain.policy import Policy

AT = {"_type_": "datetime_iso", "_data_": "2026-12-01T09:00:00+00:00"}
GRANT = {"language": "python", "name": "left-pad", "exception_id": "e1", "expires_at": None, "request_id": None}
# Version 1 states, as the first releases stored them (no by_token).
V1 = {
    Policy.ModeSwitched: {"language": "python", "mode": "allowlist"},
    Policy.EntryAdded: {"language": "python", "list_name": "allow", "name": "numpy"},
    Policy.EntryRemoved: {"language": "python", "list_name": "allow", "name": "numpy"},
    Policy.ExceptionGranted: GRANT,
    Policy.ExceptionRevoked: {"language": "python", "name": "left-pad", "exception_id": "e1"},
}


def _mapper() -> Mapper:
    transcoder = JSONTranscoder()
    transcoder.register(UUIDAsHex())
    transcoder.register(DatetimeAsISO())
    return Mapper(transcoder=transcoder)


def _stored(topic: str, state: dict, version: int = 2) -> StoredEvent:
    return StoredEvent(uuid4(), version, topic, json.dumps(state).encode())


def test_every_attributed_event_is_at_version_2_and_a_grant_at_3():
    assert all(issubclass(cls, Attributed) for cls in V1)
    assert {cls: cls.class_version for cls in V1} == {cls: 3 if cls is Policy.ExceptionGranted else 2 for cls in V1}


def test_grants_of_versions_1_and_2_read_as_lifting_nothing():
    """Before version 3 a lift_deny removed the deny entries (an EntryRemoved of its own): the
    grant itself lifted nothing, and replays so."""
    mapper = _mapper()
    v1 = {"timestamp": AT, **GRANT, "by": "ann", "note": ""}
    for state in (v1, {**v1, "by_token": None, "class_version": 2}):
        policy = Policy(workspace="acme", by="ann")
        stored = StoredEvent(policy.id, 2, Policy.ExceptionGranted.TOPIC, json.dumps(state).encode())
        event = mapper.to_domain_event(stored)
        assert event.lifts_deny is False and event.by == "ann"
        event.mutate(policy)
        assert "lifts_deny" not in policy.exceptions["e1"]


def test_policy_changes_of_version_1_read_as_made_by_no_token():
    mapper = _mapper()
    for cls, fields in V1.items():
        event = mapper.to_domain_event(_stored(cls.TOPIC, {"timestamp": AT, **fields, "by": "ann", "note": ""}))
        assert isinstance(event, cls) and event.by_token is None and event.by == "ann"


def test_changes_written_now_carry_their_version_and_keep_their_token():
    policy = Policy(workspace="acme", by="ann")
    policy.record([], "ann", "")  # nothing planned: nothing triggered
    policy.trigger_event(Policy.EntryAdded, by="ann", note="", by_token="t1", **V1[Policy.EntryAdded])
    policy.trigger_event(Policy.ExceptionGranted, by="ann", note="", by_token="t1", **GRANT, lifts_deny=True)
    added, granted = (_mapper().to_stored_event(e) for e in policy.collect_events()[-2:])
    assert [json.loads(stored.state)["class_version"] for stored in (added, granted)] == [2, 3]
    assert _mapper().to_domain_event(added).by_token == "t1"
    read = _mapper().to_domain_event(granted)
    assert (read.by_token, read.lifts_deny) == ("t1", True)
    assert policy.exceptions["e1"]["lifts_deny"] is True


def test_a_version_1_policy_snapshot_gains_egress_and_exceptions():
    state = {
        "_created_on": AT,
        "_modified_on": AT,
        "workspace": "acme",
        "state": {lang: {"mode": "denylist", "allow": [], "deny": []} for lang in ("python", "node")},
        "changed_by": "ann",
    }
    snapshot = _mapper().to_domain_event(
        _stored("eventsourcing.domain:Snapshot", {"timestamp": AT, "topic": Policy.TOPIC, "state": state}, 3)
    )
    policy = snapshot.mutate(None)
    assert (policy.egress, policy.exceptions, policy.version) == ({"mode": "open", "allow": []}, {}, 3)
    assert policy.known_malware() == "enforce"  # version 2 had no known-malware action
    assert json.loads(_mapper().to_stored_event(Policy.Snapshot.take(policy)).state)["state"]["class_version"] == 3
