"""`runcode-policy audit ...` against real stores: checkpoints copied out, verification that exits
non-zero and names the record, and an exported slice checked without the store."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from application.store.upgrade import READ_MODEL_VERSION
from domain.advisories import FEED_ID
from interface.cli import main
from tests.support.audit_key import service_key
from tests.support.tamper import Tamperer


@pytest.fixture
def cli(database_url, tmp_path):
    runner = CliRunner()
    env = {"RUNCODE_POLICY_DATABASE_URL": database_url, "RUNCODE_POLICY_DATA_DIR": str(tmp_path / "data")}
    service_key(tmp_path / "data")  # on the service's host

    def run(*args: str):
        return runner.invoke(main, list(args), env=env, catch_exceptions=False)

    return run


@pytest.fixture
def acme(cli, open_app):
    """Workspace acme with decisions, a checkpoint signed by the CLI, and its ids."""
    cli("workspace", "create", "acme")
    app = open_app()
    answer = app.evaluation.evaluate("acme", "python", ["pandas", "left-pad"], None, {})
    done = cli("audit", "checkpoint", "-w", "acme")
    assert done.exit_code == 0, done.output
    return [d["id"] for d in answer["decisions"]]


def test_an_untouched_store_verifies_and_the_command_says_so(cli, acme):
    done = cli("audit", "verify", "-w", "acme")
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["ok"] is True
    assert "verified 4 records of acme against 1 checkpoint" in done.stderr.splitlines()
    copied = cli("audit", "checkpoints", "-w", "acme", "-o", "checkpoints.json")
    assert copied.stderr.splitlines() == ["1 checkpoint of acme copied out"]


def test_verify_exits_non_zero_and_names_the_altered_decision(cli, acme, database_url):
    tamper = Tamperer(database_url)
    tamper.replace_in_state(acme[1], '"reason":"not-on-the-deny-list"', '"reason":"matches-the-allow-list"')
    tamper.close()
    done = cli("audit", "verify", "-w", "acme")
    assert done.exit_code == 1
    assert json.loads(done.stdout)["problem"] == "altered"
    assert f"FAILED: record 4 (runcode_policy:Decision.Recorded {acme[1]} v1) was altered" in done.stderr


def test_checkpoints_copied_out_catch_a_truncation_the_store_no_longer_shows(cli, acme, database_url, tmp_path):
    copied = tmp_path / "checkpoints.json"
    assert cli("audit", "checkpoints", "-w", "acme", "-o", str(copied)).exit_code == 0
    tamper = Tamperer(database_url)
    tamper.truncate_chain("acme", keep=3)
    tamper.sql("DELETE FROM rcp_checkpoints")  # and cover the tracks inside the store
    tamper.close()
    # The store alone cannot tell a truncation (at most that the decision counts left behind
    # still count the removed decisions).
    assert json.loads(cli("audit", "verify", "-w", "acme").stdout).get("problem") != "truncated"
    done = cli("audit", "verify", "-w", "acme", "--checkpoints", str(copied), "--public-key", str(copied))
    assert done.exit_code == 1 and json.loads(done.stdout)["problem"] == "truncated"


def test_a_copy_holding_no_checkpoints_is_refused_not_passed_over(cli, acme, database_url, tmp_path):
    """Checked against nothing, a truncation went unseen and verify said ok: true."""
    export, key = tmp_path / "decisions.jsonl", tmp_path / "key.json"
    assert cli("decisions", "export", "-w", "acme", "--format", "jsonl", "--chain", "-o", str(export)).exit_code == 0
    key.write_text(cli("audit", "public-key").stdout)
    tamper = Tamperer(database_url)
    tamper.truncate_chain("acme", keep=3)
    tamper.sql("DELETE FROM rcp_checkpoints")
    tamper.close()
    for name, text in [("empty.json", "[]"), ("none.json", '{"workspace": "acme", "checkpoints": []}')]:
        empty = tmp_path / name
        empty.write_text(text)
        said = (
            f"Error: --checkpoints {empty} holds no checkpoints: it cannot check anything "
            "(copy them out with audit checkpoints)"
        )
        for command in (
            ("audit", "verify", "-w", "acme", "--checkpoints", str(empty)),
            ("audit", "verify-export", str(export), "--checkpoints", str(empty), "--public-key", str(key)),
        ):
            done = cli(*command)
            assert done.exit_code == 1 and done.stdout == "", done.output
            assert done.stderr.splitlines() == [said]


def test_a_copied_checkpoint_with_a_forged_signature_is_refused(cli, acme, tmp_path):
    document = json.loads(cli("audit", "checkpoints", "-w", "acme").stdout)
    document["checkpoints"][0]["seq"] += 1
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps(document))
    done = cli("audit", "verify", "-w", "acme", "--checkpoints", str(forged))
    assert done.exit_code == 1 and json.loads(done.stdout)["problem"] == "signature"


def test_an_export_with_links_verifies_without_the_store(cli, acme, tmp_path):
    export, copied = tmp_path / "decisions.jsonl", tmp_path / "checkpoints.json"
    assert cli("decisions", "export", "-w", "acme", "--format", "jsonl", "--chain", "-o", str(export)).exit_code == 0
    cli("audit", "checkpoints", "-w", "acme", "-o", str(copied))
    done = cli("audit", "verify-export", str(export), "--checkpoints", str(copied), "--public-key", str(copied))
    assert done.exit_code == 0, done.output
    result = json.loads(done.stdout)
    assert result["checked"] == 2 and result["not_verified"] == ["message", "delivery", "deliveries"]
    lines = export.read_text().splitlines()
    edited = [line.replace('"allowed": true', '"allowed": false') for line in lines]
    export.write_text("\n".join(edited) + "\n")
    done = cli("audit", "verify-export", str(export), "--checkpoints", str(copied), "--public-key", str(copied))
    assert done.exit_code == 1 and json.loads(done.stdout)["problem"] == "altered"


def test_an_export_line_naming_a_key_twice_fails_verification(cli, acme, tmp_path):
    """A reader taking the first `allowed` would see an allowed decision as denied, where Python's
    parser (and so the check) takes the last: such a line cannot be verified, as the API refuses it."""
    export, copied = tmp_path / "decisions.jsonl", tmp_path / "checkpoints.json"
    assert cli("decisions", "export", "-w", "acme", "--format", "jsonl", "--chain", "-o", str(export)).exit_code == 0
    cli("audit", "checkpoints", "-w", "acme", "-o", str(copied))
    lines = export.read_text().splitlines()
    twice = next(i for i, line in enumerate(lines) if '"allowed": true' in line)
    lines[twice] = '{"allowed": false, ' + lines[twice][1:]
    export.write_text("\n".join(lines) + "\n")
    done = cli("audit", "verify-export", str(export), "--checkpoints", str(copied), "--public-key", str(copied))
    assert done.exit_code == 1, done.output
    assert f"line {twice + 1}: the key 'allowed' appears twice in one object" in done.output


def test_an_export_line_holding_nan_is_no_json_not_a_key_named_twice(cli, acme, tmp_path):
    """NaN is no JSON: the line is told it is not a JSON object, as any other line that is no JSON."""
    export, copied = tmp_path / "decisions.jsonl", tmp_path / "checkpoints.json"
    assert cli("decisions", "export", "-w", "acme", "--format", "jsonl", "--chain", "-o", str(export)).exit_code == 0
    cli("audit", "checkpoints", "-w", "acme", "-o", str(copied))
    lines = export.read_text().splitlines()
    lines[0] = '{"nan": NaN, ' + lines[0][1:]
    export.write_text("\n".join(lines) + "\n")
    done = cli("audit", "verify-export", str(export), "--checkpoints", str(copied), "--public-key", str(copied))
    assert done.exit_code == 1 and "line 1 is not a JSON object" in done.output, done.output


def test_an_export_newer_than_the_checkpoints_given_verifies_what_they_cover_and_says_so(cli, acme, open_app, tmp_path):
    export, older = tmp_path / "decisions.jsonl", tmp_path / "older-checkpoints.json"
    assert cli("audit", "checkpoints", "-w", "acme", "-o", str(older)).exit_code == 0
    newer = open_app().evaluation.evaluate("acme", "python", ["numpy"], None, {})["decisions"][0]["id"]
    assert cli("audit", "checkpoint", "-w", "acme").exit_code == 0  # sealed, but not in the copy held
    assert cli("decisions", "export", "-w", "acme", "--format", "jsonl", "--chain", "-o", str(export)).exit_code == 0
    done = cli("audit", "verify-export", str(export), "--checkpoints", str(older), "--public-key", str(older))
    assert done.exit_code == 3, done.output
    result = json.loads(done.stdout)
    assert (result["ok"], result["complete"], result["checked"], result["newer"]) == (True, False, 2, 1)
    assert result["detail"].startswith("these decisions are newer than the newest checkpoint given: 1 exported")
    assert "FAILED" not in done.stderr and "export verified up to record 4" in done.stderr
    lines = export.read_text().splitlines()
    for edited in (acme[0], newer):  # what the older checkpoints cover is still checked, and so is the rest
        export.write_text("\n".join(_edited(line, edited) for line in lines) + "\n")
        done = cli("audit", "verify-export", str(export), "--checkpoints", str(older), "--public-key", str(older))
        assert done.exit_code == 1 and json.loads(done.stdout)["problem"] == "altered", done.output


def _edited(line: str, decision: str) -> str:
    return line.replace('"allowed": true', '"allowed": false') if decision in line else line


def test_the_signing_key_is_generated_once_into_the_data_directory_readable_by_its_owner_only(tmp_path):
    from interface.audit import signing_key
    from interface.settings import Settings

    settings = Settings.from_env({"RUNCODE_POLICY_DATA_DIR": str(tmp_path)})
    assert signing_key(settings, create=False) is None  # verifying never writes a key
    first = signing_key(settings)
    assert (tmp_path / "audit-signing-key.pem").stat().st_mode & 0o777 == 0o600
    assert signing_key(settings).key_id == first.key_id


def test_a_configured_key_file_that_is_missing_is_refused(tmp_path):
    from domain.errors import InvalidInputError
    from interface.audit import signing_key
    from interface.settings import Settings

    missing = tmp_path / "nowhere.pem"
    with pytest.raises(InvalidInputError, match="RUNCODE_POLICY_AUDIT_KEY_FILE"):
        signing_key(Settings.from_env({"RUNCODE_POLICY_AUDIT_KEY_FILE": str(missing)}))


def test_a_rotated_key_keeps_verifying_old_checkpoints_once_listed_as_previous(
    cli, acme, tmp_path, database_url, open_app
):
    """The README's rotation: save the public key, move the key aside, list the old public key."""
    old_public = tmp_path / "old-key.json"
    old_public.write_text(cli("audit", "public-key").stdout)
    key_file = tmp_path / "data" / "audit-signing-key.pem"
    key_file.rename(tmp_path / "retired.pem")
    service_key(tmp_path / "data")  # the service's next start makes a new one
    open_app().evaluation.evaluate("acme", "python", ["numpy"], None, {})
    assert cli("audit", "checkpoint", "-w", "acme").exit_code == 0  # signed by the new key
    done = cli("audit", "verify", "-w", "acme")
    assert done.exit_code == 1 and json.loads(done.stdout)["problem"] == "signature"  # the old one is unknown
    runner = CliRunner()
    env = {
        "RUNCODE_POLICY_DATABASE_URL": database_url,
        "RUNCODE_POLICY_DATA_DIR": str(tmp_path / "data"),
        "RUNCODE_POLICY_AUDIT_PREVIOUS_KEYS": str(old_public),
    }
    done = runner.invoke(main, ["audit", "verify", "-w", "acme"], env=env, catch_exceptions=False)
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["checkpoints"] == 2
    # An auditor's copy lists the keys the service trusts (`previous`): trusted with the copy.
    copied = tmp_path / "checkpoints.json"
    assert runner.invoke(main, ["audit", "checkpoints", "-w", "acme", "-o", str(copied)], env=env).exit_code == 0
    done = cli("audit", "verify", "-w", "acme", "--checkpoints", str(copied), "--public-key", str(copied))
    assert done.exit_code == 0, done.output


