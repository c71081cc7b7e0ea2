"""Approving a request with its dependencies: one save grants the package and every name of its
closure the policy does not allow yet, and then a real pip install of the tree succeeds."""

from __future__ import annotations

import pytest

from tests.support import clients
from tests.support.closure_trees import (  # noqa: F401 - fixtures pypi_upstream, npm_upstream, live_env
    WEBKIT_TREE,
    node_tree_upstream,
    python_tree_upstream,
    trees_live_env,
)
from tests.support.index_fixtures import start_run
from tests.support.index_live import sqlite_store  # noqa: F401 - fixture database_url

P = "/api/v1/workspaces/acme"
TREE = WEBKIT_TREE


@pytest.fixture
def asked(live, app):
    """Allowlist mode allowing urlkit only; an agent asked for webkit."""
    app.save_policy("acme", {"python": {"mode": "allowlist", "allow": ["urlkit"]}}, by="founder")
    reply = live.call("POST", P + "/requests", live.tokens["sandbox"], {"language": "python", "name": "webkit"})
    assert reply.status == 201, reply.body
    return reply.json["id"]


def approve(live, request_id: str, **body):
    return live.call("POST", f"{P}/requests/{request_id}/approve", live.tokens["admin"], body)


def pip_installs(live, tmp_path, *specs: str):
    run = start_run(live)
    return clients.pip_install(tmp_path, run["pypi"], run["token"], *specs)


def test_one_click_grants_the_closure_and_pip_then_installs_the_tree(live, app, tmp_path, asked):
    approved = approve(live, asked, with_dependencies=True, note="webkit and what it needs", duration="P7D")
    assert approved.status == 200, approved.body
    assert set(approved.json["granted"]) == TREE - {"urlkit"}  # urlkit was allowed already
    outcome = pip_installs(live, tmp_path, "webkit")
    assert outcome.ok, outcome.output
    installed = {p.name.split("-")[0].replace("_", "-") for p in (tmp_path / "site").glob("*.dist-info")}
    assert installed == TREE


def test_the_grants_are_one_save_with_one_note_and_one_event_per_name(live, app, asked):
    before = app.policy("acme")["version"]
    assert approve(live, asked, with_dependencies=True, note="one note").status == 200
    changes = [c for c in app.audit.history("acme", limit=1000)["changes"] if c["version"] > before]
    assert sorted(c["name"] for c in changes) == sorted(TREE - {"urlkit"})
    assert {(c["type"], c["note"], c["at"]) for c in changes} == {("exception-granted", "one note", changes[0]["at"])}
    exceptions = app.access.exceptions("acme")["exceptions"]
    assert {e["request_id"] for e in exceptions} == {asked}


def test_without_dependencies_only_the_package_is_granted_and_the_install_fails(live, app, tmp_path, asked):
    approved = approve(live, asked)
    assert approved.status == 200 and approved.json["granted"] == ["webkit"]
    assert not pip_installs(live, tmp_path, "webkit").ok


def test_a_deny_listed_member_is_refused_with_409_unless_the_deny_is_lifted(live, app, asked):
    app.save_policy("acme", {"python": {"deny": ["evil-thing", "cycle-b"]}}, by="founder")
    version = app.policy("acme")["version"]
    refused = approve(live, asked, with_dependencies=True)
    assert refused.status == 409, refused.body
    assert "(cycle-b, evil-thing)" in refused.json["detail"]  # every one named at once
    assert [e["field"] for e in refused.json["errors"]] == ["lift_deny", "lift_deny"]
    assert app.policy("acme")["version"] == version
    assert app.access.request("acme", asked)["status"] == "open"
    lifted = approve(live, asked, with_dependencies=True, lift_deny=True)
    assert lifted.status == 200, lifted.body
    assert {"evil-thing", "cycle-b"} <= set(lifted.json["granted"])
    assert app.policy("acme")["python"]["deny"] == ["cycle-b", "evil-thing"]  # lifted for the window, kept
    lifting = {e["name"] for e in app.access.exceptions("acme")["exceptions"] if e["lifts_deny"]}
    assert lifting == {"evil-thing", "cycle-b"}


