"""The Policy aggregate, change planning and the judging rule, from the domain alone."""

from __future__ import annotations

from dataclasses import replace

import pytest

from application.messages import render_message
from domain.decision import DecisionRecord, judge
from domain.edits import plan_desired_state, plan_incremental
from domain.errors import InvalidEntriesError, InvalidInputError
from domain.policy import Change, LanguageRules, Policy, policy_id
from domain.specs import parse


def replayed(policy: Policy) -> Policy:
    aggregate = None
    for event in policy.collect_events():
        aggregate = event.mutate(aggregate)
    return aggregate


def test_a_new_policy_is_denylist_with_empty_lists_at_version_zero():
    policy = Policy(workspace="acme", by="alice")
    assert policy.id == policy_id("acme")
    assert policy.policy_version == 0
    assert policy.state["python"] == {"mode": "denylist", "allow": [], "deny": []}
    assert policy.changed_at is None and policy.changed_by is None


def test_recorded_changes_replay_to_the_same_state():
    policy = Policy(workspace="acme", by="alice")
    changes = plan_desired_state(policy.state, {"python": {"mode": "allowlist", "allow": "pandas==2.1, numpy"}})
    policy.record(changes, "alice", "data team")
    assert policy.policy_version == 3
    again = replayed(policy)
    assert (
        again.state
        == policy.state
        == {
            "python": {"mode": "allowlist", "allow": ["numpy", "pandas"], "deny": []},
            "node": {"mode": "denylist", "allow": [], "deny": []},
        }
    )
    assert again.changed_by == "alice"


def test_a_desired_state_records_only_the_differences():
    state = {
        "python": {"mode": "allowlist", "allow": ["numpy", "pandas"], "deny": []},
        "node": {"mode": "denylist", "allow": [], "deny": ["left-pad"]},
    }
    changes = plan_desired_state(
        state, {"python": {"mode": "allowlist", "allow": ["Pandas", "scipy"]}, "node": {"deny": "left-pad"}}
    )
    assert changes == [
        Change("entry-removed", "python", "allow", "numpy"),
        Change("entry-added", "python", "allow", "scipy"),
    ]


def test_adding_a_present_entry_or_removing_an_absent_one_plans_nothing():
    state = {
        "python": {"mode": "denylist", "allow": [], "deny": ["numpy"]},
        "node": {"mode": "denylist", "allow": [], "deny": []},
    }
    planned = plan_incremental(
        state,
        [
            {"action": "add", "language": "python", "list": "deny", "entries": ["NumPy"]},
            {"action": "remove", "language": "node", "list": "deny", "entries": "left-pad"},
            {"action": "switch-mode", "language": "python", "mode": "denylist"},
        ],
    )
    assert planned == []


def test_incremental_commands_apply_in_order():
    state = {
        "python": {"mode": "denylist", "allow": [], "deny": []},
        "node": {"mode": "denylist", "allow": [], "deny": []},
    }
    planned = plan_incremental(
        state,
        [
            {"action": "add", "language": "python", "list": "allow", "entries": "a, b"},
            {"action": "remove", "language": "python", "list": "allow", "entries": ["a"]},
            {"action": "add", "language": "python", "list": "allow", "entries": ["a"]},
        ],
    )
    assert [(c.type, c.name) for c in planned] == [
        ("entry-added", "a"),
        ("entry-added", "b"),
        ("entry-removed", "a"),
        ("entry-added", "a"),
    ]


def test_invalid_entries_refuse_the_whole_command_naming_every_bad_entry():
    state = Policy(workspace="acme", by="a").state
    with pytest.raises(InvalidEntriesError) as refused:
        plan_desired_state(state, {"python": {"allow": ["pandas", "https://x/y.tgz", "./local", "numpy"]}})
    assert [e.field for e in refused.value.errors] == ["python.allow[1]", "python.allow[2]"]


