"""Approving a request with its dependencies grants exactly what the closure page showed, or
nothing: a deny entry added meanwhile is never lifted unseen, and a name an upstream release
needs since is never granted unseen (SQLite, PostgreSQL). A name a deny pattern denies is said
to be beyond any lift, with no box offered for it."""

from __future__ import annotations

import pytest

from tests.interface.test_console import signed_in
from tests.support.closure_trees import (  # noqa: F401 - fixtures pypi_upstream, npm_upstream
    WEBKIT_TREE,
    node_tree_upstream,
    python_tree_upstream,
)
from tests.support.index_fixtures import index_env
from tests.support.pypi_upstream import Dist

P = "/api/v1/workspaces/acme"
TREE = WEBKIT_TREE


@pytest.fixture
def live_env(pypi_upstream, npm_upstream):
    # Pages read again on every closure, as after the cache's minute: an upstream release shows at once.
    return {**index_env(pypi_upstream, npm_upstream), "RUNCODE_POLICY_CACHE_PAGE_SECONDS": "0"}


@pytest.fixture
def asked(live, app):
    """Allowlist mode allowing urlkit, evil-thing on the deny list; an agent asked for webkit."""
    app.save_policy("acme", {"python": {"mode": "allowlist", "allow": ["urlkit"], "deny": ["evil-thing"]}}, by="o")
    reply = live.call("POST", P + "/requests", live.tokens["sandbox"], {"language": "python", "name": "webkit"})
    assert reply.status == 201, reply.body
    return reply.json["id"]


def granted(app) -> dict[str, bool]:
    return {e["name"]: e["lifts_deny"] for e in app.access.exceptions("acme")["exceptions"]}


def press(console, page, request_id: str, lift: bool = True):
    form = page.form(f"/console/requests/{request_id}/approve")
    fields = [f for f in form.fields if f[0] != "lift_deny"] + ([("lift_deny", "yes")] if lift else [])
    return console.post(form.action, [*fields, ("note", "the webkit tree"), ("duration", "P7D")])


def test_a_deny_entry_added_after_the_page_was_shown_is_not_lifted_unseen(live, app, asked):
    console = signed_in(live)
    page = console.get(f"/console/requests/{asked}/closure")
    assert "On the deny list: evil-thing." in page.plain
    shown = app.policy("acme")["version"]
    # Meanwhile another admin denies idnakit, which the page showed as merely unlisted.
    app.change_policy("acme", [{"action": "add", "language": "python", "list": "deny", "entries": "idnakit"}], by="bob")
    refused = press(console, page, asked)
    assert refused.status == 409, refused.plain
    assert granted(app) == {} and app.access.request("acme", asked)["status"] == "open"
    said = refused.plain
    assert "Nothing was granted: approving would no longer grant what the page showed" in said
    assert f"it showed version {shown}; it is now version {shown + 1}" in said
    assert "by bob: Python: added idnakit to the deny list" in said
    assert "Now on the deny list: idnakit." in said and "was cleared" in said
    again = refused.form(f"/console/requests/{asked}/approve")
    assert again.get("lift_deny") is None and again.get("policy_version") == str(shown + 1)
    assert "On the deny list: evil-thing, idnakit." in said
    # Seen now: approving lifts both, as the page says.
    done = console.follow(press(console, refused, asked))
    assert "Approved webkit and 5 dependencies not allowed before (7 days)" in done.plain, done.plain
    assert "The deny entries of evil-thing, idnakit are lifted" in done.plain
    assert granted(app) == {"webkit": False, "certkit": False, "cycle-a": False, "cycle-b": False} | {
        "evil-thing": True,
        "idnakit": True,
    }


def test_a_name_an_upstream_release_needs_since_is_not_granted_unseen(live, app, asked, pypi_upstream):
    console = signed_in(live)
    page = console.get(f"/console/requests/{asked}/closure")
    assert "sneaky-dep" not in page.plain
    pypi_upstream.add(Dist("certkit", "1.1", requires=("Evil_Thing", "sneaky-dep")))
    pypi_upstream.add(Dist("sneaky-dep", "1.0"))
    refused = press(console, page, asked)
    assert refused.status == 409, refused.plain
    assert granted(app) == {}
    assert "Approving would now also grant sneaky-dep." in refused.plain and "it showed version" not in refused.plain
    assert ("grant", "sneaky-dep") in refused.form(f"/console/requests/{asked}/approve").fields
    done = console.follow(press(console, refused, asked))
    said = "Approved webkit and 6 dependencies not allowed before (7 days): certkit, cycle-a, cycle-b, evil-thing"
    assert said in done.plain and "sneaky-dep" in done.plain, done.plain
    assert "sneaky-dep" in granted(app)


