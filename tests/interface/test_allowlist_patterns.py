"""Pattern entries (`@scope/*`, `name-*`) through the HTTP API and the package index: judged in
evaluate and by the index, refused when they would match everything, shadowing shown in drafts."""

from __future__ import annotations

import base64

import pytest

from tests.support.index_live import index_live_env, sqlite_store  # noqa: F401 - fixtures live_env, database_url

P = "/api/v1/workspaces/acme"
JSON_ACCEPT = "application/vnd.pypi.simple.v1+json"


def decisions(live, language: str, specs: list[str]) -> list[tuple[str, bool, str]]:
    body = {"language": language, "specs": specs}
    answer = live.call("POST", P + "/evaluate", live.tokens["sandbox"], body).json
    return [(d["name"], d["allowed"], d["reason"]) for d in answer["decisions"]]


def test_a_prefix_pattern_allows_the_family_but_not_the_prefix_itself(live):
    saved = live.call(
        "PUT", P + "/policy", live.tokens["admin"], {"python": {"mode": "allowlist", "allow": ["Django_*", "flask"]}}
    )
    assert saved.status == 200 and saved.json["python"]["allow"] == ["django-*", "flask"]
    assert decisions(live, "python", ["django-rest-framework==3.15", "Django.Filter", "django", "djangox"]) == [
        ("django-rest-framework", True, "matches-the-allow-list"),
        ("django-filter", True, "matches-the-allow-list"),
        ("django", False, "not-on-the-allow-list"),
        ("djangox", False, "not-on-the-allow-list"),
    ]


def test_a_scope_pattern_on_a_node_deny_list_denies_every_spelling_of_the_scope(live):
    live.call("PUT", P + "/policy", live.tokens["admin"], {"node": {"mode": "denylist", "deny": ["@Evil/*"]}})
    assert decisions(live, "node", ["@evil/steal@1", "@EVIL/x", "evil", "@good/x"]) == [
        ("@evil/steal", False, "matches-the-deny-list"),
        ("@EVIL/x", False, "matches-the-deny-list"),
        ("evil", True, "not-on-the-deny-list"),
        ("@good/x", True, "not-on-the-deny-list"),
    ]


def test_a_node_name_holding_a_star_is_an_invalid_spec_and_no_exception_names_a_pattern(live):
    """npm still reads `@corp/*` as an old package's name, but no list could name it (a list reads
    `*` as a pattern): it is refused, not allowed by a deny list that cannot reach it."""
    assert decisions(live, "node", ["@corp/*", "left*@1", "x@npm:@corp/*", "@corp/x"]) == [
        (None, False, "invalid-spec"),
        (None, False, "invalid-spec"),
        (None, False, "invalid-spec"),
        ("@corp/x", True, "not-on-the-deny-list"),
    ]
    for language, name in (("node", "@corp/*"), ("python", "xx7-*")):
        for path, body in (("/exceptions", {"duration": "P1D"}), ("/requests", {"justification": "the scope"})):
            refused = live.call("POST", P + path, live.tokens["admin"], {"language": language, "name": name, **body})
            assert refused.status == 422, refused.body
            assert refused.json["errors"][0]["field"] == "name" and "is a pattern" in refused.json["detail"]


@pytest.mark.parametrize(
    "language,entry,rule",
    [
        ("python", "*", "a Python pattern is a package name followed by '-*'"),
        ("python", "-*", "a Python pattern is a package name followed by '-*'"),
        ("python", "django*", "a Python pattern is a package name followed by '-*'"),
        ("python", "dj*-*", "a Python pattern is a package name followed by '-*'"),
        ("node", "*", "a Node pattern is a scope followed by '/*'"),
        ("node", "@*/*", "a Node pattern is a scope followed by '/*'"),
        ("node", "left-*", "a Node pattern is a scope followed by '/*'"),
    ],
)
def test_a_pattern_that_would_match_everything_or_cannot_be_predicted_is_refused_naming_the_rule(
    live, language, entry, rule
):
    reply = live.call("PUT", P + "/policy", live.tokens["admin"], {language: {"allow": ["ok", entry]}})
    assert reply.status == 422 and reply.media == "application/problem+json"
    (error,) = reply.json["errors"]
    assert error["field"] == f"{language}.allow[1]" and rule in error["message"] and repr(entry) in error["message"]
    assert live.call("GET", P + "/policy", live.tokens["auditor"]).json["version"] == 0


def test_a_deny_pattern_over_allow_entries_is_shown_in_the_drafts_test_and_impact(live):
    draft = {"python": {"mode": "allowlist", "allow": ["django-rest-framework", "django-rest-*", "flask"]}}
    draft["python"]["deny"] = ["django-*"]
    tested = live.call(
        "POST", P + "/test", live.tokens["admin"], {"language": "python", "specs": ["flask"], "draft": draft}
    )
    shadow = [{"language": "python", "pattern": "django-*", "shadows": ["django-rest-*", "django-rest-framework"]}]
    assert tested.status == 200 and tested.json["shadowed"] == shadow
    impact = live.call("POST", P + "/impact", live.tokens["admin"], {"draft": draft})
    assert impact.status == 200 and impact.json["shadowed"] == shadow
    # without a draft nothing is shadowed: the answer is about the saved policy
    plain = live.call("POST", P + "/test", live.tokens["auditor"], {"language": "python", "specs": ["flask"]})
    assert "shadowed" not in plain.json


def test_the_index_serves_and_lists_what_a_pattern_allows(live, app):
    app.save_policy("acme", {"python": {"mode": "allowlist", "allow": ["delta-*"]}}, by="founder")
    auth = {"Authorization": "Basic " + base64.b64encode(f"x:{live.tokens['sandbox']}".encode()).decode()}
    page = live.call("GET", "/pypi/acme/simple/delta-pkg/", headers={**auth, "Accept": JSON_ACCEPT}).json
    assert page["name"] == "delta-pkg" and page["files"] and "project-status" not in page
    refused = live.call("GET", "/pypi/acme/simple/alpha/", headers={**auth, "Accept": JSON_ACCEPT}).json
    assert refused["project-status"]["status"] == "quarantined" and not refused["files"]
    listed = live.call("GET", "/pypi/acme/simple/", headers={**auth, "Accept": JSON_ACCEPT}).json["projects"]
    assert [p["name"] for p in listed] == ["delta-pkg"]
