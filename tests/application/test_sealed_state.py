"""Enforcement reads only sealed state: what someone with write access to the database (and not
the service's key) changes outside the event log is never used, on SQLite and PostgreSQL alike.
Each tamper is raw SQL on the store (tests/support/tamper.py), as that attacker would do it."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

import pytest

from application.chain import AuditKey
from application.decision_writer import StoreUnavailableError
from domain.advisories import FEED_ID
from domain.policy import policy_id
from tests.support.recorded import download
from tests.support.tamper import Tamperer

# Enough entries that one Save crosses the snapshot interval: its snapshot is what a new process loads.
DENY = "\n".join(["beta", *(f"pkg{i}" for i in range(60))])


@pytest.fixture
def tamper(database_url):
    tamperer = Tamperer(database_url)
    yield tamperer
    tamperer.close()


@pytest.fixture
def snapshotted(app):
    app.chain.use_key(AuditKey.generate())
    app.create_workspace("acme", by="founder")
    app.save_policy("acme", {"python": {"mode": "denylist", "deny": DENY}}, by="alice", note="no beta")
    app.chain.checkpoint("acme")
    return app


def reason(app, name: str) -> tuple[int, str]:
    answer = app.evaluation.evaluate("acme", "python", [name], None, {})
    return answer["policy_version"], answer["decisions"][0]["reason"]


def test_a_snapshot_edited_in_the_store_is_never_enforced_and_raises_one_alarm(snapshotted, open_app, tamper, caplog):
    version, _ = reason(snapshotted, "beta")
    tamper.replace_in_snapshot(str(policy_id("acme")), '"beta",', "")
    fresh = open_app()  # another worker: its rules cache is empty, it loads the snapshot
    with caplog.at_level(logging.ERROR, logger="runcode_policy.integrity"):
        assert reason(fresh, "beta") == (version, "matches-the-deny-list")
        assert fresh.policy("acme", at=datetime.now(UTC))["python"]["deny"][0] == "beta"
        assert reason(fresh, "beta") == (version, "matches-the-deny-list")
    alarms = [r.getMessage() for r in caplog.records if r.name == "runcode_policy.integrity"]
    assert len(alarms) == 1 and "did not verify" in alarms[0] and f"policy version {version}" in alarms[0], alarms
    assert fresh.integrity.counts["snapshot"] == 1 and "did not verify" in fresh.integrity.first


def test_a_policy_event_edited_after_its_snapshot_is_never_enforced_and_raises_the_alarm(snapshotted, open_app, tamper):
    """The events replayed after the snapshot are checked against the chain as the snapshot is:
    an entry renamed in its sealed event (requests denied, now flask) is not judged on."""
    snapshotted.change_policy(
        "acme", [{"action": "add", "language": "python", "list": "deny", "entries": ["requests"]}], by="alice"
    )
    snapshotted.chain.seal()
    assert reason(snapshotted, "requests")[1] == "matches-the-deny-list"
    tamper.replace_in_state(str(policy_id("acme")), '"name":"requests"', '"name":"flask"')
    fresh = open_app()  # another worker: its rules cache is empty, it replays the events after the snapshot
    with pytest.raises(StoreUnavailableError, match="no longer hashes to its sealed value"):
        reason(fresh, "requests")
    assert fresh.integrity.counts["event"] == 1 and "altered" in fresh.integrity.first


def test_a_snapshot_without_a_seal_is_not_used(snapshotted, open_app, tamper):
    tamper.sql("DELETE FROM stored_events WHERE topic = 'runcode_policy:SnapshotSeal.Sealed'")
    tamper.replace_in_snapshot(str(policy_id("acme")), '"beta",', "")
    fresh = open_app()
    assert reason(fresh, "beta")[1] == "matches-the-deny-list"
    assert "has no seal" in fresh.integrity.first or "gone from the store" in fresh.integrity.first


@pytest.mark.parametrize(
    ("edit", "unseal", "refused"),
    [(False, False, ()), (True, False, ("did not verify",)), (True, True, ("has no seal", "gone from the store"))],
    ids=["untouched", "edited", "edited-and-unsealed"],
)
def test_the_policy_at_an_instant_uses_a_snapshot_only_as_its_seal_says(
    snapshotted, open_app, tamper, edit, unseal, refused
):
    """The point-in-time read brings the snapshot's seal in its own statement: what it finds
    there decides as a separate check would, in a process that never checked the snapshot."""
    if unseal:
        tamper.sql("DELETE FROM stored_events WHERE topic = 'runcode_policy:SnapshotSeal.Sealed'")
    if edit:
        tamper.replace_in_snapshot(str(policy_id("acme")), '"beta",', "")
    fresh = open_app()
    assert fresh.policy("acme", at=datetime.now(UTC))["python"]["deny"][0] == "beta"  # its first read
    if not refused:
        assert fresh.integrity.first is None
    else:
        assert fresh.integrity.counts["snapshot"] == 1
        assert any(words in fresh.integrity.first for words in refused), fresh.integrity.first


def test_an_untouched_snapshot_is_used_without_an_alarm(snapshotted, open_app):
    fresh = open_app()
    assert reason(fresh, "beta")[1] == "matches-the-deny-list"
    assert fresh.policy("acme", at=datetime.now(UTC))["python"]["deny"][0] == "beta"
    assert fresh.integrity.first is None
    assert fresh.chain.verify("acme", keys=snapshotted.chain.trusted_keys())["ok"]


@pytest.mark.parametrize("tampering", ["altered", "deleted"])
def test_an_advisory_feed_altered_or_deleted_in_the_store_refuses_every_question_not_the_first_only(
    snapshotted, open_app, tamper, tampering
):
    """Read as empty (deleted) or dropped between refreshes (altered), the feed had let known
    malware through."""
    record = {"id": "MAL-1", "affected": [{"package": {"ecosystem": "PyPI", "name": "evil"}, "versions": ["1.0"]}]}
    snapshotted.advisories.import_records([record], by="alice")
    snapshotted.chain.seal()
    if tampering == "altered":
        tamper.replace_in_state(str(FEED_ID), '"1.0"', '"1.1"')
    else:
        tamper.sql("DELETE FROM stored_events WHERE originator_id = %s", (tamper.oid(str(FEED_ID)),))
    fresh = open_app()
    for _ in range(3):
        with pytest.raises(StoreUnavailableError, match=f"event . .*{tampering}"):
            fresh.advisories.affecting("python", "evil", "1.0")
    assert tampering in fresh.integrity.first


# -- tokens: what authentication reads ---------------------------------------------------------------
@pytest.fixture
def sandbox(snapshotted) -> dict:
    return snapshotted.issue_token("acme", "ci", "sandbox", by="alice")


def test_a_token_role_raised_in_the_tokens_table_is_refused_before_it_works(snapshotted, sandbox, open_app, tamper):
    tamper.sql("UPDATE rcp_tokens SET role = 'owner' WHERE name = 'ci'")
    fresh = open_app()
    assert fresh.authenticate(sandbox["token"]) is None
    assert "role is 'owner', sealed 'sandbox'" in fresh.integrity.first
    assert fresh.integrity.counts["token"] == 1


def test_a_token_role_raised_in_its_event_is_refused_once_sealed(snapshotted, sandbox, open_app, tamper):
    snapshotted.chain.seal()
    tamper.replace_in_state(sandbox["id"], '"role":"sandbox"', '"role":"owner"')
    tamper.sql("UPDATE rcp_tokens SET role = 'owner' WHERE name = 'ci'")
    fresh = open_app()
    assert fresh.authenticate(sandbox["token"]) is None
    assert "no longer hashes to its sealed value (altered)" in fresh.integrity.first


def test_a_token_added_to_the_tokens_table_alone_authenticates_nobody(snapshotted, open_app, tamper):
    from domain.token import digest, new_secret, token_id

    secret = new_secret()
    tamper.sql(
        "INSERT INTO rcp_tokens (id, workspace, name, role, issued_at, issued_by, secret_digest) "
        "SELECT %s, workspace, 'backdoor', 'owner', issued_at, issued_by, %s FROM rcp_tokens LIMIT 1",
        (str(token_id(digest(secret))), digest(secret)),
    )
    assert open_app().authenticate(secret) is None


def test_a_revocation_undone_in_the_tokens_table_stops_even_a_remembered_caller(snapshotted, sandbox, tamper):
    from application.store.guards import StaleCaller

    caller = snapshotted.authenticate(sandbox["token"])  # remembered by this process from now on
    snapshotted.evaluation.evaluate("acme", "python", ["numpy"], head=caller["head_version"])
    snapshotted.revoke_token("acme", sandbox["id"], by="alice")
    tamper.sql("UPDATE rcp_tokens SET revoked_at = NULL, revoked_by = NULL WHERE name = 'ci'")
    remembered = snapshotted.authenticate(sandbox["token"], remembered=True)
    with pytest.raises(StaleCaller):  # nothing recorded: the API judges again, the slow way
        snapshotted.evaluation.evaluate("acme", "python", ["torch"], head=None, remembered=remembered["id"])
    assert snapshotted.authenticate(sandbox["token"]) is None
    assert "revoked is False, sealed True" in snapshotted.integrity.first


def test_a_revocation_whose_event_was_deleted_still_stops_the_token(snapshotted, sandbox, tamper):
    snapshotted.revoke_token("acme", sandbox["id"], by="alice")
    snapshotted.chain.seal()
    tamper.delete_event(sandbox["id"], 2)
    tamper.sql("UPDATE rcp_tokens SET revoked_at = NULL, revoked_by = NULL WHERE name = 'ci'")
    assert snapshotted.authenticate(sandbox["token"]) is None
    assert "gone from the store (deleted)" in snapshotted.integrity.first


# -- runs: index tokens ------------------------------------------------------------------------------
@pytest.fixture
def run(snapshotted, sandbox) -> dict:
    caller = snapshotted.authenticate(sandbox["token"])
    return snapshotted.index.runs.start("acme", caller, {"sandbox": "s1"}, seconds=60)


def test_a_run_forged_in_the_runs_table_is_no_index_token(snapshotted, run, tamper):
    from domain.run import new_run_secret, run_id
    from domain.token import digest

    assert snapshotted.index.authenticate(run["token"]).run == run["id"]  # the real one works
    secret = new_run_secret()
    tamper.sql(
        "INSERT INTO rcp_runs SELECT %s, workspace, started_at, expires_at, started_by, started_by_name, context, %s "
        "FROM rcp_runs WHERE id = %s",
        (str(run_id(digest(secret))), digest(secret), run["id"]),
    )
    assert snapshotted.index.authenticate(secret) is None


def test_a_run_expiry_pushed_back_in_the_runs_table_is_refused(snapshotted, run, tamper):
    tamper.sql("UPDATE rcp_runs SET expires_at = %s WHERE id = %s", ("2999-01-01T00:00:00.000000+00:00", run["id"]))
    assert snapshotted.index.authenticate(run["token"]) is None
    assert f"run {run['id']} differs from its sealed events: expires_at" in snapshotted.integrity.first


def test_a_run_whose_starter_was_swapped_in_the_runs_table_is_refused(snapshotted, run, tamper):
    owner = snapshotted.readmodel.tokens("acme")[0]["id"]
    tamper.sql("UPDATE rcp_runs SET started_by = %s WHERE id = %s", (owner, run["id"]))
    assert snapshotted.index.authenticate(run["token"]) is None
    assert "started_by" in snapshotted.integrity.first


# -- audit verify holds the signed notes, the stored tree and the snapshots against the chain ----------
def test_audit_verify_names_a_snapshot_edited_in_the_store_before_anything_loads_it(snapshotted, tamper):
    tamper.replace_in_snapshot(str(policy_id("acme")), '"beta",', "")
    result = snapshotted.chain.verify("acme")
    assert not result["ok"] and result["problem"] == "altered", result
    assert "did not verify: its stored bytes differ from the sealed digest" in result["detail"]
    assert result["record"]["originator_id"] == str(policy_id("acme"))


def forged_note(app, checkpoint: dict, key: AuditKey) -> str:
    """The checkpoint's note over a root of no history, signed with `key` under its origin."""
    from application.chain import notes

    origin = notes.origin_of(checkpoint["note"])
    return notes.sign(notes.checkpoint_text(origin, checkpoint["seq"], bytes(32)), origin, key.public, key.sign)