def test_with_public_key_only_the_keys_given_are_trusted_not_the_hosts(cli, acme, tmp_path, open_app):
    """The host's key file had been trusted beside the auditor's: a key put in place of the
    service's signed a checkpoint, and `--public-key` with the old key alone counted it as vouched
    for ("verified ... against 2 checkpoints")."""
    copied = tmp_path / "cp1.json"
    assert cli("audit", "checkpoints", "-w", "acme", "-o", str(copied)).exit_code == 0  # holds the old key only
    key_file = tmp_path / "data" / "audit-signing-key.pem"
    key_file.unlink()
    service_key(tmp_path / "data")  # another key where the service's was
    open_app().evaluation.evaluate("acme", "python", ["numpy"], None, {})
    assert cli("audit", "checkpoint", "-w", "acme").exit_code == 0
    newer = json.loads(cli("audit", "public-key").stdout)["key_id"]
    done = cli("audit", "verify", "-w", "acme", "--checkpoints", str(copied), "--public-key", str(copied))
    assert done.exit_code == 1 and json.loads(done.stdout)["problem"] == "signature", done.output
    assert f"checkpoint 5 is signed by key '{newer}', which is not trusted" in done.stderr
    assert cli("audit", "verify", "-w", "acme").exit_code == 1  # the host's key does not know the old one either


