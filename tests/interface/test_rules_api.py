"""Rules beyond names in the versioned policy, through the real API on SQLite and PostgreSQL:
saved as events, shown now and at any instant, listed in the history, refused field by field."""

from __future__ import annotations

from datetime import datetime, timedelta
from urllib.parse import quote

P = "/api/v1/workspaces/acme"
NODE_RULES = {
    "min_release_age": {"age": "P3D", "exempt": ["@acme/*"], "action": "enforce"},
    "install_scripts": {"allow": ["esbuild"], "action": "enforce"},
    "versions_deny": {"entries": ["axios@1.14.1", "left-pad@<1.3"], "action": "enforce"},
}
PYTHON_RULES = {
    "min_release_age": {"age": "P3D", "exempt": [], "action": "monitor"},
    "sdists": {"allow": ["pyyaml"], "action": "enforce"},
    "versions_deny": {"entries": ["requests<2.20", "urllib3==1.26.5"], "action": "enforce"},
}


def save(live, body: dict, method: str = "PUT", path: str = "/policy"):
    reply = live.call(method, P + path, live.tokens["admin"], body)
    assert reply.status == 200, reply.body
    return reply.json


def before(instant: str) -> str:
    moment = datetime.fromisoformat(instant.replace("Z", "+00:00")) - timedelta(microseconds=1)
    return quote(moment.isoformat())


def test_rules_are_saved_as_events_shown_now_and_as_they_stood_and_listed_in_the_history(live, app):
    saved = save(live, {"note": "cool down", "node": {"rules": NODE_RULES}, "python": {"rules": PYTHON_RULES}})
    assert saved["node"]["rules"] == NODE_RULES and saved["python"]["rules"] == PYTHON_RULES
    assert saved["version"] == 6  # one change per rule
    auditor = live.tokens["auditor"]
    assert live.call("GET", P + "/policy", auditor).json["node"]["rules"] == NODE_RULES
    then = live.call("GET", P + f"/policy?at={before(saved['changed_at'])}", auditor).json
    assert "rules" not in then["node"] and then["version"] == 0  # absent: off
    history = live.call("GET", P + "/history", auditor).json["changes"]
    assert [(c["type"], c["language"], c["rule"], c["action"], c["by"]) for c in history] == [
        ("rule-changed", "python", "min_release_age", "monitor", "admin-token"),
        ("rule-changed", "python", "versions_deny", "enforce", "admin-token"),
        ("rule-changed", "python", "sdists", "enforce", "admin-token"),
        ("rule-changed", "node", "min_release_age", "enforce", "admin-token"),
        ("rule-changed", "node", "versions_deny", "enforce", "admin-token"),
        ("rule-changed", "node", "install_scripts", "enforce", "admin-token"),
    ]
    assert all(c["note"] == "cool down" and c["at"] == saved["changed_at"] for c in history)
    # what the index reads: the rules of the head version, in every worker's cache
    _, rules = app.policies.current("acme")
    assert rules["node"].version_rules.to_json() == NODE_RULES and not rules["node"].version_rules.sdists

    # the same rules again change nothing; a rule left out of a Save is turned off
    assert save(live, {"node": {"rules": NODE_RULES}})["version"] == 6
    off = save(
        live, {"note": "scripts are fine", "node": {"rules": {"min_release_age": NODE_RULES["min_release_age"]}}}
    )
    assert off["node"]["rules"] == {"min_release_age": NODE_RULES["min_release_age"]} and off["version"] == 8
    last = live.call("GET", P + "/history", auditor).json["changes"][-1]
    assert (last["rule"], last["action"], last["note"]) == ("install_scripts", None, "scripts are fine")
    gone = save(live, {"node": {"rules": {}}})
    assert "rules" not in gone["node"]
    back = live.call("GET", P + f"/policy?at={quote(off['changed_at'])}", auditor).json
    assert back["node"]["rules"] == {"min_release_age": NODE_RULES["min_release_age"]}
    assert live.call("GET", P + "/policy?version=6", auditor).json["node"]["rules"] == NODE_RULES


