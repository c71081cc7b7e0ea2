"""The audit-integrity routes on the real service: the public key without authentication,
checkpoints and verification for auditors and above, on-demand checkpoints for admins, and an
export with chain links that verifies against what the API publishes."""

from __future__ import annotations

import http.client
import json
import time
from urllib.parse import urlsplit

import pytest

from application import audit
from application.chain import slices
from application.chain.signing import key_id, parse_public_key
from application.chain.slices import verify_slice
from domain.advisories import FEED_ID
from tests.support.tamper import Tamperer

ACME = "/api/v1/workspaces/acme"


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


def sealed(live, token) -> dict:
    """An on-demand checkpoint: seals everything committed first, so no waiting on the sealer."""
    reply = live.call("POST", "/api/v1/workspaces/acme/audit/checkpoints", live.tokens["admin"])
    assert reply.status == 201, reply.body
    return reply.json


def test_the_public_key_is_published_without_authentication(live):
    reply = live.call("GET", "/api/v1/audit/public-key")
    assert reply.status == 200
    assert reply.json["algorithm"] == "Ed25519"
    assert key_id(parse_public_key(reply.json["pem"], "pem")) == reply.json["key_id"]


def test_auditors_read_checkpoints_and_verify_but_cannot_sign(live):
    live.call(
        "POST", "/api/v1/workspaces/acme/evaluate", live.tokens["sandbox"], {"language": "python", "specs": ["pandas"]}
    )
    checkpoint = sealed(live, live.tokens["admin"])
    auditor = live.tokens["auditor"]
    page = live.call("GET", "/api/v1/workspaces/acme/audit/checkpoints", auditor).json
    assert page["checkpoints"][-1] == checkpoint and page["next_after"] is None
    verdict = live.call("GET", "/api/v1/workspaces/acme/audit/verify", auditor).json
    assert verdict["ok"] is True and verdict["checked"] == checkpoint["seq"]
    assert live.call("POST", "/api/v1/workspaces/acme/audit/checkpoints", auditor).status == 403
    assert live.call("GET", "/api/v1/workspaces/acme/audit/verify", live.tokens["sandbox"]).status == 403
    assert live.call("GET", "/api/v1/workspaces/acme/audit/verify", live.tokens["other-workspace"]).status == 404


def test_the_service_seals_by_itself(live):
    live.call(
        "POST", "/api/v1/workspaces/acme/evaluate", live.tokens["sandbox"], {"language": "python", "specs": ["numpy"]}
    )
    deadline = time.monotonic() + 60
    while live.call("GET", "/api/v1/workspaces/acme/audit/verify", live.tokens["auditor"]).json["unsealed"]:
        assert time.monotonic() < deadline, "the background sealer did not catch up within 60 s"
        time.sleep(0.05)


def test_an_export_with_chain_links_verifies_against_the_published_checkpoints(live):
    live.call(
        "POST",
        "/api/v1/workspaces/acme/evaluate",
        live.tokens["sandbox"],
        {"language": "python", "specs": ["pandas", "left-pad"]},
    )
    sealed(live, live.tokens["admin"])
    auditor = live.tokens["auditor"]
    export = live.call("GET", "/api/v1/workspaces/acme/decisions?format=jsonl&chain=true", auditor)
    lines = [json.loads(line) for line in export.body.decode().splitlines()]
    checkpoints = live.call("GET", "/api/v1/workspaces/acme/audit/checkpoints", auditor).json["checkpoints"]
    public = parse_public_key(live.call("GET", "/api/v1/audit/public-key").body.decode(), "key")
    result = verify_slice(lines, checkpoints, {key_id(public): public})
    assert result["ok"] is True and result["checked"] == 2


def test_chain_links_come_with_jsonl_exports_only(live):
    reply = live.call("GET", "/api/v1/workspaces/acme/decisions?format=csv&chain=true", live.tokens["auditor"])
    assert reply.status == 422 and "chain" in reply.body.decode()


