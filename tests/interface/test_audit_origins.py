"""A log keeps one origin: checkpoints signed by the command line beside a service whose
`RUNCODE_POLICY_AUDIT_ORIGIN` it was not given, receipts and consistency proofs over them, and
`audit verify` over a store whose checkpoints, or a copy held against it, name other origins."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from click.testing import CliRunner

from application import Governance, store_env
from application.chain import notes
from interface.cli import main
from tests.interface.test_audit_receipts import run_with_decisions
from tests.support.audit_key import service_key
from tests.support.tamper import Tamperer

ACME = "/api/v1/workspaces/acme"
ORIGIN = "review-a.example"


@pytest.fixture
def live_env() -> dict:
    return {"RUNCODE_POLICY_AUDIT_ORIGIN": ORIGIN}


def cli(database_url: str, data_dir: Path, *args: str, origin: str | None = None):
    """The command line on the service's host: its store and data directory (its key), and the
    service's origin only when given."""
    env = {"RUNCODE_POLICY_DATABASE_URL": database_url, "RUNCODE_POLICY_DATA_DIR": str(data_dir)}
    return CliRunner().invoke(main, list(args), env={**env, "RUNCODE_POLICY_AUDIT_ORIGIN": origin})


def checked(path: Path, command: str, answer: bytes, key: Path):
    """`audit verify-receipt` or `verify-proof` on an answer saved to `path`."""
    path.write_bytes(answer)
    return CliRunner().invoke(main, ["audit", command, str(path), "--key", str(key)])


@pytest.fixture
def public_key(live, tmp_path) -> Path:
    path = tmp_path / "public-key.json"
    path.write_text(live.call("GET", "/api/v1/audit/public-key").body.decode())
    return path


def test_the_command_line_signs_under_the_chains_origin_or_not_at_all_so_receipts_and_proofs_verify(
    live, app, database_url, tmp_path, public_key
):
    """Run without the service's origin, `audit checkpoint` signed the newest checkpoint as
    `runcode-policy/<host>/acme`: the receipt paired it with a statement under the service's origin
    and failed ("the note carries no signature by …"), as did the consistency proof reaching it.
    Unset, the origin is the chain's; set to another, nothing is signed."""
    first = live.call("POST", f"{ACME}/audit/checkpoints", live.tokens["admin"]).json
    run = run_with_decisions(live, app)
    refused = cli(database_url, tmp_path, "audit", "checkpoint", "-w", "acme", origin="elsewhere.example")
    assert refused.exit_code == 1
    assert refused.output.splitlines() == [
        f"Error: the checkpoints of 'acme' are signed as runcode-policy/{ORIGIN}/acme and this process's origin "
        "is runcode-policy/elsewhere.example/acme: a log keeps one origin, so nothing was signed; set "
        f"RUNCODE_POLICY_AUDIT_ORIGIN={ORIGIN}, as where they were signed"
    ]
    assert [c["seq"] for c in app.chain.all_checkpoints("acme")] == [first["seq"]]  # nothing signed
    assert socket.gethostname() != ORIGIN
    signed = cli(database_url, tmp_path, "audit", "checkpoint", "-w", "acme")  # the setting unset
    assert signed.exit_code == 0, signed.output
    assert json.loads(signed.stdout)["note"].startswith(f"runcode-policy/{ORIGIN}/acme\n")

    receipt = live.call("GET", f"{ACME}/runs/{run}/receipt", live.tokens["auditor"])
    assert receipt.status == 200, receipt.body
    done = checked(tmp_path / "receipt.json", "verify-receipt", receipt.body, public_key)
    assert done.exit_code == 0, done.output
    proof = live.call("GET", f"{ACME}/audit/proof/consistency?from={first['seq']}", live.tokens["auditor"])
    done = checked(tmp_path / "consistency.json", "verify-proof", proof.body, public_key)
    assert done.exit_code == 0, done.output
    assert done.output.startswith(f"runcode-policy/{ORIGIN}/acme at size ")


def test_a_receipt_states_the_origin_of_its_checkpoint_and_the_service_signs_under_no_other(
    live, app, database_url, tmp_path, public_key
):
    """The chain's first checkpoint signed elsewhere as `other.example`: the receipt includes it,
    so its statement is of that origin too (it was of the service's, and failed); a checkpoint the
    service would sign under its own is refused, naming the setting."""
    run = run_with_decisions(live, app)
    signed = cli(database_url, tmp_path, "audit", "checkpoint", "-w", "acme", origin="other.example")
    assert signed.exit_code == 0, signed.output
    receipt = live.call("GET", f"{ACME}/runs/{run}/receipt", live.tokens["sandbox"])
    assert receipt.status == 200, receipt.body
    assert receipt.json["statement"].split("\n")[1] == "runcode-policy/other.example/acme"
    done = checked(tmp_path / "receipt.json", "verify-receipt", receipt.body, public_key)
    assert done.exit_code == 0, done.output
    # As it was made: the statement signed under the service's origin, not its checkpoint's.
    text = notes.split(receipt.json["statement"])[0].replace("other.example", ORIGIN)
    statement = notes.sign(text, f"runcode-policy/{ORIGIN}/acme", app.chain.key.public, app.chain.key.sign)
    done = checked(
        tmp_path / "mixed.json",
        "verify-receipt",
        json.dumps(receipt.json | {"statement": statement}).encode(),
        public_key,
    )
    assert done.output.splitlines() == [
        f"Error: receipt verification FAILED: the signed statement is of runcode-policy/{ORIGIN}/acme and the "
        "checkpoint of runcode-policy/other.example/acme: a receipt joins one log's"
    ]

    app.evaluation.evaluate("acme", "python", ["delta"], None, {})
    refused = live.call("POST", f"{ACME}/audit/checkpoints", live.tokens["admin"])
    assert refused.status == 503 and refused.media == "application/problem+json"
    assert refused.json["detail"].endswith(
        "a log keeps one origin, so nothing was signed; set RUNCODE_POLICY_AUDIT_ORIGIN=other.example, as where "
        "they were signed"
    )


