"""Rules beyond names, from the domain alone: reading what an admin sends, and judging versions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from application.messages import message_of
from domain.errors import InvalidInputError
from domain.limits import MAX_VERSION_DENIES
from domain.policy import LanguageRules, rules_from_state
from domain.rules import (
    ENFORCE,
    INSTALL_SCRIPTS,
    SDIST_REFUSED,
    TOO_NEW,
    VERSION_DENIED,
    VersionFacts,
    VersionRules,
    judge_version,
    read_rules,
    ripens_at,
)

NOW = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
NODE = {
    "min_release_age": {"age": "P3D", "exempt": ["@acme/*"], "action": "enforce"},
    "install_scripts": {"allow": ["esbuild"], "action": "enforce"},
    "versions_deny": {"entries": ["axios@1.14.1", "left-pad@<1.3"], "action": "enforce"},
}
PYTHON = {
    "min_release_age": {"age": "P3D", "exempt": [], "action": "monitor"},
    "sdists": {"allow": ["pyyaml"], "action": "enforce"},
    "versions_deny": {"entries": ["requests<2.20", "urllib3==1.26.5"], "action": "enforce"},
}


def refused(language: str, body: object) -> dict[str, str]:
    with pytest.raises(InvalidInputError) as caught:
        read_rules(language, body, f"{language}.rules")
    return {e.field: e.message for e in caught.value.errors}


def facts(version: str, days_old: float | None, **more: object) -> VersionFacts:
    uploaded = None if days_old is None else NOW - timedelta(days=days_old)
    return VersionFacts(version, uploaded, **more)  # type: ignore[arg-type]


def reasons(rules: VersionRules, language: str, name: str, version: VersionFacts) -> list[tuple[str, bool]]:
    return [(f.reason, f.monitor) for f in judge_version(rules, language, name, version, NOW)]


def test_no_rules_are_all_off_and_falsy():
    rules = read_rules("python", {}, "python.rules")
    assert not rules and rules == VersionRules() and rules.to_json() == {}
    assert judge_version(rules, "python", "anything", facts("1.0", None, sdist=True), NOW) == []


@pytest.mark.parametrize("language, body", [("node", NODE), ("python", PYTHON)])
def test_the_contract_examples_read_back_as_written_and_survive_storage(language, body):
    rules = read_rules(language, body, f"{language}.rules")
    assert rules and rules.to_json() == body
    assert VersionRules.from_json(language, rules.to_json()) == rules


def test_rules_are_stored_canonical_sorted_and_deduplicated():
    rules = read_rules(
        "python",
        {
            "min_release_age": {"age": "p1w", "exempt": "Zope_Interface, attrs\nDjango_*"},
            "versions_deny": {"entries": "Requests >=2.0, <2.20\nurllib3==1.26.5\nurllib3 == 1.26.5"},
            "sdists": {"allow": []},
        },
        "python.rules",
    )
    assert rules.to_json() == {
        "min_release_age": {"age": "P7D", "exempt": ["attrs", "django-*", "zope-interface"], "action": ENFORCE},
        "versions_deny": {"entries": ["requests<2.20,>=2.0", "urllib3==1.26.5"], "action": ENFORCE},
        "sdists": {"allow": [], "action": ENFORCE},
    }


def test_every_bad_field_is_named_with_its_rule():
    errors = refused(
        "python",
        {
            "min_release_age": {"age": "P1M", "exempt": ["not a name!"], "action": "warn"},
            "install_scripts": {"allow": []},
            "versions_deny": {"entries": ["requests", "requests[socks]<2", "==1.0"], "limit": 3},
        },
    )
    assert set(errors) == {
        "python.rules.min_release_age.age",
        "python.rules.min_release_age.exempt[0]",
        "python.rules.min_release_age.action",
        "python.rules.install_scripts",
        "python.rules.versions_deny.entries[0]",
        "python.rules.versions_deny.entries[1]",
        "python.rules.versions_deny.entries[2]",
        "python.rules.versions_deny.limit",
    }
    assert "months" in errors["python.rules.min_release_age.age"]
    assert "enforce, monitor" in errors["python.rules.min_release_age.action"]
    assert "not a Python rule" in errors["python.rules.install_scripts"]
    assert "deny list" in errors["python.rules.versions_deny.entries[0]"]


def test_node_deny_entries_need_a_name_and_a_range_that_is_not_everything():
    errors = refused("node", {"sdists": {}, "versions_deny": {"entries": ["left-pad@*", "left-pad", "-x@1", "a@^^"]}})
    assert set(errors) == {"node.rules.sdists", *(f"node.rules.versions_deny.entries[{i}]" for i in range(4))}
    assert "every version" in errors["node.rules.versions_deny.entries[0]"]
    assert "'left-pad' names no versions" in errors["node.rules.versions_deny.entries[1]"]  # as for python
    assert read_rules("node", {"versions_deny": {"entries": "@scope/pkg@>=1 <2"}}, "r").to_json() == {
        "versions_deny": {"entries": ["@scope/pkg@>=1 <2"], "action": ENFORCE}
    }


# What node-semver 7.8.5's validRange(range) (strict, its default) says of each, checked with node:
# accepted ranges desugar to the comparators shown there; refused ones give null. npm's loose
# reading keeps the words it can read of the refused ones (`1.0.0 foo` is `1.0.0`), so saving them
# would deny something other than what was written, or nothing (`1.0.0 - 2.0.0 - 3.0.0`).
NODE_SEMVER_VALID = ["<1.3", ">=1 <2", "=1.2.3", "v1.2.3", "~> 1.2", "^ 1.2", "> 1.2.3", "1.2.3 - 2",
                     "1.2.3+build", "1.0.0 - 2.0.0", ">=1.0.0 <2.0.0 || 3.x", "1.2.3-rc.1"]  # fmt: skip
NODE_SEMVER_INVALID = ["1.0.0 - 2.0.0 - 3.0.0", "1.0.0 -", "- 1.0.0", "1.0.0 foo", ">=1.0.0 <2.0.0 bogus",
                       ">1 <", "1.0.0 <", "<=1.0.0 >", ">=1.0.0 <=", ">=1.0.0 || <", "^", "~", "<", ">=a",
                       "1.2.3.4", "!1.0.0", "vv1.2.3", "01.2.3", "1.2.3beta", "1.2.3-01"]  # fmt: skip


@pytest.mark.parametrize("versions", NODE_SEMVER_VALID)
def test_a_node_deny_range_node_semver_accepts_is_saved(versions):
    saved = read_rules("node", {"versions_deny": {"entries": [f"nv@{versions}"]}}, "node.rules")
    assert saved.to_json()["versions_deny"]["entries"] == [f"nv@{versions}"]


@pytest.mark.parametrize("versions", NODE_SEMVER_INVALID)
def test_a_node_deny_range_node_semver_refuses_is_refused_naming_the_entry_and_the_rule(versions):
    errors = refused("node", {"versions_deny": {"entries": ["ok@1.0.0", f"nv@{versions}"]}})
    assert errors == {
        "node.rules.versions_deny.entries[1]": f"{versions!r} is not a node-semver range; "
        "a version deny entry is a package name, '@' and a node-semver range, such as 'left-pad@<1.3'"
    }


def test_a_rules_exempt_or_allow_name_with_a_version_is_refused_not_widened_to_every_version():
    errors = refused("python", {"min_release_age": {"age": "P1D", "exempt": ["ok", "app==2.0", "b[x]", "Django_*"]}})
    assert set(errors) == {"python.rules.min_release_age.exempt[1]", "python.rules.min_release_age.exempt[2]"}
    assert errors["python.rules.min_release_age.exempt[1]"].startswith("'app==2.0' is more than a name; ")
    assert "names or patterns only" in errors["python.rules.min_release_age.exempt[1]"]
    assert set(refused("python", {"sdists": {"allow": "pyyaml, lxml>=5"}})) == {"python.rules.sdists.allow[1]"}
    node = {"min_release_age": {"age": "P1D", "exempt": ["napp@2", "@acme/*", "@acme/x@^1", "Lodash", "x@latest"]}}
    assert set(refused("node", node)) == {f"node.rules.min_release_age.exempt[{i}]" for i in (0, 2, 4)}
    assert set(refused("node", {"install_scripts": {"allow": ["esbuild@0.25"]}})) == {
        "node.rules.install_scripts.allow[0]"
    }
    names = {"min_release_age": {"age": "P1D", "exempt": ["App_X", "django-*"]}}
    assert read_rules("python", names, "r").to_json()["min_release_age"]["exempt"] == ["app-x", "django-*"]
    names = {"min_release_age": {"age": "P1D", "exempt": ["@acme/x", "Lodash"]}}
    assert read_rules("node", names, "r").to_json()["min_release_age"]["exempt"] == ["@acme/x", "Lodash"]


def test_shapes_and_sizes_are_bounded():
    assert set(refused("node", [])) == {"node.rules"}
    assert set(refused("node", {"min_release_age": "P3D"})) == {"node.rules.min_release_age"}
    assert set(refused("node", {"min_release_age": {}})) == {"node.rules.min_release_age.age"}
    assert set(refused("node", {"versions_deny": {"entries": 5}})) == {"node.rules.versions_deny.entries"}
    many = [f"pkg{i}@1.0.{i}" for i in range(MAX_VERSION_DENIES + 1)]
    assert "node.rules.versions_deny.entries" in refused("node", {"versions_deny": {"entries": many}})
    assert "node.rules.versions_deny.entries[0]" in refused("node", {"versions_deny": {"entries": ["a@" + "1" * 300]}})


@pytest.mark.parametrize(("body", "said"), [(None, "null"), (False, "false"), (0, "0"), ("", "''"), ([], "an array")])
def test_rules_that_are_no_object_are_refused_not_read_as_all_off(body, said):
    """`set-rules` with `"rules": false` (null, 0, "", []) had turned every rule off: `{}` does."""
    assert refused("python", body) == {
        "python.rules": f"must be an object of rules (min_release_age, versions_deny, sdists), not {said}"
    }


@pytest.mark.parametrize(
    ("names", "said"),
    [(True, "true"), (False, "false"), (0, "0"), (1.5, "1.5"), (float("nan"), "a number"),
     (float("inf"), "a number"), ({}, "an object"), ({"a": 1}, "an object")],
)  # fmt: skip
def test_an_exempt_or_allow_that_is_no_list_is_refused_not_turned_into_a_name(names, said):
    """`"exempt": true` had been the name `true`, `"allow": 1.5` the name `1-5` (NaN `nan`), and
    false, 0 or {} no names at all."""
    body = {"min_release_age": {"age": "P3D", "exempt": names}, "sdists": {"allow": names}}
    rule = f"must be one string of entries or a list of them, not {said}"
    assert refused("python", body) == {"python.rules.min_release_age.exempt": rule, "python.rules.sdists.allow": rule}
    node = {"install_scripts": {"allow": names}}
    assert refused("node", node) == {"node.rules.install_scripts.allow": rule}


def test_a_null_exempt_or_allow_is_none_and_a_missing_action_enforce_but_a_null_action_is_refused():
    body = {"min_release_age": {"age": "P3D", "exempt": None}, "sdists": {"allow": None}}
    assert read_rules("python", body, "r").to_json() == {
        "min_release_age": {"age": "P3D", "exempt": [], "action": ENFORCE},
        "sdists": {"allow": [], "action": ENFORCE},
    }
    assert refused("python", {"sdists": {"action": None}, "min_release_age": {"age": "P1D", "action": True}}) == {
        "python.rules.sdists.action": "must be one of enforce, monitor; got null",
        "python.rules.min_release_age.action": "must be one of enforce, monitor; got true",
    }


def test_an_empty_version_deny_is_off():
    assert not read_rules("node", {"versions_deny": {"entries": []}}, "node.rules")


def test_a_release_younger_than_the_minimum_age_is_too_new_and_a_missing_time_fails_closed():
    rules = read_rules("node", NODE, "node.rules")
    assert reasons(rules, "node", "react", facts("19.0.0", 1, install_scripts=False)) == [(TOO_NEW, False)]
    assert reasons(rules, "node", "react", facts("19.0.0", 3, install_scripts=False)) == []
    assert reasons(rules, "node", "react", facts("19.0.0", None, install_scripts=False)) == [(TOO_NEW, False)]
    assert reasons(rules, "node", "react", facts("19.0.0", -1, install_scripts=False)) == [(TOO_NEW, False)]
    assert reasons(rules, "node", "@acme/api", facts("1.0.0", 0, install_scripts=False)) == []
    [finding] = judge_version(rules, "node", "react", facts("19.0.0", 1.5, install_scripts=False), NOW)
    message = message_of(finding, "node")
    assert message.startswith("react 19.0.0 was uploaded 1 day 12 hours ago") and "P3D" in message
    # the instants a decision carries are written as every instant the service writes: UTC, `Z`
    assert (finding.params["uploaded_at"], finding.params["judged_at"]) == (
        "2026-03-09T00:00:00.000000Z",
        "2026-03-10T12:00:00.000000Z",
    )


def test_a_monitored_rule_finds_but_does_not_hide():
    rules = read_rules("python", PYTHON, "python.rules")
    assert reasons(rules, "python", "Django", facts("5.0", 1)) == [(TOO_NEW, True)]


def test_version_denies_match_ranges_prereleases_and_fail_closed_on_unordered_versions():
    node, python = read_rules("node", NODE, "node.rules"), read_rules("python", PYTHON, "python.rules")
    old = {"install_scripts": False}
    assert reasons(node, "node", "axios", facts("1.14.1", 30, **old)) == [(VERSION_DENIED, False)]
    assert reasons(node, "node", "axios", facts("1.14.2", 30, **old)) == []
    assert reasons(node, "node", "Left-Pad", facts("1.2.9-beta.1", 30, **old)) == [(VERSION_DENIED, False)]
    assert reasons(node, "node", "left-pad", facts("1.3.0", 30, **old)) == []
    assert reasons(node, "node", "left-pad", facts("not-a-version", 30, **old)) == [(VERSION_DENIED, False)]
    assert reasons(python, "python", "Requests", facts("2.19.0rc1", 30)) == [(VERSION_DENIED, False)]
    assert reasons(python, "python", "requests", facts("2.20.0", 30)) == []
    assert reasons(python, "python", "urllib3", facts("1.26.5", 30)) == [(VERSION_DENIED, False)]
    assert reasons(python, "python", "requests", facts("1.0-legacy!", 30)) == [(VERSION_DENIED, False)]
    [finding] = judge_version(python, "python", "urllib3", facts("1.26.5", 30), NOW)
    assert message_of(finding, "python") == "urllib3 1.26.5 matches the version deny entry 'urllib3==1.26.5'"


@pytest.mark.parametrize(
    ("versions", "denied", "shown"),
    [
        # `<V` takes V's own pre- and dev releases, as they order (PEP 440's `<` would not)
        ("<2", ["2.0.dev3", "2.0rc1", "2.0a1.dev1", "1.9", "1.9+local", "0!1.0"], ["2.0", "2.0+local", "2.0.post1"]),
        ("<1.1", ["1.1rc1", "1.1.0b2", "1.0.post1"], ["1.1", "1.1.0", "1!1.0"]),
        (">=1,<2", ["2.0a1", "1.0"], ["0.9", "1.0rc1", "2.0"]),
        ("<2.0rc1", ["2.0b1", "2.0rc1.dev0"], ["2.0rc1", "2.0rc2"]),
        # every other specifier as PEP 440 says: epochs, local versions, prefixes, arbitrary equality
        ("<1!2", ["1.5", "1!1.9"], ["1!2.0", "2!0.1"]),
        # `>V` likewise takes V's post-releases (PEP 440's `>` would not), not a local build of V
        (">1.0", ["1.1", "1.1a1", "1.0.post1", "1.0.post1+local"], ["1.0+local", "1.0"]),
        ("==1.*", ["1.0", "1.5rc1", "1.9+local"], ["2.0", "0.9"]),
        ("===1.0", ["1.0"], ["1.0.0", "1.0+local"]),
        ("<=2", ["2.0rc1", "2.0", "2.0+local"], ["2.0.post1"]),
    ],
)
def test_a_python_version_deny_orders_its_exclusive_bounds_as_versions_order(versions, denied, shown):
    rules = read_rules("python", {"versions_deny": {"entries": [f"vers{versions}"]}}, "python.rules")
    judged = {v: reasons(rules, "python", "vers", facts(v, 30)) for v in denied + shown}
    assert judged == {v: [(VERSION_DENIED, False)] if v in denied else [] for v in denied + shown}


def test_node_and_python_deny_ranges_take_the_pre_releases_of_their_bound_alike():
    node = read_rules("node", {"versions_deny": {"entries": ["nv@<1.1.0"]}}, "node.rules")
    python = read_rules("python", {"versions_deny": {"entries": ["vers<1.1"]}}, "python.rules")
    assert reasons(node, "node", "nv", facts("1.1.0-beta.1", 30, install_scripts=False)) == [(VERSION_DENIED, False)]
    assert reasons(python, "python", "vers", facts("1.1b1", 30)) == [(VERSION_DENIED, False)]


def test_install_scripts_are_refused_unless_allowed_and_unknown_scripts_fail_closed():
    rules = read_rules("node", NODE, "node.rules")
    assert reasons(rules, "node", "sharp", facts("1.0.0", 9, install_scripts=True)) == [(INSTALL_SCRIPTS, False)]
    assert reasons(rules, "node", "sharp", facts("1.0.0", 9, install_scripts=None)) == [(INSTALL_SCRIPTS, False)]
    assert reasons(rules, "node", "sharp", facts("1.0.0", 9, install_scripts=False)) == []
    assert reasons(rules, "node", "esbuild", facts("1.0.0", 9, install_scripts=True)) == []


def test_sdists_are_refused_unless_allowed_and_wheels_pass():
    rules = read_rules("python", {"sdists": {"allow": ["pyyaml", "corp-*"]}}, "python.rules")
    assert reasons(rules, "python", "numpy", facts("2.0", 9, sdist=True)) == [(SDIST_REFUSED, False)]
    assert reasons(rules, "python", "numpy", facts("2.0", 9)) == []
    assert reasons(rules, "python", "PyYAML", facts("6.0", 9, sdist=True)) == []
    assert reasons(rules, "python", "corp_tools", facts("6.0", 9, sdist=True)) == []


def test_every_rule_that_catches_a_version_gives_its_own_finding():
    rules = read_rules("node", {**NODE, "min_release_age": {"age": "PT12H", "action": "monitor"}}, "node.rules")
    found = reasons(rules, "node", "axios", facts("1.14.1", 0.1, install_scripts=True))
    assert found == [(VERSION_DENIED, False), (TOO_NEW, True), (INSTALL_SCRIPTS, False)]


def test_the_policy_carries_version_rules_off_by_default_and_from_its_state():
    assert not LanguageRules("python").version_rules
    assert LanguageRules("python").known_malware == ENFORCE
    state = {
        "python": {"mode": "denylist", "allow": [], "deny": []},  # a state saved before rules existed
        "node": {"mode": "denylist", "allow": [], "deny": [], "rules": read_rules("node", NODE, "r").to_json()},
    }
    rules = rules_from_state(state)
    assert not rules["python"].version_rules
    assert rules["node"].version_rules.to_json() == NODE


def test_rule_changes_replay_by_assignment_and_policies_saved_before_rules_load_with_them_off():
    from domain.edits import plan_desired_state
    from domain.policy import Policy

    old = Policy(workspace="acme", by="alice")  # as a snapshot from before rules: no rules, no setting
    snapshot = Policy.Snapshot.take(old)
    restored = snapshot.mutate(None)
    assert not restored.rules()["node"].version_rules and restored.known_malware() == ENFORCE
    restored.record(
        plan_desired_state(restored.state, {"node": {"rules": NODE}, "known_malware": "monitor"}), "alice", "rules"
    )
    assert restored.rules()["node"].version_rules.to_json() == NODE
    assert restored.rules()["python"].known_malware == "monitor"
    events = restored.collect_events()
    assert [type(e).__name__ for e in events] == ["RuleChanged"] * 3 + ["KnownMalwareSet"]
    again = snapshot.mutate(None)
    for event in events:
        again = event.mutate(again)
    assert again.state == restored.state and again.known_malware() == "monitor"
    # an event holds the rule as saved: replay never reads it again
    assert events[0].value == NODE["min_release_age"]


def test_a_version_ripens_once_the_instant_after_which_min_release_age_no_longer_catches_it():
    rules = read_rules("node", NODE, "node.rules")
    young = facts("19.0.0", 1, install_scripts=False)
    ripe = ripens_at(rules, "node", "react", young)
    assert ripe == NOW + timedelta(days=2)
    before = judge_version(rules, "node", "react", young, ripe - timedelta(microseconds=1))
    assert [f.reason for f in before] == [TOO_NEW]
    assert judge_version(rules, "node", "react", young, ripe) == []
    # the instant changes nothing: an exempt name, no upload time, no such rule
    assert ripens_at(rules, "node", "@acme/api", young) is None
    assert ripens_at(rules, "node", "react", facts("19.0.0", None)) is None
    assert ripens_at(read_rules("node", {"install_scripts": {}}, "node.rules"), "node", "react", young) is None
    far = VersionFacts("1.0.0", datetime.max.replace(tzinfo=UTC))
    assert ripens_at(rules, "node", "react", far) is None  # never ripens: too new at every instant
