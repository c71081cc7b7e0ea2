"""The audit-integrity routes on the real service: the public key without authentication,
checkpoints and verification for auditors and above, on-demand checkpoints for admins, and an
export with chain links that verifies against what the API publishes."""

from __future__ import annotations

import http.client
import json
import os
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor, as_completed
from urllib.parse import urlsplit

import pytest

from application import audit
from application.chain import slices
from application.chain.signing import key_id, parse_public_key
from application.chain.slices import verify_slice
from domain.advisories import FEED_ID
from tests.support.service import served
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
    while True:
        verdict = live.call("GET", f"{ACME}/audit/verify", live.tokens["auditor"])
        if verdict.status == 200 and not verdict.json["unsealed"]:
            break
        assert time.monotonic() < deadline, "the background sealer did not catch up within 60 s"
        time.sleep(int(verdict.headers["retry-after"]) if verdict.status == 429 else 0.05)  # 429: their own rate


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


def test_a_position_moved_forward_is_named_by_checkpoint_readiness_and_verify_and_nothing_is_signed_past_it(
    live, app, database_url
):
    """The reviewer's run: the position moved past every event, three denials answered, and a
    checkpoint signed without them (201), /readyz ready; then the denials could be rewritten as
    allowed, the position put back, and the rewritten history was sealed and verified."""
    evaluate = {"language": "python", "specs": ["scipy"]}
    live.call("PUT", f"{ACME}/policy", live.tokens["admin"], {"python": {"deny": ["scipy"]}})
    signed = sealed(live, live.tokens["admin"])
    tamper = Tamperer(database_url)
    moved = app.recorder.max_notification_id() + 5000
    tamper.sql("UPDATE rcp_chain_position SET notification_id = %s", (moved,))
    tamper.close()
    for _ in range(3):
        answer = live.call("POST", f"{ACME}/evaluate", live.tokens["sandbox"], evaluate)
        assert answer.status == 200 and answer.json["allowed"] is False, answer.body
    named = f"the sealer's position (rcp_chain_position) is notification {moved}, ahead of notification "
    named_by_checkpoint_readiness_and_verify(live, named)
    page = live.call("GET", f"{ACME}/audit/checkpoints", live.tokens["auditor"]).json
    assert page["checkpoints"][-1]["seq"] == signed["seq"]  # nothing signed without the denials


def test_a_head_edited_is_named_by_checkpoint_readiness_and_verify_never_a_500(live, database_url):
    """The reviewer's run: with rcp_chain_heads wound back, every sealing round failed on the
    chain's unique key; the on-demand checkpoint was a 500, /readyz ready, verify ok."""
    evaluate = {"language": "python", "specs": ["pandas"]}
    live.call("POST", f"{ACME}/evaluate", live.tokens["sandbox"], evaluate)
    sealed(live, live.tokens["admin"])
    tamper = Tamperer(database_url)
    tamper.sql("UPDATE rcp_chain_heads SET seq = seq - 5 WHERE workspace = 'acme'")
    tamper.close()
    assert live.call("POST", f"{ACME}/evaluate", live.tokens["sandbox"], evaluate).status == 200
    named = "the chain head of 'acme' (rcp_chain_heads) says record "
    named_by_checkpoint_readiness_and_verify(live, named)


@pytest.mark.parametrize("value", ["topic", "merkle node"])
def test_a_stored_value_that_cannot_be_read_is_named_altered_never_a_500(live, database_url, value):
    """The reviewer's statements: each made verify a 500 (AttributeError in the canonical bytes,
    ValueError reading the stored tree)."""
    evaluate = {"language": "python", "specs": ["pandas", "six"]}
    [decision, _] = live.call("POST", f"{ACME}/evaluate", live.tokens["sandbox"], evaluate).json["decisions"]
    sealed(live, live.tokens["admin"])
    tamper = Tamperer(database_url)
    if value == "topic":
        tamper.sql("UPDATE stored_events SET topic = NULL WHERE {nid} = %s", (tamper.notification_of(decision["id"]),))
        named = f"({decision['id']} v1) was altered: its stored topic is NULL in {tamper.events}, not text"
    else:
        tamper.sql("UPDATE rcp_merkle_nodes SET hash = '@@' WHERE level = 0 AND idx = 1")
        named = "the rcp_merkle_nodes table's hash of the node at level 0, index 1 of 'acme' is '@@'"
    tamper.close()
    verdict = live.call("GET", f"{ACME}/audit/verify", live.tokens["auditor"])
    assert verdict.status == 200 and (verdict.json["ok"], verdict.json["problem"]) == (False, "altered"), verdict.body
    assert named in verdict.json["detail"]


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