def test_the_deployments_own_chain_of_advisory_imports_is_checkpointed_and_verified_with_w_dash(
    cli, acme, database_url, tmp_path
):
    """The advisory feed belongs to no workspace: sealed in the chain `-`, which no command could
    verify (`-w -` was "no workspace '-'"), so an import altered in the store passed every check."""
    advisory = tmp_path / "MAL-1.json"
    affected = [{"package": {"ecosystem": "npm", "name": "evil-js"}, "versions": ["2.0.0"]}]
    advisory.write_text(json.dumps({"id": "MAL-1", "affected": affected}))
    assert cli("advisories", "import", str(advisory)).exit_code == 0
    assert json.loads(cli("audit", "checkpoint", "-w", "-").stdout)["workspace"] == "-"
    copied = tmp_path / "deployment-checkpoints.json"
    assert cli("audit", "checkpoints", "-w", "-", "-o", str(copied)).exit_code == 0
    done = cli("audit", "verify", "-w", "-", "--checkpoints", str(copied), "--public-key", str(copied))
    assert done.exit_code == 0 and json.loads(done.stdout)["checked"] == 2, done.output
    tamper = Tamperer(database_url)
    tamper.replace_in_state(str(FEED_ID), '"evil-js"', '"evil-jx"')
    tamper.close()
    done = cli("audit", "verify", "-w", "-", "--checkpoints", str(copied), "--public-key", str(copied))
    assert done.exit_code == 1 and json.loads(done.stdout)["problem"] == "altered"
    assert f"FAILED: record 2 (runcode_policy:AdvisoryFeed.Imported {FEED_ID} v2) was altered" in done.stderr
    assert cli("audit", "verify", "-w", "acme").exit_code == 0  # a workspace's chain holds none of it


