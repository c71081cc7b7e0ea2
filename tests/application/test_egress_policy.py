"""The workspace's egress allowlist as versioned policy: "was this host reachable at T" equals
replaying the policy's events up to T; it narrows the deployment's rules and never widens them;
agents ask for a host and admins grant it for a while, like a package."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from application.egress import EgressConfig
from domain.egress import evaluate_egress
from domain.errors import InvalidInputError
from tests.application.test_pointintime import instants, replay_until

HOSTS = ["api.github.com", "pypi.example.org", "cdn.example.org", "example.org", "evil.test"]
ENTRIES = ["api.github.com", "*.example.org", "example.org", "EVIL.test."]
PUBLIC = ["140.82.112.5"]


def random_egress_history(app, workspace: str, steps: int, seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(steps):
        if rng.random() < 0.2:
            allow = None if rng.random() < 0.4 else rng.sample(ENTRIES, rng.randint(0, 3))
            app.save_policy(workspace, {"egress": {"allow": allow}}, by=rng.choice(["alice", "bob"]), note="save")
            continue
        change = (
            {"action": "switch-mode", "language": "egress", "mode": rng.choice(["open", "allowlist"])}
            if rng.random() < 0.2
            else {"action": rng.choice(["add", "remove"]), "language": "egress", "list": "allow"}
        )
        if "list" in change:
            change["entries"] = [rng.choice(ENTRIES)]
        app.change_policy(workspace, [change], by="carol", note="change")


def test_was_a_host_reachable_at_t_equals_replaying_the_events_up_to_t(app, workspace):
    random_egress_history(app, workspace, steps=80, seed=13)
    deployment = app.egress.egress_config
    for at in instants(app, workspace, random.Random(17), 30):
        naive = replay_until(app, workspace, at)
        narrowing = naive.egress_rules()
        assert app.policy(workspace, at=at)["egress"] == {"allow": narrowing.allow_view()}
        for host in HOSTS:
            answer = app.egress.test_egress(workspace, f"https://{host}/", PUBLIC, at=at)
            expected = evaluate_egress(f"https://{host}/", PUBLIC, deployment.hostname_allowlist)
            expected_allowed = expected.allowed and narrowing.passes(expected.host)
            assert answer["allowed"] == expected_allowed, (at, host)
            assert answer["policy_version"] == naive.policy_version


def test_the_history_lists_each_egress_change_with_its_author_and_note(app, workspace):
    app.save_policy(workspace, {"egress": {"allow": ["API.GitHub.com."]}}, by="alice", note="only github")
    app.change_policy(workspace, [{"action": "switch-mode", "language": "egress", "mode": "open"}], by="bob")
    changes = [
        (c["type"], c["language"], c.get("name") or c.get("mode"), c["by"])
        for c in app.audit.history(workspace)["changes"]
    ]
    assert changes == [
        ("mode-switched", "egress", "allowlist", "alice"),
        ("entry-added", "egress", "api.github.com", "alice"),
        ("mode-switched", "egress", "open", "bob"),
    ]
    assert app.audit.history(workspace)["changes"][0]["note"] == "only github"


def test_a_workspace_list_never_widens_the_deployments_and_registries_stay_refused(open_app):
    app = open_app(egress=EgressConfig(hostname_allowlist=("api.github.com",)))
    app.create_workspace("acme", by="founder")
    app.save_policy("acme", {"egress": {"allow": ["api.github.com", "evil.test", "pypi.org"]}}, by="alice")
    outcomes = {
        h: app.egress.evaluate_egress("acme", f"https://{h}/", PUBLIC)["allowed"]
        for h in ("api.github.com", "evil.test", "pypi.org")
    }
    assert outcomes == {"api.github.com": True, "evil.test": False, "pypi.org": False}
    assert app.egress.evaluate_egress("acme", "http://169.254.169.254/", ())["reason"] == "cloud-metadata"


def test_bad_egress_entries_are_refused_naming_each_one(app, workspace):
    with pytest.raises(InvalidInputError) as refused:
        app.save_policy(workspace, {"egress": {"allow": ["ok.example", "*", "10.0.0.1", "a.*.b"]}}, by="alice")
    assert [e.field for e in refused.value.errors] == ["egress.allow[1]", "egress.allow[2]", "egress.allow[3]"]
    assert app.policy(workspace)["version"] == 0


def test_an_agent_asks_for_a_host_and_an_admin_grants_it_for_a_while(app, workspace):
    app.save_policy(workspace, {"egress": {"allow": ["api.github.com"]}}, by="alice")
    denied = app.egress.evaluate_egress(workspace, "https://Files.Example.com/x", PUBLIC)
    assert not denied["allowed"] and '"language": "egress"' in denied["detail"]
    asked = app.access.file_request(workspace, "egress", "FILES.example.com.", "datasets", None, "agent", "t1")
    assert (asked["language"], asked["name"]) == ("egress", "files.example.com")
    app.access.approve_request(workspace, asked["id"], by="admin", duration="PT1H", note="for the run")
    assert app.egress.evaluate_egress(workspace, "https://files.example.com/x", PUBLIC)["allowed"]
    later = datetime.now(UTC) + timedelta(hours=2)
    assert not app.egress.test_egress(workspace, "https://files.example.com/x", PUBLIC, at=later)["allowed"]
    with pytest.raises(InvalidInputError):
        app.access.file_request(workspace, "egress", "*.example.com", "all of it", None, "agent", "t1")


def test_an_address_off_the_allowlist_is_told_to_use_the_hosts_name_not_to_ask_for_the_address(app, workspace):
    app.save_policy(workspace, {"egress": {"allow": ["api.github.com"]}}, by="alice")
    denied = app.egress.evaluate_egress(workspace, "8.8.8.8:443", ["8.8.8.8"])
    assert not denied["allowed"] and "connect to the host by its name" in denied["detail"]
    assert "requests" not in denied["detail"]  # a request for an address is refused (422)
    with pytest.raises(InvalidInputError):
        app.access.file_request(workspace, "egress", "8.8.8.8", "needed", None, "agent", "t1")


def test_an_egress_decision_a_save_elsewhere_overtook_is_not_recorded_after_it(app, open_app, workspace, monkeypatch):
    from application.store.guards import StaleCaller

    token = app.issue_token(workspace, "sbx", "sandbox", by="founder")["id"]
    app.save_policy(workspace, {"egress": {"allow": ["api.github.com"]}}, by="alice")
    read = app.policies.egress

    def overtaken(*args, **kwargs):  # another worker's Save commits between the judgement and its recording
        found = read(*args, **kwargs)
        monkeypatch.setattr(app.policies, "egress", read)
        open_app().save_policy(workspace, {"egress": {"allow": ["example.org"]}}, by="bob")
        return found

    monkeypatch.setattr(app.policies, "egress", overtaken)
    with pytest.raises(StaleCaller):
        app.egress.evaluate_egress(workspace, "https://api.github.com/", PUBLIC, token=token)
    assert list(app.audit.export_decisions(workspace)) == []
    again = app.egress.evaluate_egress(workspace, "https://api.github.com/", PUBLIC, token=token)
    assert (again["allowed"], len(list(app.audit.export_decisions(workspace)))) == (False, 1)


@pytest.mark.parametrize(
    ("host", "reason"),
    [("metadata.google.internal", "cloud-metadata"), ("LocalHost.", "loopback"), ("pypi.org", "package-registry")],
)
def test_a_host_the_fixed_rules_always_refuse_gets_no_exception_and_no_request(app, workspace, host, reason):
    """Granted, such an exception was recorded policy that said something untrue: nothing lets it through."""
    with pytest.raises(InvalidInputError, match=rf"always refused \({reason}\)") as refused:
        app.access.grant_exception(workspace, "egress", host, duration="PT1H", lift_deny=True, by="admin")
    assert [e.field for e in refused.value.errors] == ["name"]
    with pytest.raises(InvalidInputError, match=reason):
        app.access.file_request(workspace, "egress", host, "needed", None, "agent", "t1")
    assert app.policy(workspace)["version"] == 0 and not app.access.requests(workspace)["requests"]