@pytest.mark.parametrize("holds_the_key", [False, True], ids=["database-write", "with-the-key"])
def test_audit_verify_names_a_checkpoint_note_whose_root_was_replaced(snapshotted, tamper, holds_the_key):
    checkpoint = snapshotted.chain.checkpoint("acme")
    assert snapshotted.chain.verify("acme")["ok"]
    key = snapshotted.chain.key if holds_the_key else AuditKey.generate()
    note = forged_note(snapshotted, checkpoint, key)
    tamper.sql("UPDATE rcp_checkpoint_notes SET note = %s WHERE size = %s", (note, checkpoint["seq"]))
    result = snapshotted.chain.verify("acme")
    assert not result["ok"] and result["record"]["seq"] == checkpoint["seq"], result
    if holds_the_key:  # signed as the service signs: only the recomputed tree tells
        assert result["problem"] == "checkpoint-mismatch"
        assert "not the Merkle root recomputed from the chain" in result["detail"]
    else:
        assert result["problem"] == "signature" and "not signed by a trusted key" in result["detail"]


def test_audit_verify_names_a_stored_merkle_node_that_was_edited(snapshotted, tamper):
    checkpoint = snapshotted.chain.checkpoint("acme")
    tamper.sql("UPDATE rcp_merkle_nodes SET hash = %s WHERE workspace = 'acme'", ("00" * 32,))
    result = snapshotted.chain.verify("acme")
    assert not result["ok"] and result["problem"] == "altered", result
    assert "stored Merkle tree differs" in result["detail"] and result["record"]["seq"] == checkpoint["seq"]