def test_verify_leaves_the_store_as_found_and_refuses_read_models_of_another_version(cli, acme, database_url):
    """Opening the store had rebuilt every read model (and dropped the snapshots) when its version
    row said another version: a decision edited in the table was put back, the evidence gone, and
    verify said ok."""
    tamper = Tamperer(database_url)
    tamper.sql(
        "UPDATE rcp_decisions SET allowed = NOT allowed, reason = 'matches-the-deny-list' WHERE id = %s", (acme[0],)
    )
    tamper.sql("UPDATE rcp_read_model SET version = 1")
    tamper.sql("DELETE FROM rcp_checkpoint_notes")  # verifying had signed them again (the key is here)
    found = tamper.contents()
    try:
        done = cli("audit", "verify", "-w", "acme")
        assert done.exit_code == 1 and "Traceback" not in done.output
        assert done.stderr.startswith("Error: the store's read models are version 1, this code's are ")
        assert "nothing was verified" in done.stderr and len(done.stderr.splitlines()) == 1
        assert tamper.contents() == found
        tamper.sql("UPDATE rcp_read_model SET version = %s", (READ_MODEL_VERSION,))
        found = tamper.contents()
        done = cli("audit", "verify", "-w", "acme")  # the edit is still there to be named
        assert done.exit_code == 1 and json.loads(done.stdout)["problem"] == "altered"
        assert (
            "the decisions table differs from its sealed event in allowed: found False, the event says True: "
            f"decision {acme[0]}"
        ) in done.stderr
        assert tamper.contents() == found
    finally:
        tamper.close()