def test_a_desired_state_with_a_null_is_refused_naming_every_null_and_what_is_left_out_is_kept():
    state = Policy(workspace="acme", by="a").state
    desired = {
        "python": {"mode": None, "allow": None, "deny": ["b"], "rules": None},
        "node": None,
        "known_malware": None,
        "egress": None,
    }
    with pytest.raises(InvalidInputError) as refused:
        plan_desired_state(state, desired)
    fields = [e.field for e in refused.value.errors]
    assert fields == ["node", "known_malware", "egress", "python.mode", "python.allow", "python.rules"]
    assert "null is not a list" in refused.value.errors[4].message
    assert plan_desired_state(state, {"python": {"deny": ["b"]}}) == [Change("entry-added", "python", "deny", "b")]


def test_an_unknown_mode_or_action_is_refused_with_its_field():
    state = Policy(workspace="acme", by="a").state
    with pytest.raises(InvalidInputError) as refused:
        plan_incremental(
            state,
            [{"action": "switch-mode", "language": "python", "mode": "open"}, {"action": "purge", "language": "ruby"}],
        )
    fields = [e.field for e in refused.value.errors]
    assert fields == ["changes[0].mode", "changes[1].action", "changes[1].language"]


@pytest.mark.parametrize(
    ("rules", "entries", "said"),
    [(None, None, "null"), (False, False, "false"), (0, 0, "0"), ([], {}, "an array")],
)
def test_entries_or_rules_of_the_wrong_type_are_refused_not_read_as_none(rules, entries, said):
    """`"entries": null` (false, 0, {}) had changed nothing and `"rules": false` (null, 0, "", [])
    turned every rule off, each answered 200: `or []` and `or {}` had read them as none."""
    state = {
        "python": {
            "mode": "denylist",
            "allow": [],
            "deny": ["evil"],
            "rules": {"sdists": {"allow": [], "action": "enforce"}},
        },
        "node": {"mode": "denylist", "allow": [], "deny": []},
    }
    commands = [
        {"action": "set-rules", "language": "python", "rules": rules},
        {"action": "remove", "language": "python", "list": "deny", "entries": entries},
        {"action": "add", "language": "node", "list": "allow", "entries": entries},
        {"action": "add", "language": "egress", "list": "allow", "entries": entries},
    ]
    with pytest.raises(InvalidInputError) as refused:
        plan_incremental(state, commands)
    listed = "an object" if entries == {} else said
    assert {e.field: e.message for e in refused.value.errors} == {
        "changes[0].rules": f"must be an object of rules (min_release_age, versions_deny, sdists), not {said}",
        "changes[1].entries": f"must be one string of entries or a list of them, not {listed}",
        "changes[2].entries": f"must be one string of entries or a list of them, not {listed}",
        "changes[3].entries": f"must be a list of hostnames such as api.github.com or *.example.org, not {listed}",
    }
    off = plan_incremental(state, [{"action": "set-rules", "language": "python", "rules": {}}])
    assert [(c.name, c.rule) for c in off] == [("sdists", None)]  # `{}` is how every rule is turned off


def test_a_wrong_choice_is_named_in_jsons_words_and_quoted_back_cut():
    """`got True`, `got None` and a 100,000-character mode quoted back whole had been the answer."""
    state = Policy(workspace="acme", by="a").state
    commands = [
        {"action": "switch-mode", "language": "python", "mode": True},
        {"action": "switch-mode", "language": "node", "mode": "x" * 100_000},
        {"action": "set-known-malware", "known_malware": None},
        {"action": "switch-mode", "language": {"a": 1}, "mode": "allowlist"},
    ]
    with pytest.raises(InvalidInputError) as refused:
        plan_incremental(state, commands)
    assert {e.field: e.message for e in refused.value.errors} == {
        "changes[0].mode": "must be one of allowlist, denylist; got true",
        "changes[1].mode": f"must be one of allowlist, denylist; got '{'x' * 100}'…",
        "changes[2].known_malware": "must be one of enforce, monitor; got null",
        "changes[3].language": "must be one of python, node, egress; got an object",
    }


