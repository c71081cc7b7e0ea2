"""A large Save writes its events and one snapshot (once: a Save of n entries
also took a snapshot at every 50th version, each replaying from the one before)."""

from __future__ import annotations

from domain.limits import MAX_LIST_ENTRIES
from domain.policy import policy_id


def test_a_large_save_takes_one_snapshot_of_the_state_it_saved(app, workspace):
    entries = [f"pkg{i}" for i in range(1000)]
    saved = app.save_policy(workspace, {"python": {"mode": "allowlist", "allow": entries}}, by="admin")
    assert saved["version"] == 1001 and saved["python"]["allow"] == sorted(entries)
    snapshots = list(app.snapshots.get(policy_id(workspace)))
    assert [s.originator_version for s in snapshots] == [1002]  # the creation event is version 1
    assert app.policies.load_policy(workspace).state == app.policies.load_policy(workspace, 1001).state
    assert app.policy(workspace)["python"]["allow"] == sorted(entries)


def test_small_saves_still_snapshot_at_every_interval(app, workspace):
    for i in range(120):
        app.change_policy(
            workspace, [{"action": "add", "language": "node", "list": "deny", "entries": [f"n{i}"]}], by="a"
        )
    versions = [s.originator_version for s in app.snapshots.get(policy_id(workspace))]
    assert versions == [50, 100]
    assert app.policy(workspace)["node"]["deny"] == sorted(f"n{i}" for i in range(120))


def test_the_api_refuses_a_list_past_the_limit_and_the_schema_states_it(live):
    body = {"python": {"allow": [f"p{i}" for i in range(MAX_LIST_ENTRIES + 1)]}}
    refused = live.call("PUT", "/api/v1/workspaces/acme/policy", live.tokens["admin"], body)
    assert refused.status == 422, refused.body[:300]
    assert refused.json["errors"][0]["field"].startswith("python.allow")
    schema = live.call("GET", "/api/v1/openapi.json").json["components"]["schemas"]["LanguageDraft"]
    assert f"{MAX_LIST_ENTRIES}" in str(schema["properties"]["allow"])
    assert live.call("GET", "/api/v1/workspaces/acme/policy", live.tokens["admin"]).json["version"] == 0