def test_verify_names_the_origins_of_a_store_signed_under_two_and_the_proof_joining_them_says_so(
    live, app, database_url, tmp_path, public_key
):
    """A store whose checkpoints were signed under two origins before they were refused (made here
    by hiding the first note while the second is signed): `audit verify` said ok and nothing more,
    and the consistency proof across them failed as "not … one log"."""
    app.evaluation.evaluate("acme", "python", ["alpha"], None, {})
    first = json.loads(cli(database_url, tmp_path, "audit", "checkpoint", "-w", "acme", origin="one.example").stdout)
    tamper = Tamperer(database_url)
    tamper.sql("DELETE FROM rcp_checkpoint_notes")
    app.evaluation.evaluate("acme", "python", ["beta"], None, {})
    second = live.call("POST", f"{ACME}/audit/checkpoints", live.tokens["admin"]).json
    tamper.sql("INSERT INTO rcp_checkpoint_notes VALUES (%s, %s, %s)", ("acme", first["seq"], first["note"]))
    tamper.close()
    both = ["runcode-policy/one.example/acme", f"runcode-policy/{ORIGIN}/acme"]

    done = cli(database_url, tmp_path, "audit", "verify", "-w", "acme")
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["origins"] == both
    assert done.stderr.splitlines()[-1] == (
        f"its checkpoints are signed under 2 origins ({', '.join(both)}): a proof or receipt joining two of them "
        "does not verify; set RUNCODE_POLICY_AUDIT_ORIGIN the same wherever checkpoints are signed"
    )
    verdict = live.call("GET", f"{ACME}/audit/verify", live.tokens["auditor"]).json
    assert (verdict["ok"], verdict["origins"]) == (True, both)

    proof = live.call("GET", f"{ACME}/audit/proof/consistency?from={first['seq']}", live.tokens["auditor"])
    done = checked(tmp_path / "consistency.json", "verify-proof", proof.body, public_key)
    assert done.exit_code == 1
    assert done.output.splitlines() == [
        f"Error: proof verification FAILED: the checkpoints are of two logs, {both[0]} (size {first['seq']}) and "
        f"{both[1]} (size {second['seq']}): a consistency proof joins two sizes of one log (a log keeps one origin: "
        "RUNCODE_POLICY_AUDIT_ORIGIN differed where they were signed)"
    ]


def test_checkpoints_copied_from_another_deployment_are_named_another_logs_not_a_rewritten_chain(
    database_url, tmp_path
):
    """Held against this store, another deployment's copy (its key trusted) was reported as
    `checkpoint-mismatch`, "altered … and the chain rewritten to hide it"; its notes' origin shows it
    is another log."""
    here, there = tmp_path / "here", tmp_path / "there"
    service_key(here)
    service_key(there)
    other_url = f"sqlite:///{tmp_path / 'there.sqlite'}"
    for url, data_dir, origin in ((database_url, here, ORIGIN), (other_url, there, "other.example")):
        deployment = Governance(env=store_env(url))
        deployment.create_workspace("acme", by="founder")
        deployment.evaluation.evaluate("acme", "python", ["alpha", "beta", "gamma"], None, {})
        deployment.close()
        assert cli(url, data_dir, "audit", "checkpoint", "-w", "acme", origin=origin).exit_code == 0
    copied = cli(other_url, there, "audit", "checkpoints", "-w", "acme", "-o", str(tmp_path / "copy.json"))
    assert copied.exit_code == 0, copied.output
    copy = str(tmp_path / "copy.json")
    done = cli(database_url, here, "audit", "verify", "-w", "acme", "--checkpoints", copy, "--public-key", copy)
    assert done.exit_code == 1
    assert json.loads(done.stdout)["problem"] == "another-log"
    seq = json.loads((tmp_path / "copy.json").read_text())["checkpoints"][0]["seq"]
    assert done.stderr.splitlines() == [
        f"Error: audit verification FAILED: copied checkpoint {seq} is of another log: its signed note names "
        f"runcode-policy/other.example/acme, this store's checkpoints runcode-policy/{ORIGIN}/acme (copied from "
        "another deployment, or this store's checkpoints were signed again under another origin); it says nothing "
        "about this chain"
    ]