def test_audit_verify_names_a_stored_leaf_no_checkpoints_root_reads(snapshotted, tamper):
    """A root reads only the perfect subtrees of its size; the leaves below them are read by the
    inclusion proofs alone, so an edited leaf is found by recomputing every stored node."""
    snapshotted.chain.checkpoint("acme")
    tamper.sql("UPDATE rcp_merkle_nodes SET hash = %s WHERE workspace = 'acme' AND level = 0 AND idx = 1", ("00" * 32,))
    result = snapshotted.chain.verify("acme")
    assert not result["ok"] and result["problem"] == "altered", result
    assert "node at level 0, index 1 differs" in result["detail"]


def test_a_tree_of_thousands_of_records_verifies_whole(snapshotted):
    """Past SQLite's 500 terms in one compound statement: the stored nodes are read in ranges."""
    for batch in range(6):
        snapshotted.evaluation.evaluate("acme", "python", [f"pkg{batch}-{n}" for n in range(400)], None, {})
    snapshotted.chain.checkpoint("acme")
    result = snapshotted.chain.verify("acme")
    assert result["ok"] and result["checked"] > 2400, result


# -- console sessions: what lets a browser in ----------------------------------------------------------
@pytest.fixture
def signed_in(snapshotted) -> dict:
    """An auditor token signed in to the console (its session id, as the cookie holds it)."""
    auditor = snapshotted.issue_token("acme", "auditing", "auditor", by="alice")
    caller = snapshotted.authenticate(auditor["token"])
    return {"token": auditor, "sid": snapshotted.sessions.start(caller, timedelta(hours=1))}


