"""Who did it, beyond doubt (once: changes were attributed by token name only,
an owner could issue a token named `cli:root`, and a revoked token's name could be reused).

History answers carry the token id with the name; names that the service's own actors use are
reserved; a name, once used in a workspace, stays that token's."""

from __future__ import annotations

import pytest

from domain.errors import ConflictError, InvalidInputError
from tests.interface.test_console import signed_in

P = "/api/v1/workspaces/acme"


@pytest.mark.parametrize(
    "name", ["cli:root", "CLI:root", " cli:root", "\uff43\uff4c\uff49:root", "runcode-policy serve"]
)
def test_a_token_may_not_take_a_name_reserved_for_the_services_own_actors(app, workspace, name):
    with pytest.raises(InvalidInputError) as refused:
        app.issue_token(workspace, name, "owner", by="founder")
    assert refused.value.errors[0].field == "name" and "reserved" in refused.value.errors[0].message


def test_a_revoked_tokens_name_is_never_given_to_another_token(app, workspace):
    first = app.issue_token(workspace, "alice", "admin", by="founder")
    app.revoke_token(workspace, first["id"], by="founder")
    for name in ("alice", "Alice", " alice "):
        with pytest.raises(ConflictError) as refused:
            app.issue_token(workspace, name, "admin", by="founder")
        assert refused.value.errors[0].field == "name"
    app.create_workspace("other", by="founder")
    assert app.issue_token("other", "alice", "admin", by="x")["name"] == "alice"  # names are per workspace


def test_history_names_the_token_id_and_name_of_every_change(live, app):
    tokens = {t["name"]: t["id"] for t in live.call("GET", P + "/tokens", live.tokens["owner"]).json["tokens"]}
    change = {"changes": [{"action": "add", "language": "python", "list": "allow", "entries": ["pandas"]}]}
    assert live.call("POST", P + "/policy/changes", live.tokens["admin"], change).status == 200
    app.change_policy("acme", [{"action": "add", "language": "node", "list": "deny", "entries": ["x"]}], by="cli:root")
    history = live.call("GET", P + "/history", live.tokens["auditor"]).json["changes"]
    assert [(c["by"], c["by_token"]) for c in history] == [("admin-token", tokens["admin-token"]), ("cli:root", None)]
    rows = signed_in(live, "auditor").get("/console/history").rows()  # the console shows both too
    assert [(r[2], r[-1]) for r in rows] == [("admin-token", tokens["admin-token"]), ("cli:root", "—")]


def test_two_owners_issuing_one_name_at_once_give_it_to_one_token(open_app, workspace):
    from concurrent.futures import ThreadPoolExecutor

    owners = [open_app() for _ in range(2)]

    def issue(i):
        try:
            owners[i % 2].issue_token(workspace, "bob", "admin", by=f"owner-{i}")
            return "issued"
        except ConflictError:
            return "conflict"

    with ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(issue, range(8)))
    assert sorted(outcomes) == ["conflict"] * 7 + ["issued"]
    assert [t["name"] for t in owners[0].list_tokens(workspace)].count("bob") == 1