def rules(mode="denylist", allow=(), deny=()):
    return LanguageRules("python", mode, frozenset(allow), frozenset(deny))


def verdict(rules_, language, text):
    v = judge(replace(rules_, language=language), parse(language, text), "acme")
    return v.allowed, v.reason


def test_a_denied_package_stays_denied_after_a_mode_switch():
    assert verdict(rules("denylist", deny=["numpy"]), "python", "numpy") == (False, "matches-the-deny-list")
    assert verdict(rules("allowlist", allow=["numpy"], deny=["numpy"]), "python", "NumPy==1") == (
        False,
        "matches-the-deny-list",
    )


def test_allowlist_mode_allows_only_listed_names():
    allowlist = rules("allowlist", allow=["pandas"])
    assert verdict(allowlist, "python", "Pandas>=2") == (True, "matches-the-allow-list")
    assert verdict(allowlist, "python", "numpy") == (False, "not-on-the-allow-list")


def test_denylist_mode_allows_everything_not_listed():
    assert verdict(rules(), "python", "requests") == (True, "not-on-the-deny-list")


def test_direct_references_never_ride_on_an_allowed_registry_name():
    allowlist = rules("allowlist", allow=["requests"])
    assert verdict(allowlist, "python", "requests @ https://evil.example/requests.tgz") == (False, "direct-reference")
    assert verdict(rules(), "python", "requests @ https://x.example/r.tgz") == (True, "direct-reference")
    named_url = "requests @ https://x.example/r.tgz"
    assert verdict(rules(deny=["requests"]), "python", named_url) == (False, "direct-reference")
    assert verdict(rules(), "node", "github:user/repo") == (False, "direct-reference")


def test_node_deny_lists_match_any_case_but_allow_lists_match_exactly():
    assert verdict(rules(deny=["left-pad"]), "node", "Left-Pad") == (False, "matches-the-deny-list")
    assert verdict(rules("allowlist", allow=["express"]), "node", "Express") == (False, "not-on-the-allow-list")
    assert verdict(rules("allowlist", allow=["express"]), "node", "express@4") == (True, "matches-the-allow-list")


def test_a_node_deny_pattern_decision_names_the_pattern_as_listed_whatever_the_asked_case():
    denying = replace(rules(deny=["@evil/*"]), language="node")
    for asked in ("@EVIL/x", "@Evil/Pkg", "@evil/pkg"):
        v = judge(denying, parse("node", asked), "acme")
        assert (v.allowed, v.reason, v.params["pattern"]) == (False, "matches-the-deny-list", "@evil/*")


def test_an_npm_alias_is_judged_on_its_target():
    assert verdict(rules(deny=["evil"]), "node", "lodash@npm:evil@1") == (False, "matches-the-deny-list")


def test_unjudgeable_specs_are_refused_with_a_message():
    spec = parse("python", "--index-url https://evil/simple")
    v = judge(rules(), spec, "acme")
    assert (v.allowed, v.reason) == (False, "invalid-spec")
    assert "cannot be judged" in render_message(DecisionRecord.for_spec(spec, v, 1, None), "acme")


def test_a_denial_tells_the_asker_what_to_ask_for():
    spec = parse("python", "pandas")
    message = render_message(DecisionRecord.for_spec(spec, judge(rules("allowlist"), spec, "acme"), 1, None), "acme")
    assert message.startswith("pandas is not on the Python allow list of workspace acme")
    assert "Settings › Governance › Run-code packages" in message


def test_a_kind_the_rule_does_not_know_is_refused_not_judged_by_name():
    from domain.specs import Spec

    v = judge(rules(), Spec("pandas", "python", "some-future-kind", "pandas"), "acme")
    assert (v.allowed, v.reason) == (False, "invalid-spec")
