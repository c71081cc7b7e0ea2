"""A lifting exception (`lift_deny`) keeps the deny entries naming its package from denying it for
its window only: the entries stay on the list, and deny again when it ends or is revoked, with no
event of their own. Grants recorded before (which removed the entries) replay as they did."""

from __future__ import annotations

from datetime import timedelta

import pytest

from domain.errors import ConflictError
from domain.policy import Change


def _answers(app, workspace: str, name: str, at=None) -> set[tuple[bool, str]]:
    """The live answer (/test at `at`) and the point-in-time answer: they must agree."""
    at = at or app.access.clock()
    tested = app.evaluation.test(workspace, "node", [name], at=at)["decisions"][0]
    package = app.audit.package_at(workspace, "node", name, at)
    return {(tested["allowed"], tested["reason"]), (package["allowed"], package["reason"])}


@pytest.mark.parametrize("mode", ["denylist", "allowlist"])
def test_a_lift_ends_with_its_exception_and_every_spelling_denies_again(app, workspace, clock, mode):
    app.save_policy(workspace, {"node": {"mode": mode, "deny": ["Left-Pad", "left-pad", "other"]}}, by="founder")
    granted = app.access.grant_exception(workspace, "node", "left-pad", by="alice", duration="PT1M", lift_deny=True)
    assert granted["lifts_deny"] is True
    inside = clock()
    assert _answers(app, workspace, "left-pad") == {(True, "matches-an-exception")}
    assert _answers(app, workspace, "other") == {(False, "matches-the-deny-list")}
    assert app.policy(workspace)["node"]["deny"] == ["Left-Pad", "left-pad", "other"]
    clock.step(timedelta(minutes=2))
    assert _answers(app, workspace, "left-pad") == {(False, "matches-the-deny-list")}
    assert _answers(app, workspace, "left-pad", inside) == {(True, "matches-an-exception")}
    assert app.policy(workspace)["node"]["deny"] == ["Left-Pad", "left-pad", "other"]
    with pytest.raises(ConflictError, match="already ended"):  # nothing to revoke: it ended by itself
        app.access.revoke_exception(workspace, granted["id"], by="bob")


def test_the_cached_rules_see_the_lift_only_in_its_window(app, workspace, clock):
    app.save_policy(workspace, {"python": {"deny": ["beta"]}}, by="founder")
    with pytest.raises(ConflictError):  # no lift_deny: still refused
        app.access.grant_exception(workspace, "python", "beta", by="alice", duration="PT1M")
    app.access.grant_exception(workspace, "python", "beta", by="alice", duration="PT1M", lift_deny=True)
    rules = app.policies.current(workspace)[1]["python"]
    assert not rules.denies("beta") and rules.lifts("beta")
    again = app.access.grant_exception(workspace, "python", "beta", by="alice", duration="PT1M", lift_deny=True)
    assert again["lifts_deny"] is True
    clock.step(timedelta(minutes=2))
    rules = app.policies.current(workspace)[1]["python"]
    assert rules.denies("beta") and not rules.lifts("beta")


def test_a_grant_recorded_before_lifts_nothing_and_its_removed_entries_stay_removed(app, workspace, clock):
    """What a lift_deny recorded before this release saved, the entries' removal then a grant
    lifting nothing (as a stored grant of version 2 reads: `test_event_versions`), judges as it
    did: the name is off the deny list for good."""
    app.save_policy(workspace, {"python": {"deny": ["beta", "gamma"]}}, by="founder")
    policy = app.access.load_policy(workspace)
    ends = clock() + timedelta(minutes=1)
    grant = {"exception_id": "00000000-0000-4000-8000-000000000001", "expires_at": ends.isoformat(), "request_id": None}
    old_style = [
        Change("entry-removed", "python", "deny", "beta"),
        Change("exception-granted", "python", name="beta", exception=grant),
    ]
    policy.record(old_style, "alice", "")
    app.access.save(policy)
    reread = app.access.load_policy(workspace)
    assert "lifts_deny" not in reread.exceptions[grant["exception_id"]]
    assert app.policy(workspace)["python"]["deny"] == ["gamma"]
    assert app.evaluation.test(workspace, "python", ["beta"])["decisions"][0]["reason"] == "not-on-the-deny-list"
    clock.step(timedelta(minutes=2))
    after = app.evaluation.test(workspace, "python", ["beta"])["decisions"][0]
    assert (after["allowed"], after["reason"]) == (True, "not-on-the-deny-list")
    assert app.audit.package_at(workspace, "python", "beta", clock())["reason"] == "not-on-the-deny-list"


@pytest.mark.parametrize("again", ["left-pad", "LEFT-PAD"], ids=["same-spelling", "another-spelling"])
def test_a_deny_entry_added_after_the_lift_denies_at_once(app, workspace, clock, again):
    """A lift covers the entries it was granted over: denying the name anew during the window (a
    re-add after a removal, or another spelling) wins, live and at every instant after it."""
    app.save_policy(workspace, {"node": {"mode": "denylist", "deny": ["left-pad"]}}, by="founder")
    app.access.grant_exception(workspace, "node", "left-pad", by="alice", duration="PT10M", lift_deny=True)
    lifted = clock()
    if again == "left-pad":
        app.change_policy(
            workspace, [{"action": "remove", "language": "node", "list": "deny", "entries": ["left-pad"]}], by="bob"
        )
    clock.step(timedelta(seconds=5))
    app.change_policy(
        workspace,
        [{"action": "add", "language": "node", "list": "deny", "entries": [again]}],
        by="bob",
        note="found malicious",
    )
    assert _answers(app, workspace, "left-pad") == {(False, "matches-the-deny-list")}
    assert app.policies.current(workspace)[1]["node"].denies("left-pad")  # the cached rules, as /evaluate reads them
    because = app.audit.package_at(workspace, "node", "left-pad", clock())["because"]
    assert (because["type"], because["name"], because["note"]) == ("entry-added", again, "found malicious")
    assert _answers(app, workspace, "left-pad", lifted) == {(True, "matches-an-exception")}  # before it


def test_a_deny_entry_added_during_the_window_holds_the_lift_off_while_it_is_listed(app, workspace, clock):
    """The live rules and the point-in-time answer agree: a deny entry added during the window (here
    another spelling) denies while it is listed, and the lift holds again once it is removed; a deny
    pattern added and removed changes nothing of the lift (patterns are never lifted)."""
    app.save_policy(workspace, {"node": {"mode": "denylist", "deny": ["@corp/left-pad"]}}, by="founder")
    app.access.grant_exception(workspace, "node", "@corp/left-pad", by="alice", duration="PT10M", lift_deny=True)
    for entries in (["@corp/*"], ["@Corp/Left-Pad"]):
        change = {"action": "add", "language": "node", "list": "deny", "entries": entries}
        app.change_policy(workspace, [change], by="bob")
        clock.step(timedelta(seconds=1))
        assert _answers(app, workspace, "@corp/left-pad") == {(False, "matches-the-deny-list")}, entries
        app.change_policy(workspace, [change | {"action": "remove"}], by="bob")
        clock.step(timedelta(seconds=1))
        assert _answers(app, workspace, "@corp/left-pad") == {(True, "matches-an-exception")}, entries