def test_incremental_commands_set_a_languages_rules_and_the_known_malware_action(live, app):
    assert live.call("GET", P + "/policy", live.tokens["auditor"]).json["known_malware"] == "enforce"
    changes = [
        {"action": "set-rules", "language": "python", "rules": {"sdists": {"allow": "PyYAML, corp-*"}}},
        {"action": "set-known-malware", "known_malware": "monitor"},
        {"action": "add", "language": "python", "list": "deny", "entries": ["evil"]},
    ]
    saved = save(live, {"note": "wheels only", "changes": changes}, "POST", "/policy/changes")
    assert saved["python"]["rules"] == {"sdists": {"allow": ["corp-*", "pyyaml"], "action": "enforce"}}
    assert saved["known_malware"] == "monitor" and saved["version"] == 3
    history = live.call("GET", P + "/history", live.tokens["auditor"]).json["changes"]
    assert history[1] | {"at": None, "by_token": None} == {
        "version": 2,
        "at": None,
        "by": "admin-token",
        "by_token": None,
        "note": "wheels only",
        "type": "mode-switched",
        "language": "known-malware",
        "mode": "monitor",
    }
    _, rules = app.policies.current("acme")
    assert rules["python"].known_malware == rules["node"].known_malware == "monitor"
    again = save(live, {"changes": changes[:2]}, "POST", "/policy/changes")
    assert again["version"] == 3  # nothing new: nothing recorded
    cleared = save(
        live, {"changes": [{"action": "set-rules", "language": "python", "rules": {}}]}, "POST", "/policy/changes"
    )
    assert "rules" not in cleared["python"] and cleared["version"] == 4


def test_the_point_in_time_answer_shows_the_rules_that_could_hide_a_version_of_the_package(live):
    auditor = live.tokens["auditor"]
    plain = live.call("GET", P + "/packages/node/axios", auditor).json
    assert plain["rules"] == {}
    saved = save(live, {"node": {"rules": NODE_RULES}})
    axios = live.call("GET", P + "/packages/node/axios", auditor).json
    assert axios["rules"] == {
        "min_release_age": {"age": "P3D", "action": "enforce"},
        "versions_deny": {"entries": ["axios@1.14.1"], "action": "enforce"},
        "install_scripts": {"action": "enforce"},
    }
    assert live.call("GET", P + "/packages/node/@acme%2Fapi", auditor).json["rules"] == {
        "install_scripts": {"action": "enforce"}
    }
    assert live.call("GET", P + "/packages/node/esbuild", auditor).json["rules"] == {
        "min_release_age": {"age": "P3D", "action": "enforce"}
    }
    earlier = live.call("GET", P + f"/packages/node/axios?at={before(saved['changed_at'])}", auditor).json
    assert earlier["rules"] == {}


def test_bad_rules_are_refused_naming_each_field_and_nothing_is_saved(live):
    body = {
        "python": {
            "rules": {
                "min_release_age": {"age": "P1M"},
                "install_scripts": {"allow": []},
                "versions_deny": {"entries": ["requests", "urllib3==1.26.5"]},
            }
        },
        "node": {"rules": {"versions_deny": {"entries": ["left-pad@*"]}}},
    }
    reply = live.call("PUT", P + "/policy", live.tokens["admin"], body)
    assert reply.status == 422 and reply.media == "application/problem+json", reply.body
    assert {e["field"] for e in reply.json["errors"]} == {
        "python.rules.min_release_age.age",
        "python.rules.install_scripts",
        "python.rules.versions_deny.entries[0]",
        "node.rules.versions_deny.entries[0]",
    }
    wrong_action = {"node": {"rules": {"install_scripts": {"action": "warn"}}}}
    reply = live.call("PUT", P + "/policy", live.tokens["admin"], wrong_action)
    assert reply.status == 422 and "node.rules.install_scripts.action" in [e["field"] for e in reply.json["errors"]]
    command = {"changes": [{"action": "set-rules", "language": "node", "rules": {"sdists": {}}}]}
    reply = live.call("POST", P + "/policy/changes", live.tokens["admin"], command)
    assert reply.status == 422 and [e["field"] for e in reply.json["errors"]] == ["changes[0].rules.sdists"]
    assert live.call("GET", P + "/policy", live.tokens["auditor"]).json["version"] == 0
    auditor_save = live.call("PUT", P + "/policy", live.tokens["auditor"], {"node": {"rules": NODE_RULES}})
    assert auditor_save.status == 403