def test_any_workspaces_auditor_verifies_the_deployments_own_chain_of_advisory_imports(live, app, database_url):
    """Every workspace is judged by the advisory feed, sealed in the chain `-`, which no route reached."""
    affected = [{"package": {"ecosystem": "npm", "name": "evil-js"}, "versions": ["2.0.0"]}]
    imported = live.call("POST", "/api/v1/advisories", live.tokens["owner"], {"id": "MAL-1", "affected": affected})
    assert imported.status == 201, imported.body
    app.chain.checkpoint("-")
    for auditor in (live.tokens["auditor"], live.tokens["other-workspace"]):
        page = live.call("GET", "/api/v1/audit/checkpoints", auditor).json
        assert [(c["workspace"], c["seq"]) for c in page["checkpoints"]] == [("-", 2)]
        verdict = live.call("GET", "/api/v1/audit/verify", auditor).json
        assert (verdict["ok"], verdict["checked"]) == (True, 2), verdict
    assert live.call("GET", "/api/v1/audit/verify", live.tokens["sandbox"]).status == 403
    assert live.call("GET", "/api/v1/audit/verify").status == 401
    tamper = Tamperer(database_url)
    tamper.replace_in_state(str(FEED_ID), '"evil-js"', '"evil-jx"')
    tamper.close()
    verdict = live.call("GET", "/api/v1/audit/verify", live.tokens["auditor"]).json
    assert (verdict["ok"], verdict["problem"], verdict["record"]["seq"]) == (False, "altered", 2), verdict


def test_a_sealed_position_moved_back_is_named_by_verify_checkpoint_and_readiness_never_a_500(live, database_url):
    """Rewound, `rcp_chain_position` made every sealing round fail on the chain's unique key: the
    sealer stopped without a word, checkpoint and verify answered 500, and /readyz said ready."""
    evaluate = {"language": "python", "specs": ["pandas"]}
    live.call("POST", "/api/v1/workspaces/acme/evaluate", live.tokens["sandbox"], evaluate)
    sealed(live, live.tokens["admin"])
    tamper = Tamperer(database_url)
    tamper.sql("UPDATE rcp_chain_position SET notification_id = 1")
    tamper.close()
    named = "the sealer's position (rcp_chain_position) is notification 1, behind notification "
    assert live.call("POST", "/api/v1/workspaces/acme/evaluate", live.tokens["sandbox"], evaluate).status == 200
    signed = live.call("POST", "/api/v1/workspaces/acme/audit/checkpoints", live.tokens["admin"])
    assert signed.status == 503 and signed.json["detail"].startswith(named), signed.body
    verdict = live.call("GET", "/api/v1/workspaces/acme/audit/verify", live.tokens["auditor"])
    assert verdict.status == 200 and (verdict.json["ok"], verdict.json["problem"]) == (False, "altered")
    assert verdict.json["detail"].startswith(named)
    ready = live.call("GET", "/readyz")
    assert ready.status == 200 and ready.json["integrity"].startswith(named), ready.body


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # PostgreSQL's bytea holds no text
def test_a_stored_state_turned_to_text_is_named_altered_and_no_answer_is_a_500_or_a_quietly_cut_export(
    live, database_url
):
    """The same bytes stored as SQLite TEXT had crashed verify (500, a traceback in the CLI) and
    the inclusion proof (500), and cut the export with chain links short under a 200."""
    evaluate = {"language": "python", "specs": ["pandas", "left-pad"]}
    ids = [d["id"] for d in live.call("POST", f"{ACME}/evaluate", live.tokens["sandbox"], evaluate).json["decisions"]]
    sealed(live, live.tokens["admin"])
    tamper = Tamperer(database_url)
    for decision in ids:
        tamper.sql(
            "UPDATE stored_events SET state = CAST(state AS TEXT) WHERE originator_id = %s", (tamper.oid(decision),)
        )
    tamper.close()
    auditor = live.tokens["auditor"]
    verdict = live.call("GET", f"{ACME}/audit/verify", auditor)
    assert verdict.status == 200 and (verdict.json["ok"], verdict.json["problem"]) == (False, "altered")
    assert verdict.json["detail"].endswith("was altered: its stored state is not bytes (stored as text)")
    proof = live.call("GET", f"{ACME}/audit/proof/inclusion?decision={ids[0]}", auditor)
    assert proof.status == 503 and "its stored state is not bytes (stored as text)" in proof.json["detail"]
    export = live.call("GET", f"{ACME}/decisions?format=jsonl&chain=true", auditor)
    assert export.status == 503 and "its stored state is not bytes" in export.json["detail"], export.body