def session_row(sid: str) -> str:
    from domain.session import console_session_id
    from domain.token import digest

    return str(console_session_id(digest(sid)))


def test_an_untouched_session_lets_its_token_in_until_signed_out(snapshotted, signed_in):
    assert snapshotted.sessions.caller(signed_in["sid"])["role"] == "auditor"
    snapshotted.sessions.end(signed_in["sid"])
    assert snapshotted.sessions.caller(signed_in["sid"]) is None
    assert snapshotted.integrity.first is None


def test_a_signed_out_session_revived_in_the_sessions_table_lets_nobody_in(snapshotted, signed_in, tamper):
    snapshotted.sessions.end(signed_in["sid"])
    tamper.sql("UPDATE rcp_console_sessions SET ended_at = NULL WHERE id = %s", (session_row(signed_in["sid"]),))
    assert snapshotted.sessions.caller(signed_in["sid"]) is None
    assert "console_sessions table's row" in snapshotted.integrity.first
    assert "ended is False, sealed True" in snapshotted.integrity.first


def test_a_sign_out_whose_event_was_deleted_still_ends_the_session(snapshotted, signed_in, tamper):
    snapshotted.sessions.end(signed_in["sid"])
    snapshotted.chain.seal()
    tamper.delete_event(session_row(signed_in["sid"]), 2)
    tamper.sql("UPDATE rcp_console_sessions SET ended_at = NULL WHERE id = %s", (session_row(signed_in["sid"]),))
    assert snapshotted.sessions.caller(signed_in["sid"]) is None
    assert "gone from the store (deleted)" in snapshotted.integrity.first


