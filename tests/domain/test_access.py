"""Exceptions in the judging rule, and the terms of an approval (pure domain, no store)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from application.messages import render_message
from domain.access import parse_duration, plan_grant
from domain.decision import DecisionRecord, judge
from domain.errors import ConflictError, InvalidInputError
from domain.policy import LanguageRules
from domain.specs import parse

T = datetime(2026, 3, 3, 12, 0, tzinfo=UTC)


def rules(mode="allowlist", deny=(), until=T + timedelta(days=7), at=T) -> LanguageRules:
    return LanguageRules("python", mode, frozenset({"pandas"}), frozenset(deny), {"beta": until}).at_instant(at)


@pytest.mark.parametrize(
    "text,length",
    [
        ("P7D", timedelta(days=7)),
        ("PT12H", timedelta(hours=12)),
        ("P1W", timedelta(weeks=1)),
        ("p1dt6h", timedelta(days=1, hours=6)),
        ("PT0.5S", timedelta(milliseconds=500)),
    ],
)
def test_durations_of_fixed_length(text, length):
    assert parse_duration(text) == length


@pytest.mark.parametrize(
    "text", ["P1M", "P1Y", "P", "PT", "7D", "P0D", "P99999D", "", "P1DT", "P9999999999D", "PT99999999999999999999S"]
)
def test_durations_without_a_fixed_length_or_out_of_range_are_refused(text):
    with pytest.raises(InvalidInputError) as refused:
        parse_duration(text)
    assert refused.value.errors[0].field == "duration"


@pytest.mark.parametrize("text", ["P1M", "p2m", "P1Y", "P1Y2M3D", "P1MT2H"])
def test_months_and_years_are_refused_with_the_advice_to_use_days(text):
    with pytest.raises(InvalidInputError) as refused:
        parse_duration(text)
    assert "months and years are not accepted" in refused.value.errors[0].message
    assert "use days" in str(refused.value)


def test_an_exception_allows_its_name_until_it_ends():
    assert judge(rules(), parse("python", "Beta==1"), "acme").reason == "matches-an-exception"
    ends = T + timedelta(days=7)
    assert judge(rules(at=ends - timedelta(microseconds=1)), parse("python", "beta"), "acme").allowed
    assert judge(rules(at=ends), parse("python", "beta"), "acme").reason == "not-on-the-allow-list"
    assert judge(rules(until=None, at=T + timedelta(days=999)), parse("python", "beta"), "acme").allowed


def test_the_deny_list_wins_and_sources_are_still_refused():
    assert judge(rules(deny={"Beta"}), parse("python", "beta"), "acme").reason == "matches-the-deny-list"
    direct = judge(rules(), parse("python", "beta @ https://x.example/beta.whl"), "acme")
    assert direct.reason == "direct-reference" and not direct.allowed
    assert judge(rules(mode="denylist"), parse("python", "beta"), "acme").reason == "not-on-the-deny-list"


def test_unbound_rules_grant_no_exception():
    unbound = LanguageRules("python", "allowlist", frozenset(), frozenset(), {"beta": None})
    assert judge(unbound, parse("python", "beta"), "acme").reason == "not-on-the-allow-list"


def test_denials_name_the_request_path():
    spec = parse("python", "gamma")
    message = render_message(DecisionRecord.for_spec(spec, judge(rules(), spec, "acme"), 1, None), "acme")
    assert 'runcode-policy-gate request python gamma --why "..."' in message
    assert "POST /api/v1/workspaces/acme/requests" in message


def test_granting_for_a_deny_listed_name_lifts_every_spelling_or_is_refused():
    state = {"node": {"mode": "allowlist", "allow": [], "deny": ["Left-Pad", "left-pad", "other"]}}
    grant = {"exception_id": "x", "expires_at": None, "request_id": None}
    with pytest.raises(ConflictError) as refused:
        plan_grant(state, "node", "left-pad", grant, lift_deny=False)
    assert refused.value.errors[0].field == "lift_deny"
    changes = plan_grant(state, "node", "left-pad", grant, lift_deny=True)
    assert [(c.type, c.name) for c in changes] == [
        ("entry-removed", "Left-Pad"),
        ("entry-removed", "left-pad"),
        ("exception-granted", "left-pad"),
    ]