def test_a_value_of_the_wrong_type_is_named_with_every_other_bad_field_not_alone(live):
    """`"age": 3` had been refused by the schema before the rules were read: its error alone."""
    rules = {"min_release_age": {"age": "P1M"}, "versions_deny": {"entries": ["b"]}}
    named = {}
    for age in ("P0D", 3):
        body = {
            "python": {"allow": ["https://x/y"], "rules": rules},
            "node": {"rules": {"min_release_age": {"age": age}}},
        }
        reply = live.call("PUT", P + "/policy", live.tokens["admin"], body)
        assert reply.status == 422, reply.body
        named[age] = [e["field"] for e in reply.json["errors"]]
    assert (
        named[3]
        == named["P0D"]
        == [
            "python.allow[0]",
            "python.rules.min_release_age.age",
            "python.rules.versions_deny.entries[0]",
            "node.rules.min_release_age.age",
        ]
    )
    # one error a bad field, named as the rules name it (a union had named both of its shapes)
    wrong = {
        "python": {"mode": 1, "deny": 5, "rules": {"min_release_age": {"age": "P3D", "exempt": [1], "action": 2}}},
        "known_malware": True,
    }
    reply = live.call("PUT", P + "/policy", live.tokens["admin"], wrong)
    assert [e["field"] for e in reply.json["errors"]] == [
        "python.mode",
        "python.deny",
        "python.rules.min_release_age.exempt[0]",
        "python.rules.min_release_age.action",
        "known_malware",
    ], reply.body
    changes = [
        {"action": "switch-mode", "language": "python", "mode": 5},
        {"action": "set-rules", "language": "node", "rules": {"min_release_age": {"age": 3}}},
        {"action": "set-known-malware", "known_malware": "warn"},
    ]
    reply = live.call("POST", P + "/policy/changes", live.tokens["admin"], {"changes": changes})
    assert [e["field"] for e in reply.json["errors"]] == [
        "changes[0].mode",
        "changes[1].rules.min_release_age.age",
        "changes[2].known_malware",
    ], reply.body
    draft = {"draft": {"python": {"rules": {"min_release_age": {"age": 3}}, "allow": [2]}}, "days": 30}
    reply = live.call("POST", P + "/impact", live.tokens["admin"], draft)
    assert [e["field"] for e in reply.json["errors"]] == [
        "draft.python.allow[0]",
        "draft.python.rules.min_release_age.age",
    ], reply.body
    assert live.call("GET", P + "/policy", live.tokens["auditor"]).json["version"] == 0


def test_a_node_range_node_semver_refuses_is_refused_not_saved(live):
    admin = live.tokens["admin"]
    for versions in ("1.0.0 - 2.0.0 - 3.0.0", "1.0.0 foo", ">1 <", ">=1.0.0 || <"):
        body = {"node": {"rules": {"versions_deny": {"entries": [f"nv@{versions}"]}}}}
        reply = live.call("PUT", P + "/policy", admin, body)
        assert reply.status == 422 and reply.media == "application/problem+json", reply.body
        [error] = reply.json["errors"]
        assert error["field"] == "node.rules.versions_deny.entries[0]" and "not a node-semver range" in error["message"]
    assert live.call("GET", P + "/policy", live.tokens["auditor"]).json["version"] == 0
    saved = save(live, {"node": {"rules": {"versions_deny": {"entries": ["nv@1.0.0 - 2.0.0"]}}}})
    assert saved["node"]["rules"]["versions_deny"]["entries"] == ["nv@1.0.0 - 2.0.0"]


def test_a_rule_name_with_a_version_is_refused_not_widened_to_every_version(live):
    body = {
        "python": {"rules": {"min_release_age": {"age": "P3D", "exempt": ["app==2.0"]}}},
        "node": {"rules": {"min_release_age": {"age": "P3D", "exempt": ["napp@2"]}}},
    }
    reply = live.call("PUT", P + "/policy", live.tokens["admin"], body)
    assert reply.status == 422, reply.body
    assert {e["field"]: e["message"].split(";")[0] for e in reply.json["errors"]} == {
        "python.rules.min_release_age.exempt[0]": "'app==2.0' is more than a name",
        "node.rules.min_release_age.exempt[0]": "'napp@2' is more than a name",
    }
    assert live.call("GET", P + "/policy", live.tokens["auditor"]).json["version"] == 0
    saved = save(live, {"python": {"rules": {"min_release_age": {"age": "P3D", "exempt": ["App_X"]}}}})
    assert saved["python"]["rules"]["min_release_age"]["exempt"] == ["app-x"]