def test_a_session_moved_to_an_owner_token_in_the_sessions_table_is_refused(snapshotted, signed_in, tamper):
    owner = next(t["id"] for t in snapshotted.readmodel.tokens("acme") if t["role"] == "owner")
    tamper.sql("UPDATE rcp_console_sessions SET token_id = %s", (owner,))
    assert snapshotted.sessions.caller(signed_in["sid"]) is None
    assert "token_id is" in snapshotted.integrity.first


def test_a_sessions_token_role_raised_in_the_tokens_table_is_refused(snapshotted, signed_in, tamper):
    tamper.sql("UPDATE rcp_tokens SET role = 'owner' WHERE name = 'auditing'")
    assert snapshotted.sessions.caller(signed_in["sid"]) is None
    assert "role is 'owner', sealed 'auditor'" in snapshotted.integrity.first


def test_a_session_expiry_pushed_back_in_the_sessions_table_is_refused(snapshotted, signed_in, tamper):
    tamper.sql("UPDATE rcp_console_sessions SET expires_at = %s", ("2999-01-01T00:00:00.000000+00:00",))
    assert snapshotted.sessions.caller(signed_in["sid"]) is None
    assert "expires_at" in snapshotted.integrity.first


def test_a_session_added_to_the_sessions_table_alone_lets_nobody_in(snapshotted, signed_in, tamper):
    forged = "forged-session-id"
    tamper.sql(
        "INSERT INTO rcp_console_sessions SELECT %s, workspace, token_id, started_at, expires_at, NULL "
        "FROM rcp_console_sessions",
        (session_row(forged),),
    )
    assert snapshotted.sessions.caller(forged) is None


# -- what the operator sees ---------------------------------------------------------------------------
def test_readiness_and_metrics_report_a_snapshot_that_did_not_verify(snapshotted, open_app, tamper, tmp_path):
    from interface import create_app
    from tests.support.http_client import LiveServer

    tamper.replace_in_snapshot(str(policy_id("acme")), '"beta",', "")
    fresh = open_app()
    server = LiveServer(create_app(env={"RUNCODE_POLICY_DATA_DIR": str(tmp_path)}, governance=fresh))
    try:
        assert server.call("GET", "/readyz").json == {"status": "ready"}
        assert reason(fresh, "beta")[1] == "matches-the-deny-list"
        ready = server.call("GET", "/readyz")
        assert ready.status == 200 and "did not verify" in ready.json["integrity"]
        scraped = server.call("GET", "/metrics").body.decode()
        assert 'runcode_policy_integrity_alarms_total{kind="snapshot"}' in scraped
    finally:
        server.close()


