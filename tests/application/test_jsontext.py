"""JSON on the recording and sealing paths (application.store.jsontext): orjson where it writes
and reads what the standard library would, the standard library where orjson refuses."""

from __future__ import annotations

import json

import pytest
from eventsourcing.persistence import Mapper

from application import Governance, store_env
from application.store.jsontext import loads, sorted_text
from application.store.mapper import FastMapper
from domain.decision import Decision
from domain.policy import policy_id

RECORDS = [
    {"spec": "pandas==2.1", "allowed": True, "context": {"sandbox": "bench"}, "version": None, "params": {}},
    {"spec": "żółw", "allowed": False, "context": {"sandbox": 'naïve \u2028 "q" \\ \t'}, "list": [1, 2.5, "x"]},
    {"spec": "big", "allowed": True, "context": {"n": 2**70, "f": 1e16, "neg": -0.0}},  # 2**70: orjson refuses
]


@pytest.fixture(scope="module")
def mapper():
    governance = Governance(env=store_env("sqlite:///:memory:"))
    yield governance.mapper
    governance.close()


@pytest.mark.parametrize("record", RECORDS)
def test_a_recorded_decision_is_stored_as_the_library_s_mapper_stores_it(mapper, record):
    assert isinstance(mapper, FastMapper)  # the store's settings name it
    event = Decision.recorded("acme", record)
    stored = mapper.to_stored_event(event)
    assert stored == Mapper.to_stored_event(mapper, event)  # the same bytes, topic and position
    back = mapper.to_domain_event(stored)
    assert (back.record, back.timestamp, back.workspace) == (record, event.timestamp, "acme")


def test_other_events_go_through_the_library_s_mapper_unchanged(mapper):
    governance = Governance(env=store_env("sqlite:///:memory:"))
    try:
        governance.create_workspace("acme", by="test")
        stored = governance.recorder.select_events(policy_id("acme"))
        events = [mapper.to_domain_event(s) for s in stored]
        assert [Mapper.to_stored_event(mapper, e) for e in events] == [mapper.to_stored_event(e) for e in events]
    finally:
        governance.close()


@pytest.mark.parametrize("record", RECORDS)
def test_a_row_s_record_text_reads_back_as_the_record(record):
    text = sorted_text(record)
    assert json.loads(text) == record
    assert list(json.loads(text)) == sorted(record)


@pytest.mark.parametrize(
    "text",
    [
        b'{"a": 1, "b": [true, null], "a": 2}',
        b"NaN",
        b"1e400",
        b'"\\ud800"',
        '{"\u00e9": 1}'.encode(),
        b"9" * 30,  # beyond 64 bits: orjson would read a float
        b"-9223372036854775809",
        b"18446744073709551615",
    ],
)
def test_what_the_sealer_reads_is_what_json_loads_reads(text):
    value, expected = loads(text), json.loads(text)
    assert type(value) is type(expected)
    assert value == expected or (value != value and expected != expected)  # NaN is not equal to itself


def test_what_is_not_json_is_refused_as_json_loads_refuses_it():
    with pytest.raises(ValueError):
        loads(b"{")