def test_members_a_deny_pattern_denies_are_409_even_with_lift_deny(live, app, asked):
    """lift_deny lifts entries naming a package, never a pattern that denies other names too."""
    app.save_policy("acme", {"python": {"deny": ["cycle-*"]}}, by="founder")
    version = app.policy("acme")["version"]
    refused = approve(live, asked, with_dependencies=True, lift_deny=True)
    assert refused.status == 409, refused.body
    assert "are denied by the Python deny pattern cycle-*" in refused.json["detail"]
    assert sorted(e["message"].split()[0] for e in refused.json["errors"]) == ["cycle-a", "cycle-b"]
    assert app.policy("acme")["version"] == version and app.policy("acme")["python"]["deny"] == ["cycle-*"]
    assert app.access.request("acme", asked)["status"] == "open"


def test_the_console_shows_the_closure_first_then_approves_it_in_one_click(live, app, asked):
    from tests.interface.test_console import signed_in

    console = signed_in(live)
    requests_page = console.get("/console/requests")
    assert "Approve with its dependencies…" in requests_page.plain
    preview = console.get(f"/console/requests/{asked}/closure")
    assert preview.status == 200, preview.text
    shown = {row[0]: row for row in preview.rows()}
    assert set(shown) == TREE
    assert shown["urlkit"][2] == "allowed" and shown["evil-thing"][2:] == ["unlisted", "certkit"]
    assert shown["webkit"][3] == "requested" and shown["cycle-a"][3] == "cycle-b, urlkit"
    assert "grants an exception to 6 names: webkit and each one not allowed yet" in preview.plain
    assert app.access.exceptions("acme")["exceptions"] == []  # a preview grants nothing
    form = preview.form(f"/console/requests/{asked}/approve")
    done = console.follow(console.post(form.action, form.fields + [("duration", "P7D")]))
    said = "Approved webkit and 5 dependencies not allowed before (7 days): certkit, cycle-a, cycle-b, evil-thing, "
    said += "idnakit."
    assert said in done.plain, done.plain
    granted = {e["name"] for e in app.access.exceptions("acme")["exceptions"]}
    assert granted == TREE - {"urlkit"}


def test_a_closure_approval_refused_shows_the_closure_again_with_what_was_typed(live, app, asked):
    """Refused (a deny-listed name in the closure, its entry not lifted), the closure page comes
    back with the note and the box: the Requests list's form would grant the request alone."""
    from tests.interface.test_access_console import approved_once_the_box_is_ticked
    from tests.interface.test_console import signed_in

    app.save_policy("acme", {"python": {"deny": ["evil-thing"]}}, by="founder")
    words = (
        "What webkit needs includes evil-thing, on the Python deny list, which wins over exceptions: to approve, "
        "tick “Lift their deny entries while the exceptions last”."
    )
    closure = f"/console/requests/{asked}/closure"
    _, again, done = approved_once_the_box_is_ticked(signed_in(live), closure, asked, "the webkit tree, OPS-7", words)
    assert ("with_dependencies", "yes") in again.fields
    assert (
        "Approved webkit and 5 dependencies not allowed before (7 days): certkit, cycle-a, cycle-b, evil-thing, "
        "idnakit. The deny entry of evil-thing is lifted until its exception ends." in done.plain
    ), done.plain  # a dependency's entry was lifted, not webkit's, which no entry names
    assert "evil-thing" in {e["name"] for e in app.access.exceptions("acme")["exceptions"]}


def test_the_console_says_when_a_requirement_could_not_be_followed_rather_than_counting_none(live, app, asked):
    from tests.interface.test_console import signed_in

    lonely = live.call("POST", P + "/requests", live.tokens["sandbox"], {"language": "python", "name": "lonely"})
    console = signed_in(live)
    preview = console.get(f"/console/requests/{lonely.json['id']}/closure")
    assert "Not followed" in preview.plain and "ghost-kit" in preview.plain, preview.plain
    form = preview.form(f"/console/requests/{lonely.json['id']}/approve")
    done = console.follow(console.post(form.action, form.fields + [("duration", "P1D")]))
    said = "Approved lonely and 1 dependency not allowed before (1 day): ghost-kit. 1 requirement could not be followed"
    assert said in done.plain, done.plain