def test_verify_names_a_sealed_position_moved_back_in_one_line(cli, acme, database_url):
    """It had been `cannot be read as a runcode-policy store: UNIQUE constraint failed`."""
    tamper = Tamperer(database_url)
    tamper.sql("UPDATE rcp_chain_position SET notification_id = 1")
    tamper.close()
    done = cli("audit", "verify", "-w", "acme")
    assert done.exit_code == 1 and json.loads(done.stdout)["problem"] == "altered"
    assert done.stderr.startswith("Error: audit verification FAILED: the sealer's position (rcp_chain_position)")


TAMPERING = [
    ("UPDATE rcp_chain_heads SET seq = seq - 2", "the chain head of 'acme' (rcp_chain_heads) says record 2 "),
    ("UPDATE rcp_chain_position SET notification_id = notification_id + 1000", "(rcp_chain_position) is notification "),
    (
        "UPDATE rcp_merkle_nodes SET hash = '@@' WHERE level = 0 AND idx = 1",
        "rcp_merkle_nodes table's hash of the node ",
    ),
    ("UPDATE stored_events SET topic = NULL WHERE originator_version = 1", "was altered: its stored topic is NULL in "),
]


@pytest.mark.parametrize(("statement", "said"), TAMPERING)
def test_verify_names_what_sealing_builds_on_and_what_cannot_be_read_in_one_line(
    cli, acme, database_url, statement, said
):
    """A head or position edited had verify say ok; a value that cannot be read made it a traceback."""
    tamper = Tamperer(database_url)
    tamper.sql(statement)
    tamper.close()
    said_in_one_line(cli("audit", "verify", "-w", "acme"), said)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # PostgreSQL's uuid column holds no such text
def test_verify_names_a_chain_records_originator_that_is_no_uuid_in_one_line(cli, acme, database_url):
    """`ValueError: badly formed hexadecimal UUID string`, a traceback."""
    tamper = Tamperer(database_url)
    tamper.sql("UPDATE rcp_chain SET originator_id = 'not-a-uuid' WHERE seq = 3")
    tamper.close()
    said = "the rcp_chain table's originator_id of record 3 of 'acme' is 'not-a-uuid', not a UUID: it was altered"
    said_in_one_line(cli("audit", "verify", "-w", "acme"), said)


def said_in_one_line(done, said: str) -> None:
    assert done.exit_code == 1 and "Traceback" not in done.output and json.loads(done.stdout)["problem"] == "altered"
    assert done.stderr.startswith("Error: audit verification FAILED: ") and said in done.stderr, done.stderr
    assert len(done.stderr.splitlines()) == 1


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # PostgreSQL's bytea holds no text
def test_a_stored_state_turned_to_text_is_one_line_for_verify_and_export_never_a_traceback(
    cli, acme, database_url, tmp_path
):
    tamper = Tamperer(database_url)
    tamper.sql("UPDATE stored_events SET state = CAST(state AS TEXT) WHERE originator_id = %s", (tamper.oid(acme[0]),))
    tamper.close()
    done = cli("audit", "verify", "-w", "acme")
    assert done.exit_code == 1 and json.loads(done.stdout)["problem"] == "altered"
    assert done.stderr.endswith(f"{acme[0]} v1) was altered: its stored state is not bytes (stored as text)\n")
    export = tmp_path / "slice.jsonl"
    done = cli("decisions", "export", "-w", "acme", "--format", "jsonl", "--chain", "-o", str(export))
    assert done.exit_code == 1 and "Traceback" not in done.output and not export.exists()
    assert "its stored state is not bytes (stored as text)" in done.stderr
