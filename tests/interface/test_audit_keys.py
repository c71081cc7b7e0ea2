"""Where the signing key lives: a command that signs instead of a key file (the key on another
mount, never in the data directory), and public keys every host trusts, so `audit verify` from a
host without the key does not read as tampering."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from application.chain import AuditKey, notes, parse_public_key
from interface.cli import main
from tests.support.audit_key import service_key

SIGNER = """
import base64, sys
from cryptography.hazmat.primitives import serialization
key = serialization.load_pem_private_key(open(sys.argv[1], "rb").read(), password=None)
sys.stdout.write(base64.b64encode(key.sign(sys.stdin.buffer.read())).decode())
"""


@pytest.fixture
def elsewhere(tmp_path) -> Path:
    """Another mount: the private key and the command that signs with it; its public key beside."""
    folder = tmp_path / "key-mount"
    folder.mkdir()
    key = AuditKey.generate()
    (folder / "key.pem").write_text(key.to_pem())
    (folder / "sign.py").write_text(SIGNER)
    (tmp_path / "public.json").write_text(json.dumps(key.public_document()))
    return folder


def cli_env(database_url, data_dir, **extra) -> dict:
    return {"RUNCODE_POLICY_DATABASE_URL": database_url, "RUNCODE_POLICY_DATA_DIR": str(data_dir), **extra}


def test_a_signer_command_signs_checkpoints_and_no_key_is_written_to_the_data_directory(
    database_url, tmp_path, elsewhere, open_app
):
    env = cli_env(
        database_url,
        tmp_path / "data",
        RUNCODE_POLICY_AUDIT_SIGNER=f"{sys.executable} {elsewhere / 'sign.py'} {elsewhere / 'key.pem'}",
        RUNCODE_POLICY_AUDIT_SIGNER_PUBLIC_KEY=str(tmp_path / "public.json"),
    )
    runner = CliRunner()
    assert runner.invoke(main, ["workspace", "create", "acme"], env=env).exit_code == 0
    open_app().evaluation.evaluate("acme", "python", ["pandas"], None, {})
    done = runner.invoke(main, ["audit", "checkpoint", "-w", "acme"], env=env, catch_exceptions=False)
    assert done.exit_code == 0, done.output
    checkpoint = json.loads(done.stdout)
    public = parse_public_key((tmp_path / "public.json").read_text(), "public")
    origin, size, _ = notes.open_checkpoint(checkpoint["note"], public)
    assert origin.endswith("/acme") and size == checkpoint["seq"]
    assert not (tmp_path / "data" / "audit-signing-key.pem").exists()
    verified = runner.invoke(main, ["audit", "verify", "-w", "acme"], env=env)
    assert verified.exit_code == 0, verified.output


def test_a_signer_whose_signature_does_not_match_its_public_key_signs_nothing(database_url, tmp_path, elsewhere):
    other = tmp_path / "other.json"
    other.write_text(json.dumps(AuditKey.generate().public_document()))
    env = cli_env(
        database_url,
        tmp_path / "data",
        RUNCODE_POLICY_AUDIT_SIGNER=f"{sys.executable} {elsewhere / 'sign.py'} {elsewhere / 'key.pem'}",
        RUNCODE_POLICY_AUDIT_SIGNER_PUBLIC_KEY=str(other),
    )
    runner = CliRunner()
    runner.invoke(main, ["workspace", "create", "acme"], env=env)
    done = runner.invoke(main, ["audit", "checkpoint", "-w", "acme"], env=env)
    assert done.exit_code != 0
    assert "RUNCODE_POLICY_AUDIT_SIGNER's signature does not verify under its public key" in done.output
    assert "Traceback" not in done.output  # one line, exit 1


def test_a_checkpoint_asked_where_no_key_is_kept_is_refused_and_makes_none(database_url, tmp_path, open_app):
    """A key made by the CLI on another host had signed checkpoints no instance trusted: every
    verification of the shared store failed from then on."""
    runner = CliRunner()
    env = cli_env(database_url, tmp_path / "elsewhere")
    assert runner.invoke(main, ["workspace", "create", "acme"], env=env).exit_code == 0
    open_app().evaluation.evaluate("acme", "python", ["pandas"], None, {})
    done = runner.invoke(main, ["audit", "checkpoint", "-w", "acme"], env=env)
    assert done.exit_code == 1 and "no audit signing key here" in done.output, done.output
    assert not (tmp_path / "elsewhere" / "audit-signing-key.pem").exists()
    assert runner.invoke(main, ["audit", "checkpoints", "-w", "acme"], env=env).stdout.count('"seq"') == 0


def test_another_host_verifies_against_the_trusted_keys_instead_of_reading_tampering(database_url, tmp_path):
    runner = CliRunner()
    signing_host = cli_env(database_url, tmp_path / "host-a")
    service_key(tmp_path / "host-a")  # where the service runs
    runner.invoke(main, ["workspace", "create", "acme"], env=signing_host)
    assert runner.invoke(main, ["audit", "checkpoint", "-w", "acme"], env=signing_host).exit_code == 0
    key = runner.invoke(main, ["audit", "public-key"], env=signing_host).stdout
    (tmp_path / "host-a.json").write_text(key)
    other_host = cli_env(database_url, tmp_path / "host-b")
    done = runner.invoke(main, ["audit", "verify", "-w", "acme"], env=other_host)
    assert done.exit_code == 1 and "which is not trusted" in done.output
    trusting = other_host | {"RUNCODE_POLICY_AUDIT_TRUSTED_KEYS": str(tmp_path / "host-a.json")}
    done = runner.invoke(main, ["audit", "verify", "-w", "acme"], env=trusting)
    assert done.exit_code == 0, done.output