# -- what verifications may take -------------------------------------------------------------------
def test_a_workspace_verifies_one_at_a_time_per_worker_others_go_on_and_healthz_and_evaluate_answer(tmp_path):
    """A verification is seconds of CPU on a large chain: ten by one auditor token held every
    thread of the service, and /healthz and /evaluate waited up to a minute (the gate, denying
    after 10 s, denied every sandbox meanwhile). A worker runs few at once, in its slots, and one
    workspace one of them, whichever of its tokens asks: its others are 429 at once, and another
    workspace's verification (its owner verifying back to back had kept every other at 429) runs."""
    from application.governance import Governance
    from application.index import registry_spec
    from application.store import store_env
    from domain.decision import Decision, DecisionRecord, Verdict

    url = f"sqlite:///{tmp_path / 'store.db'}"
    app = Governance(env=store_env(url))
    app.create_workspace("acme", by="founder")
    app.create_workspace("other", by="founder")
    auditors = [app.issue_token("acme", f"audit-{i}", "auditor", by="founder")["token"] for i in range(2)]
    other = app.issue_token("other", "audit", "auditor", by="founder")["token"]
    sandbox = app.issue_token("acme", "sbx", "sandbox", by="founder")["token"]
    verdict = Verdict(True, "not-on-the-deny-list")
    for batch in range(26):  # 13,000 decisions: a verification takes seconds
        records = [
            DecisionRecord.for_spec(registry_spec("python", f"p{batch}-{i}"), verdict, 0, {}) for i in range(500)
        ]
        app.writer.record(*(Decision(workspace="acme", record=r.to_dict()) for r in records))
    app.close()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RUNCODE_POLICY_")}
    with (
        served({**env, "RUNCODE_POLICY_DATABASE_URL": url}, workers=1, threads=4) as (base, _),
        ThreadPoolExecutor(8) as pool,
    ):
        asked = [pool.submit(_get, f"{base}{ACME}/audit/verify", auditors[i % 2], timeout=300) for i in range(6)]
        refused = []
        for future in as_completed(asked):  # the refusals, without waiting for the one that runs
            refused += [future.result()] if future.result()[0] == 429 else []
            if len(refused) == 5:
                break
        assert len(refused) == 5, [f.result()[0] for f in asked]
        for status, headers, body in refused:
            assert status == 429 and int(headers["retry-after"]) >= 1
            assert headers["content-type"] == "application/problem+json"
            assert json.loads(body)["detail"] == (
                "one of this workspace's verifications is in progress on this worker; retry when it has finished"
            )
        # While acme's goes on: another workspace verifies, and the service's own endpoints
        # answer (within the gate's deadline).
        assert _get(f"{base}/api/v1/workspaces/other/audit/verify", other)[0] == 200
        assert _get(base + "/healthz", None)[0] == 200
        evaluate = json.dumps({"language": "python", "specs": ["six"]}).encode()
        assert _get(f"{base}{ACME}/evaluate", sandbox, evaluate)[0] == 200
        [(status, _, body)] = [future.result() for future in asked if future.result()[0] != 429]
        assert status == 200 and json.loads(body)["ok"] is True


def test_verifications_past_the_per_token_rate_are_429_with_retry_after(live):
    from domain.limits import VERIFIES_PER_MINUTE

    auditor, started, allowed = live.tokens["auditor"], time.monotonic(), 0
    while (reply := live.call("GET", f"{ACME}/audit/verify", auditor)).status == 200:
        allowed += 1
        assert allowed <= 2 * VERIFIES_PER_MINUTE
    refilled = (time.monotonic() - started) * VERIFIES_PER_MINUTE / 60
    assert VERIFIES_PER_MINUTE <= allowed <= VERIFIES_PER_MINUTE + refilled + 1
    assert reply.status == 429 and int(reply.headers["retry-after"]) >= 1
    assert reply.json["detail"].startswith(
        f"too many verifications with this token: at most {VERIFIES_PER_MINUTE} a minute per worker; retry in "
    )
    assert live.call("GET", "/api/v1/audit/verify", auditor).status == 429  # the deployment's route: one bucket
    assert live.call("GET", f"{ACME}/audit/verify", live.tokens["owner"]).status == 200  # per token


def _get(url: str, token: str | None, body: bytes | None = None, timeout: float = 10) -> tuple[int, dict, bytes]:
    """(status, headers in lower case, body), as any client sees them; by default within the
    gate's own deadline (10 s), past which it denies."""
    request = urllib.request.Request(url, data=body, method="POST" if body else "GET")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    if body:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            return reply.status, {k.lower(): v for k, v in reply.headers.items()}, reply.read()
    except urllib.error.HTTPError as error:
        return error.code, {k.lower(): v for k, v in error.headers.items()}, error.read()


def named_by_checkpoint_readiness_and_verify(live, named: str) -> None:
    """The on-demand checkpoint refuses (503), /readyz and verify name the same finding."""
    checkpoint = live.call("POST", f"{ACME}/audit/checkpoints", live.tokens["admin"])
    assert checkpoint.status == 503 and checkpoint.json["detail"].startswith(named), checkpoint.body
    ready = live.call("GET", "/readyz")
    assert ready.status == 200 and ready.json["integrity"].startswith(named), ready.body
    verdict = live.call("GET", f"{ACME}/audit/verify", live.tokens["auditor"])
    assert verdict.status == 200 and (verdict.json["ok"], verdict.json["problem"]) == (False, "altered")
    assert verdict.json["detail"].startswith(named)
