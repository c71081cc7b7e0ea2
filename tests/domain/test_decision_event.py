"""The evaluate path records a decision's event made without its aggregate
(`Decision.recorded`): it must be the event the aggregate's constructor makes, so that what is
stored, sealed and replayed is the same either way."""

from __future__ import annotations

from datetime import UTC
from uuid import NAMESPACE_URL, uuid5

from domain.decision import Decision

RECORD = {"name": "pandas", "allowed": True, "reason": "not-on-the-deny-list"}


def test_the_event_is_the_one_the_aggregate_makes():
    made = Decision(workspace="acme", record=RECORD).collect_events()[0]
    recorded = Decision.recorded("acme", RECORD)
    assert type(recorded) is type(made)
    fresh = {"originator_id", "timestamp"}  # a new id and the instant of making, as each one's own
    assert {k: v for k, v in vars(recorded).items() if k not in fresh} == {
        k: v for k, v in vars(made).items() if k not in fresh
    }
    assert recorded.originator_id != made.originator_id and recorded.timestamp.tzinfo is UTC


def test_it_replays_as_the_decision_it_records():
    recorded = Decision.recorded("acme", RECORD)
    decision = recorded.mutate(None)
    assert isinstance(decision, Decision)
    assert (decision.id, decision.version, decision.created_on) == (recorded.originator_id, 1, recorded.timestamp)
    assert (decision.workspace, decision.record) == ("acme", RECORD)


def test_a_decision_named_by_what_it_decides_carries_that_id_whoever_makes_it():
    named = uuid5(NAMESPACE_URL, "run/fetch")
    first, second = Decision.recorded("acme", RECORD, named), Decision.recorded("acme", RECORD, named)
    assert first.originator_id == second.originator_id == named
    assert first.mutate(None).id == named