# -- audit verify names the first row of any read model that differs ----------------------------------
@pytest.fixture
def everything(snapshotted, sandbox, run):
    """Requests (one approved, one open, with two askers), an exception, runs and counted decisions."""
    app = snapshotted
    app.evaluation.evaluate("acme", "python", ["beta", "numpy"], None, {"sandbox": "s1"})
    first = app.access.file_request("acme", "python", "beta", "tests need it", {}, by="ci", token_id=sandbox["id"])
    app.access.file_request("acme", "python", "beta", "me too", {}, by="alice", token_id="t-alice")
    app.access.approve_request("acme", first["id"], by="alice", duration="P7D", note="ok", lift_deny=True)
    app.access.file_request("acme", "python", "gamma", "also", {}, by="ci", token_id=sandbox["id"])
    auditor = app.issue_token("acme", "auditing", "auditor", by="alice")
    signed_out = app.sessions.start(app.authenticate(auditor["token"]), timedelta(hours=1))
    app.sessions.end(signed_out)
    app.sessions.start(app.authenticate(auditor["token"]), timedelta(hours=1))  # still signed in
    download(app, "acme", "python", "alpha", "1.0", "alpha-1.0.tar.gz", "s1", "2026-11-30T00:00:00.000000Z")
    app.chain.checkpoint("acme")
    assert app.chain.verify("acme")["ok"], app.chain.verify("acme")
    return app


TABLE_TAMPERING = [
    ("runs", "UPDATE rcp_runs SET expires_at = '2999-01-01T00:00:00.000000+00:00'", "expires_at"),
    ("runs", "DELETE FROM rcp_runs", None),
    ("requests", "UPDATE rcp_requests SET justification = 'forged' WHERE status = 'approved'", "justification"),
    ("requests", "UPDATE rcp_requests SET decided_by = 'mallory' WHERE status = 'approved'", "decided_by"),
    ("requests", "UPDATE rcp_requests SET status = 'rejected' WHERE status = 'open'", "status"),
    (
        "request_askers",
        "UPDATE rcp_request_askers SET justification = 'forged' WHERE by_actor = 'alice'",
        "justification",
    ),
    ("exceptions", "UPDATE rcp_exceptions SET expires_at = NULL", "expires_at"),
    ("exceptions", "DELETE FROM rcp_exceptions", None),
    ("decision_counts", "DELETE FROM rcp_decision_counts WHERE allowed = FALSE", None),  # the denials erased
    ("decision_counts", "UPDATE rcp_decision_counts SET installs = 0 WHERE allowed = FALSE", "installs"),
    ("outcome_days", "UPDATE rcp_outcome_days SET installs = 0", "installs"),
    # a fetched version's facts made older, so a drafted cooldown would not count it
    ("impact_versions", "UPDATE rcp_impact_versions SET uploaded_at = '2001-01-01T00:00:00.000000Z'", "uploaded_at"),
    ("console_sessions", "UPDATE rcp_console_sessions SET ended_at = NULL", "ended_at"),  # signed out, revived
    (
        "console_sessions",
        "UPDATE rcp_console_sessions SET expires_at = '2999-01-01T00:00:00.000000+00:00'",
        "expires_at",
    ),
    (
        "console_sessions",
        "UPDATE rcp_console_sessions SET token_id = (SELECT id FROM rcp_tokens WHERE role = 'owner')",
        "token_id",
    ),
    ("console_sessions", "DELETE FROM rcp_console_sessions WHERE ended_at IS NULL", None),
    ("workspaces", "UPDATE rcp_workspaces SET created_by = 'mallory'", "created_by"),
    ("workspaces", "UPDATE rcp_workspaces SET created_at = '2001-01-01T00:00:00.000000+00:00'", "created_at"),
    ("token_names", "DELETE FROM rcp_token_names WHERE name_key = 'ci'", None),  # the name free to give again
]


@pytest.mark.parametrize(("table", "statement", "column"), TABLE_TAMPERING)
def test_audit_verify_names_the_first_read_model_row_that_differs(everything, tamper, table, statement, column):
    tamper.sql(statement)
    result = everything.chain.verify("acme")
    assert not result["ok"] and result["detail"].startswith(f"the {table} table"), result
    assert (result["row"]["table"], result["row"]["column"]) == (table, column), result
