"""The decisions read model's columns come from a record's dict form without building the whole
record again (the group-commit writer asks for them for every decision): they must be what the
record itself says, for every kind of record."""

from __future__ import annotations

from domain.decision import DecisionRecord, judge
from domain.policy import LanguageRules
from domain.specs import parse

CONTEXTS = (None, {}, {"sandbox": "ci-7"}, {"source": "index", "sandbox": "sb", "actor": "run"}, {"source": "api"})


def _records() -> list[dict]:
    rules = LanguageRules("python", "allowlist", frozenset({"pandas"}), frozenset({"evil"}))
    found = []
    for text in ("pandas==2.1", "evil", "torch", "-e git+https://x/y", "not a spec !!"):
        spec = parse("python", text)
        for context in CONTEXTS:
            found.append(DecisionRecord.for_spec(spec, judge(rules, spec, "acme"), 3, context).to_dict())
    return found


def test_the_read_model_columns_are_the_records_own_fields() -> None:
    records = _records()
    assert {r["allowed"] for r in records} == {True, False}
    for record in records:
        d = DecisionRecord.from_dict(record)
        assert DecisionRecord.columns(record) == (d.language, d.name, d.kind, d.allowed, d.reason, d.source, d.sandbox)


def test_a_stored_allowed_flag_reads_as_a_boolean() -> None:
    record = {**_records()[0], "allowed": 1}  # as a SQLite row gives it back
    assert DecisionRecord.columns(record)[3] is True