def test_an_export_with_chain_links_refuses_a_decision_row_edited_to_say_allowed(live, database_url):
    """The export serves the decisions table; a row edited there no longer says what its sealed
    event does, and an auditor must not be handed it as evidence (503 before the answer begins)."""
    evaluate = {"language": "python", "specs": ["pandas", "left-pad"]}
    live.call("PUT", f"{ACME}/policy", live.tokens["admin"], {"python": {"deny": ["left-pad"]}})
    [_, denied] = live.call("POST", f"{ACME}/evaluate", live.tokens["sandbox"], evaluate).json["decisions"]
    sealed(live, live.tokens["admin"])
    auditor = live.tokens["auditor"]
    assert live.call("GET", f"{ACME}/decisions?format=jsonl&chain=true", auditor).status == 200
    tamper = Tamperer(database_url)
    tamper.sql(
        "UPDATE rcp_decisions SET allowed = %s, record = replace(record, '\"allowed\":false', '\"allowed\":true') "
        "WHERE id = %s",
        (True, denied["id"]),
    )
    tamper.close()
    export = live.call("GET", f"{ACME}/decisions?format=jsonl&chain=true", auditor)
    assert export.status == 503 and denied["id"] in export.json["detail"], export.body


def test_a_row_whose_filter_column_alone_was_edited_is_refused_not_listed_as_it_says(live, database_url):
    """Only `allowed` edited, the record left alone: the really allowed decision was selected by
    `allowed=false` and exported, verifying, as one more denied install (the reviewer's case)."""
    allowed = live.call("POST", f"{ACME}/evaluate", live.tokens["sandbox"], {"language": "python", "specs": ["six"]})
    [decision] = allowed.json["decisions"]
    sealed(live, live.tokens["admin"])
    tamper = Tamperer(database_url)
    tamper.sql("UPDATE rcp_decisions SET allowed = %s WHERE id = %s", (False, decision["id"]))
    tamper.close()
    auditor = live.tokens["auditor"]
    for path in ("?allowed=false&format=jsonl&chain=true", "?allowed=false", f"/{decision['id']}"):
        answer = live.call("GET", f"{ACME}/decisions{path}", auditor)
        assert answer.status == 503, (path, answer.body)
        assert f"decision {decision['id']}: its row in the decisions table no longer says" in answer.json["detail"]
        assert "(allowed)" in answer.json["detail"]


def test_a_row_moved_in_time_or_left_without_its_event_is_refused_not_listed_where_it_says(live, database_url):
    """`at` is a column a period selects by too: a decision moved to 2020 was listed, single and
    exported as a 2020 decision, years before its policy existed (a reviewer's case)."""
    ask = {"language": "python", "specs": ["six", "tox"]}
    moved, forged = (
        d["id"] for d in live.call("POST", f"{ACME}/evaluate", live.tokens["sandbox"], ask).json["decisions"]
    )
    tamper = Tamperer(database_url)
    tamper.sql("UPDATE rcp_decisions SET at = %s WHERE id = %s", ("2020-01-01T00:00:00+00:00", moved))
    tamper.sql("DELETE FROM stored_events WHERE originator_id = %s", (tamper.oid(forged),))
    tamper.close()
    auditor = live.tokens["auditor"]
    for path, words in (
        (
            "?to=2021-01-01T00:00:00Z",
            f"decision {moved}: its row in the decisions table no longer says what its event does (at)",
        ),
        ("?to=2021-01-01T00:00:00Z&format=jsonl", "(at)"),
        (f"/{moved}", "(at)"),
        (
            f"/{forged}",
            f"decision {forged}: its row in the decisions table no longer says what its event, which is gone,",
        ),
    ):
        answer = live.call("GET", f"{ACME}/decisions{path}", auditor)
        assert answer.status == 503 and words in answer.json["detail"], (path, answer.body)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_an_export_that_fails_after_it_began_is_cut_short_never_ended_as_if_whole(live, database_url, monkeypatch):
    monkeypatch.setattr(slices, "PAGE", 1)  # the older decision's page is made after the answer began
    monkeypatch.setattr(audit, "EXPORT_PAGE", 1)
    evaluate = {"language": "python", "specs": ["pandas", "left-pad"]}
    older = live.call("POST", f"{ACME}/evaluate", live.tokens["sandbox"], evaluate).json["decisions"][0]["id"]
    sealed(live, live.tokens["admin"])
    tamper = Tamperer(database_url)
    tamper.sql("UPDATE stored_events SET state = CAST(state AS TEXT) WHERE originator_id = %s", (tamper.oid(older),))
    tamper.close()
    where = urlsplit(live.url)
    connection = http.client.HTTPConnection(where.hostname, where.port, timeout=30)
    connection.request("GET", f"{ACME}/decisions?format=jsonl&chain=true", headers=bearer(live.tokens["auditor"]))
    reply = connection.getresponse()
    assert reply.status == 200
    with pytest.raises(http.client.IncompleteRead) as cut:  # no last chunk: every client sees it
        reply.read()
    connection.close()
    assert cut.value.partial.count(b"\n") == 1 and older.encode() not in cut.value.partial  # the newer one alone
