"""`because` names a change that could have produced the answer's reason, and each timeline
interval the change at which it begins (SQLite and PostgreSQL).

A deny-list removal had been named as why a name was off the allow list, and the lift of a deny
entry as why a name whose exception was then revoked was denied: any last change of a deny entry
was `because`, whatever the reason."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

LOCK = {"action": "switch-mode", "language": "python", "mode": "allowlist"}


def _entry(action: str, listed: str, name: str) -> dict:
    return {"action": action, "language": "python", "list": listed, "entries": [name]}


def _openers(line: dict) -> list[tuple]:
    return [
        (i["reason"], i["opened_by"] and (i["opened_by"]["type"], i["opened_by"]["version"])) for i in line["intervals"]
    ]


def test_a_deny_list_removal_is_not_why_a_name_is_off_the_allow_list(app, workspace):
    start = datetime.now(UTC)
    app.change_policy(workspace, [LOCK], by="alice", note="lock down")  # v1
    app.change_policy(workspace, [_entry("add", "deny", "zzzdemo")], by="bob", note="try it")  # v2
    app.change_policy(workspace, [_entry("remove", "deny", "zzzdemo")], by="bob", note="undo")  # v3
    answer = app.audit.package_at(workspace, "python", "zzzdemo", datetime.now(UTC))
    assert (answer["allowed"], answer["reason"], answer["policy_version"]) == (False, "not-on-the-allow-list", 3)
    assert answer["because"] == {**answer["because"], "version": 1, "type": "mode-switched", "by": "alice"}
    # The timeline: each interval is opened by the change made at its start, the removal included.
    line = app.audit.package_timeline(workspace, "python", "zzzdemo", start, datetime.now(UTC) + timedelta(seconds=1))
    assert _openers(line) == [
        ("not-on-the-deny-list", None),
        ("not-on-the-allow-list", ("mode-switched", 1)),
        ("matches-the-deny-list", ("entry-added", 2)),
        ("not-on-the-allow-list", ("entry-removed", 3)),
    ]


def test_a_revoked_exception_is_why_a_name_it_had_let_in_is_denied_again(app, workspace):
    """The approval lifted the request's deny entry for its window; the revocation, not the entry's
    addition long before, is why it denies again."""
    app.change_policy(workspace, [LOCK], by="alice", note="lock down")  # v1
    app.change_policy(workspace, [_entry("add", "deny", "beta")], by="bob", note="risky")  # v2
    asked = app.access.file_request(workspace, "python", "beta", "the report", {}, by="agent", token_id="t-1")
    start = datetime.now(UTC)
    app.access.approve_request(workspace, asked["id"], by="carol", duration="P7D", note="ok", lift_deny=True)  # v3
    granted = app.audit.package_at(workspace, "python", "beta", datetime.now(UTC))
    assert (granted["reason"], granted["because"]["type"], granted["because"]["by"]) == (
        "matches-an-exception",
        "exception-granted",
        "carol",
    )
    exception_id = granted["because"]["exception"]["id"]
    app.access.revoke_exception(workspace, exception_id, by="dave", note="no longer needed")  # v4
    answer = app.audit.package_at(workspace, "python", "beta", datetime.now(UTC))
    assert (answer["allowed"], answer["reason"], answer["policy_version"]) == (False, "matches-the-deny-list", 4)
    because = answer["because"]
    assert (because["version"], because["type"], because["by"], because["note"]) == (
        4,
        "exception-revoked",
        "dave",
        "no longer needed",
    )
    assert because["exception"]["id"] == exception_id and because["request"] == {"id": asked["id"]}
    assert because["at"] == app.audit.history(workspace)["changes"][-1]["at"]
    line = app.audit.package_timeline(workspace, "python", "beta", start, datetime.now(UTC) + timedelta(seconds=1))
    assert _openers(line) == [
        ("matches-the-deny-list", ("entry-added", 2)),
        ("matches-an-exception", ("exception-granted", 3)),
        ("matches-the-deny-list", ("exception-revoked", 4)),
    ]


def test_a_later_allow_list_change_outweighs_an_older_revocation(app, workspace):
    app.change_policy(workspace, [LOCK], by="alice")  # v1
    granted = app.access.grant_exception(workspace, "python", "beta", by="carol")  # v2
    app.access.revoke_exception(workspace, granted["id"], by="dave")  # v3
    app.change_policy(workspace, [_entry("add", "allow", "beta")], by="erin")  # v4
    app.change_policy(workspace, [_entry("remove", "allow", "beta")], by="erin", note="not after all")  # v5
    answer = app.audit.package_at(workspace, "python", "beta", datetime.now(UTC))
    assert answer["reason"] == "not-on-the-allow-list"
    assert (answer["because"]["version"], answer["because"]["type"]) == (5, "entry-removed")


def test_an_expired_exception_is_named_by_its_grant_and_its_expiry_opens_the_interval(app, workspace, clock):
    app.change_policy(workspace, [LOCK], by="alice")  # v1
    start = datetime.now(UTC)
    granted = app.access.grant_exception(workspace, "python", "beta", by="carol", duration="PT1H", note="an hour")
    clock.step(timedelta(hours=2))
    answer = app.audit.package_at(workspace, "python", "beta", clock())
    assert (answer["allowed"], answer["reason"]) == (False, "not-on-the-allow-list")
    assert (answer["because"]["type"], answer["because"]["version"], answer["because"]["by"]) == (
        "exception-granted",
        2,
        "carol",
    )
    assert answer["because"]["exception"] == {"id": granted["id"], "expires_at": granted["expires_at"]}
    line = app.audit.package_timeline(workspace, "python", "beta", start, clock())
    ended = line["intervals"][-1]
    assert (ended["from"], ended["reason"]) == (granted["expires_at"], "not-on-the-allow-list")
    assert (ended["opened_by"]["type"], ended["opened_by"]["at"]) == ("exception-expired", granted["expires_at"])


def test_each_reason_is_caused_only_by_the_changes_that_can_produce_it(app, workspace):
    app.change_policy(workspace, [_entry("add", "allow", "django-rest-framework")], by="a")  # v1
    app.change_policy(workspace, [_entry("add", "allow", "django-*")], by="a")  # v2
    app.change_policy(workspace, [LOCK], by="a")  # v3
    app.change_policy(workspace, [_entry("remove", "allow", "django-*")], by="a")  # v4: the name still allows it
    allowed = app.audit.package_at(workspace, "python", "django-rest-framework", datetime.now(UTC))
    assert allowed["reason"] == "matches-the-allow-list"
    assert (allowed["because"]["version"], allowed["because"]["type"]) == (3, "mode-switched")
    app.change_policy(workspace, [{**LOCK, "mode": "denylist"}], by="a")  # v5
    app.change_policy(workspace, [_entry("remove", "allow", "django-rest-framework")], by="a")  # v6
    left = app.audit.package_at(workspace, "python", "django-rest-framework", datetime.now(UTC))
    assert left["reason"] == "not-on-the-deny-list"
    assert (left["because"]["version"], left["because"]["type"]) == (5, "mode-switched")
    untouched = app.audit.package_at(workspace, "python", "numpy", datetime.now(UTC))
    assert (untouched["reason"], untouched["because"]["version"]) == ("not-on-the-deny-list", 5)