def test_the_notice_names_the_granted_names_a_bounded_few(live, app, asked, monkeypatch):
    monkeypatch.setattr("interface.console.access.SHOWN_GRANTS", 2)
    console = signed_in(live)
    done = console.follow(press(console, console.get(f"/console/requests/{asked}/closure"), asked))
    assert "not allowed before (7 days): certkit, cycle-a and 3 more." in done.plain, done.plain


def test_an_approval_form_without_what_it_showed_grants_nothing(live, app, asked):
    console = signed_in(live)
    page = console.get(f"/console/requests/{asked}/closure")
    form = page.form(f"/console/requests/{asked}/approve")
    bare = [(n, v) for n, v in form.fields if n not in ("policy_version", "grant", "lift")]
    refused = console.follow(console.post(form.action, [*bare, ("lift_deny", "yes"), ("duration", "P1D")]))
    assert "does not say which policy version its dependencies were worked out at" in refused.plain
    assert granted(app) == {}


def test_the_api_approves_only_at_the_version_and_with_the_names_expected(live, app, asked):
    version = app.policy("acme")["version"]
    names = ["webkit", "certkit", "cycle-a", "cycle-b", "evil-thing", "idnakit"]
    body = {"with_dependencies": True, "lift_deny": True, "expected_version": version, "expected_names": names}

    def approve(**changed):
        return live.call("POST", f"{P}/requests/{asked}/approve", live.tokens["admin"], body | changed)

    stale = approve(expected_version=version - 1)
    assert stale.status == 409 and stale.json["errors"][0]["field"] == "expected_version", stale.body
    other = approve(expected_names=names[:-1])
    assert other.status == 409, other.body
    assert (
        "it would also grant idnakit" in other.json["detail"] and other.json["errors"][0]["field"] == "expected_names"
    )
    assert granted(app) == {}
    done = approve()
    assert done.status == 200 and sorted(done.json["granted"]) == sorted(names), done.body


def test_a_name_a_deny_pattern_denies_is_said_to_be_beyond_any_lift(live, app, asked):
    app.save_policy("acme", {"python": {"deny": ["cycle-*"]}}, by="o")
    closure = live.call(
        "POST", P + "/allowlist/closure", live.tokens["admin"], {"language": "python", "specs": ["webkit"]}
    )
    patterns = {n["name"]: n.get("pattern") for n in closure.json["names"]}
    assert patterns["cycle-a"] == "cycle-*" and patterns["certkit"] is None, closure.body
    console = signed_in(live)
    page = console.get(f"/console/requests/{asked}/closure")
    said = "Denied by a deny pattern: cycle-a (pattern cycle-*), cycle-b (pattern cycle-*)."
    assert said in page.plain and "no exception can lift it" in page.plain, page.plain
    assert "On the deny list" not in page.plain and "lift_deny" not in page.text and "Approve all" not in page.plain
    # Posted anyway (an older page): refused in the same words, never "tick the box".
    token = page.form("/console/sign-out").get("csrf_token")
    fields = [
        ("csrf_token", token),
        ("with_dependencies", "yes"),
        ("policy_version", str(app.policy("acme")["version"])),
    ]
    fields += [("grant", n) for n in ("webkit", "certkit", "cycle-a", "cycle-b", "evil-thing", "idnakit")]
    refused = console.post(f"/console/requests/{asked}/approve", [*fields, ("lift_deny", "yes"), ("duration", "P1D")])
    assert refused.status == 409, refused.plain
    assert "cycle-a and cycle-b are denied by the Python deny pattern cycle-*" in refused.plain
    assert "remove or narrow" in refused.plain and "tick" not in refused.plain
    assert granted(app) == {}


def test_a_single_name_is_counted_in_good_english(live, app):
    reply = live.call("POST", P + "/requests", live.tokens["sandbox"], {"language": "python", "name": "idnakit"})
    app.save_policy("acme", {"python": {"mode": "allowlist"}}, by="o")
    console = signed_in(live)
    page = console.get(f"/console/requests/{reply.json['id']}/closure")
    assert "Approving grants an exception to 1 name, idnakit, in one change" in page.plain, page.plain
    form = page.form(f"/console/requests/{reply.json['id']}/approve")
    done = console.follow(console.post(form.action, [*form.fields, ("duration", "P1D")]))
    assert "Approved idnakit (1 day). None of its dependencies needed an exception." in done.plain, done.plain