def test_set_rules_that_are_no_object_are_refused_and_turn_no_rule_off(live):
    """`"rules": false` (null, 0, "", []) had been 200 and turned every rule off, recorded as rule
    changes with action null; `{}` is how they are all turned off, as with a Save."""
    admin, auditor = live.tokens["admin"], live.tokens["auditor"]
    save(live, {"python": {"rules": PYTHON_RULES}})
    for rules, said in ((False, "false"), (None, "null"), (0, "0"), ("", "''"), ([], "an array")):
        command = {"changes": [{"action": "set-rules", "language": "python", "rules": rules}]}
        reply = live.call("POST", P + "/policy/changes", admin, command)
        assert reply.status == 422 and reply.media == "application/problem+json", reply.body
        assert reply.json["errors"] == [
            {
                "field": "changes[0].rules",
                "message": f"must be an object of rules (min_release_age, versions_deny, sdists), not {said}",
            }
        ]
    policy = live.call("GET", P + "/policy", auditor).json
    assert policy["version"] == 3 and policy["python"]["rules"] == PYTHON_RULES
    assert all(c["action"] for c in live.call("GET", P + "/history", auditor).json["changes"])
    reply = live.call("PUT", P + "/policy", admin, {"python": {"rules": False}})
    assert [e["field"] for e in reply.json["errors"]] == ["python.rules"], reply.body


def test_an_exempt_or_allow_that_is_no_list_is_refused_wherever_rules_are_read(live):
    """`"exempt": true` had been saved as the name `true`, `"allow": 1.5` as `1-5`, 5 as `5`, and
    false, 0 or {} as no names: in a Save, a change, a /test draft and an /impact draft alike."""
    admin = live.tokens["admin"]
    for names, said in ((True, "true"), (1.5, "1.5"), (5, "5"), (0, "0"), ({}, "an object")):
        rules = {"min_release_age": {"age": "P3D", "exempt": names}, "sdists": {"allow": names}}
        rule = f"must be one string of entries or a list of them, not {said}"
        asked = (
            ("PUT", "/policy", {"python": {"rules": rules}}, "python.rules"),
            ("POST", "/policy/changes", {"changes": [{"action": "set-rules", "language": "python", "rules": rules}]},
             "changes[0].rules"),
            ("POST", "/test", {"language": "python", "specs": ["six"], "draft": {"python": {"rules": rules}}},
             "draft.python.rules"),
            ("POST", "/impact", {"draft": {"python": {"rules": rules}}, "days": 30}, "draft.python.rules"),
        )  # fmt: skip
        for method, path, body, field in asked:
            reply = live.call(method, P + path, admin, body)
            assert reply.status == 422, (path, names, reply.body)
            assert reply.json["errors"] == [
                {"field": f"{field}.min_release_age.exempt", "message": rule},
                {"field": f"{field}.sdists.allow", "message": rule},
            ], (path, names)
    assert live.call("GET", P + "/policy", live.tokens["auditor"]).json["version"] == 0
    # a number past a float's range is a number too (it had been the name `inf`)
    raw = b'{"python": {"rules": {"sdists": {"allow": 1e400}}}}'
    reply = live.call("PUT", P + "/policy", admin, raw=raw)
    assert reply.json["errors"] == [
        {
            "field": "python.rules.sdists.allow",
            "message": "must be one string of entries or a list of them, not a number",
        }
    ], reply.body
    # null is none, as the schema says; an action that is not one is named in JSON's words
    saved = save(live, {"python": {"rules": {"sdists": {"allow": None}}}})
    assert saved["python"]["rules"] == {"sdists": {"allow": [], "action": "enforce"}}
    reply = live.call("PUT", P + "/policy", admin, {"python": {"rules": {"sdists": {"action": None}}}})
    assert reply.json["errors"] == [
        {"field": "python.rules.sdists.action", "message": "must be one of enforce, monitor; got null"}
    ], reply.body
