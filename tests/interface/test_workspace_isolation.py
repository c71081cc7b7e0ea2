"""Isolation between workspaces: one workspace's record is invisible and unreachable from another's
tokens, even by decision id (README, Guarantees)."""

from __future__ import annotations

A, B = "/api/v1/workspaces/acme", "/api/v1/workspaces/other"


def test_a_workspace_never_sees_or_reaches_another_workspaces_record(live):
    change = {"changes": [{"action": "add", "language": "python", "list": "deny", "entries": ["evil"]}]}
    assert live.call("POST", A + "/policy/changes", live.tokens["admin"], change).status == 200
    decided = live.call("POST", A + "/evaluate", live.tokens["sandbox"], {"language": "python", "specs": ["evil"]})
    decision_id = decided.json["decisions"][0]["id"]
    intruder = live.tokens["other-workspace"]  # the owner of workspace "other"
    assert live.call("GET", B + "/decisions", intruder).json["decisions"] == []
    assert live.call("GET", B + "/history", intruder).json["changes"] == []
    assert live.call("GET", B + "/policy", intruder).json["python"]["deny"] == []
    assert live.call("GET", f"{B}/decisions/{decision_id}", intruder).status == 404
    assert live.call("GET", f"{A}/decisions/{decision_id}", intruder).status == 404
    evaluated = live.call("POST", B + "/evaluate", intruder, {"language": "python", "specs": ["evil"]}).json
    assert evaluated["allowed"] is True  # acme's deny list is acme's alone
