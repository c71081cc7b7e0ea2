"""Exceptions in the judging rule, and the terms of an approval (pure domain, no store)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from application.messages import render_message
from domain.access import parse_duration, plan_grant, requested_package
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
    "text",
    ["P1M", "P1Y", "P", "PT", "7D", "P0D", "P99999D", "", "P1DT", "P9999999999D", "PT99999999999999999999S"]
    + ["P\u0661D", " PT1H", "PT1H ", "PT1.5H", "P0.5D", "PT5\u017f"],  # other scripts, blanks, fractions
)
def test_durations_without_a_fixed_length_or_out_of_range_are_refused(text):
    with pytest.raises(InvalidInputError) as refused:
        parse_duration(text)
    assert refused.value.errors[0].field == "duration"


def test_a_duration_with_blanks_around_it_is_told_so():
    with pytest.raises(InvalidInputError) as refused:
        parse_duration(" P7D")
    assert refused.value.errors[0].message == "must be written without blanks around it"


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
    assert "must lift its deny entry for the exception's window" in str(refused.value)
    changes = plan_grant(state, "node", "left-pad", grant, lift_deny=True)
    # No entry is removed: the grant lifts them, for its window only.
    assert [(c.type, c.name, c.exception) for c in changes] == [
        ("exception-granted", "left-pad", {**grant, "lifts_deny": True})
    ]
    assert state["node"]["deny"] == ["Left-Pad", "left-pad", "other"]
    # lift_deny for a name no entry denies lifts nothing: an entry added later denies it.
    changes = plan_grant(state, "node", "right-pad", grant, lift_deny=True)
    assert [c.exception for c in changes] == [{**grant, "lifts_deny": False}]


def lifted(mode="denylist", deny=("Beta", "other"), until=T + timedelta(days=7), at=T) -> LanguageRules:
    rules = LanguageRules(
        "python", mode, frozenset({"pandas"}), frozenset(deny), {"beta": until}, lifted={"beta": until}
    )
    return rules if at is None else rules.at_instant(at)


@pytest.mark.parametrize("mode", ["denylist", "allowlist"])
def test_a_lifting_exception_keeps_the_entries_naming_its_name_from_denying_it_for_its_window_only(mode):
    ends = T + timedelta(days=7)
    for at in (T, ends - timedelta(microseconds=1)):
        inside = lifted(mode, at=at)
        verdict = judge(inside, parse("python", "Beta==1"), "acme")
        assert (verdict.allowed, verdict.reason) == (True, "matches-an-exception")
        assert not inside.denies("beta") and inside.lifts("beta")
        assert inside.denies("other") and not inside.lifts("other")  # another entry still denies
    for at in (ends, ends + timedelta(days=1)):
        after = lifted(mode, at=at)
        assert judge(after, parse("python", "beta"), "acme").reason == "matches-the-deny-list"
        assert after.denies("beta") and not after.lifts("beta")
    forever = lifted(mode, until=None, at=T + timedelta(days=999))
    assert judge(forever, parse("python", "beta"), "acme").reason == "matches-an-exception"


def test_unbound_rules_lift_nothing():
    unbound = lifted(at=None)
    assert unbound.denies("beta") and not unbound.lifts("beta")
    assert judge(unbound, parse("python", "beta"), "acme").reason == "matches-the-deny-list"


def test_a_lift_never_lifts_a_deny_pattern_nor_lets_a_direct_reference_in():
    patterned = LanguageRules(
        "python", "denylist", deny=frozenset({"beta-tools", "beta-*"}), exceptions={"beta-tools": None}
    )
    patterned = replace(patterned, lifted={"beta-tools": None}).at_instant(T)
    assert patterned.denies("beta-tools")  # the entry naming it is lifted, the pattern is not
    assert judge(patterned, parse("python", "beta-tools"), "acme").reason == "matches-the-deny-list"
    direct = judge(lifted(), parse("python", "beta @ https://x.example/beta.whl"), "acme")
    assert (direct.allowed, direct.reason) == (False, "direct-reference")


def test_a_lift_without_a_deny_entry_changes_no_answer():
    rules = lifted(deny=())
    assert not rules.lifts("beta")
    assert judge(rules, parse("python", "beta"), "acme").reason == "not-on-the-deny-list"


def test_a_request_names_one_package_by_any_spec_and_a_pattern_is_refused():
    assert requested_package("python", "numpy==1.*") == ("python", "numpy")  # a version's wildcard
    assert requested_package("node", "@corp/x@*") == ("node", "@corp/x")
    for language, pattern in (("python", "django-*"), ("node", "@corp/*")):
        with pytest.raises(InvalidInputError, match="is a pattern"):
            requested_package(language, pattern)
