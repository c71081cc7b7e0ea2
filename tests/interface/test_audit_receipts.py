"""Run receipts, proofs and witnesses on the real service: a receipt checked offline in a fresh
process with the public key alone (and refused once one byte of it changes), inclusion and
consistency proofs checked by `audit verify-proof`, checkpoints that reach the witness directory
with no operator step, and a witness that refuses a history rewritten and re-signed with the key."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from interface.cli import main
from tests.support.tamper import Tamperer

CLI = str(Path(sys.executable).parent / "runcode-policy")
ROOT = Path(__file__).resolve().parents[2]  # this checkout's code, wherever the venv's install points


@pytest.fixture
def witness_dir(tmp_path) -> Path:
    return tmp_path / "other-mount" / "checkpoints"


@pytest.fixture
def live_env(witness_dir) -> dict:
    return {"RUNCODE_POLICY_AUDIT_WITNESS": str(witness_dir), "RUNCODE_POLICY_AUDIT_CHECKPOINT_SECONDS": "0.2"}


@pytest.fixture
def public_key(live, tmp_path) -> Path:
    path = tmp_path / "public-key.json"
    path.write_text(live.call("GET", "/api/v1/audit/public-key").body.decode())
    return path


def run_with_decisions(live, app) -> str:
    """A run started by the sandbox token, whose index reads made three decisions (one refused)."""
    app.save_policy("acme", {"python": {"mode": "denylist", "allow": [], "deny": ["gamma"]}}, by="founder")
    started = live.call("POST", "/api/v1/workspaces/acme/runs", live.tokens["sandbox"], {})
    assert started.status == 201, started.body
    principal = app.index.authenticate(started.json["token"])
    for name in ("alpha", "beta", "gamma"):
        app.index.gate.judge(principal, "python", name, "page")
    return started.json["id"]


def fresh_process(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """The CLI in a new process that knows no store and no data directory."""
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}
    return subprocess.run([CLI, *args], cwd=cwd, capture_output=True, text=True, env=env)


def test_a_run_receipt_verifies_offline_with_only_the_public_key(live, app, public_key, tmp_path):
    run = run_with_decisions(live, app)
    reply = live.call("GET", f"/api/v1/workspaces/acme/runs/{run}/receipt", live.tokens["sandbox"])
    assert reply.status == 200, reply.body
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "receipt.json").write_bytes(reply.body)
    (alone / "key.json").write_text(public_key.read_text())
    done = fresh_process("audit", "verify-receipt", "receipt.json", "--key", "key.json", cwd=alone)
    assert done.returncode == 0, done.stderr
    assert (
        "everything this run installed was allowed by policy v1 (1 refused fetch(es) installed nothing)" in done.stderr
    )
    facts = json.loads(done.stdout)
    assert (facts["run"], facts["decisions"], facts["refused"]) == (run, 3, 1)


def test_a_receipt_with_one_byte_of_a_decision_changed_or_a_decision_dropped_or_repeated_is_refused(
    live, app, public_key, tmp_path
):
    run = run_with_decisions(live, app)
    receipt = live.call("GET", f"/api/v1/workspaces/acme/runs/{run}/receipt", live.tokens["auditor"]).json
    refused = next(d for d in receipt["decisions"] if not d["allowed"])

    def check(document: dict) -> subprocess.CompletedProcess:
        (tmp_path / "tampered.json").write_text(json.dumps(document))
        return fresh_process("audit", "verify-receipt", "tampered.json", "--key", str(public_key), cwd=tmp_path)

    shown = json.loads(json.dumps(receipt))
    next(d for d in shown["decisions"] if d["id"] == refused["id"])["allowed"] = True
    shown["allowed"] = True
    done = check(shown)
    assert done.returncode == 1
    assert f"receipt verification FAILED: decision {refused['id']} (record" in done.stderr
    assert "differs from its sealed event" in done.stderr

    stored = json.loads(json.dumps(receipt))
    decision = next(d for d in stored["decisions"] if d["id"] == refused["id"])
    state = base64.b64decode(decision["chain"]["event"]["state"]).replace(b'"allowed":false', b'"allowed":true ')
    decision["chain"]["event"]["state"] = base64.b64encode(state).decode()
    decision["allowed"], stored["allowed"] = True, True
    decision["chain"]["event"]["state"] = base64.b64encode(state.replace(b"true ", b"true")).decode()
    done = check(stored)
    assert done.returncode == 1 and "does not lead to the checkpoint's root" in done.stderr

    dropped = json.loads(json.dumps(receipt))
    dropped["decisions"] = [d for d in dropped["decisions"] if d["allowed"]]
    dropped["allowed"] = True
    done = check(dropped)
    assert done.returncode == 1
    assert "carries 2 decision(s) but its signed statement lists 3: decisions were removed or added" in done.stderr

    # One decision twice: each copy verifies, and it was counted twice ("2 refused fetch(es)"), exit 0.
    repeated = json.loads(json.dumps(receipt))
    repeated["decisions"].append(next(d for d in repeated["decisions"] if d["id"] == refused["id"]))
    done = check(repeated)
    assert done.returncode == 1, done.stderr
    assert f"receipt verification FAILED: decision {refused['id']} appears twice in the receipt" in done.stderr


def test_only_the_runs_own_sandbox_token_or_an_auditor_gets_its_receipt(live, app):
    run = run_with_decisions(live, app)
    other = app.issue_token("acme", "other-sandbox", "sandbox", by="founder")["token"]
    assert live.call("GET", f"/api/v1/workspaces/acme/runs/{run}/receipt", other).status == 404
    assert live.call("GET", f"/api/v1/workspaces/acme/runs/{run}/receipt", live.tokens["auditor"]).status == 200


def test_inclusion_and_consistency_proofs_verify_with_the_cli(live, app, public_key, tmp_path):
    auditor, admin = live.tokens["auditor"], live.tokens["admin"]
    first = live.call("POST", "/api/v1/workspaces/acme/audit/checkpoints", admin).json
    decided = app.evaluation.evaluate("acme", "python", ["alpha"], None, {})["decisions"][0]["id"]
    second = live.call("POST", "/api/v1/workspaces/acme/audit/checkpoints", admin).json
    inclusion = live.call("GET", f"/api/v1/workspaces/acme/audit/proof/inclusion?decision={decided}", auditor)
    assert inclusion.status == 200 and inclusion.json["tree_size"] == second["seq"]
    consistency = live.call(
        "GET", f"/api/v1/workspaces/acme/audit/proof/consistency?from={first['seq']}&to={second['seq']}", auditor
    )
    runner = CliRunner()
    said = []
    for name, answer in (("inclusion.json", inclusion), ("consistency.json", consistency)):
        (tmp_path / name).write_bytes(answer.body)
        done = runner.invoke(main, ["audit", "verify-proof", str(tmp_path / name), "--key", str(public_key)])
        assert done.exit_code == 0, done.output
        said.append(done.output)
    assert f"decision {decided} is record {inclusion.json['leaf_index'] + 1} of runcode-policy/" in said[0]
    assert f"at size {second['seq']} extends its tree at size {first['seq']}: nothing before was changed" in said[1]
    # A stated root other than its signed checkpoint's: a reader of the file would take it as the log's.
    other_root = base64.b64encode(b"\1" * 32).decode()
    for answer, field in ((inclusion, "root"), (consistency, "from_root"), (consistency, "to_root")):
        contradicted = tmp_path / "contradicted.json"
        contradicted.write_text(json.dumps(answer.json | {field: other_root}))
        done = runner.invoke(main, ["audit", "verify-proof", str(contradicted), "--key", str(public_key)])
        assert done.exit_code == 1, (field, done.output)
        assert f"FAILED: its {field} {other_root} is not the root of its signed checkpoint, {answer.json[field]}" in (
            done.output
        )
    forged = consistency.json | {"proof": [base64.b64encode(b"\0" * 32).decode()] * len(consistency.json["proof"])}
    (tmp_path / "forged.json").write_text(json.dumps(forged))
    done = runner.invoke(main, ["audit", "verify-proof", str(tmp_path / "forged.json"), "--key", str(public_key)])
    assert done.exit_code == 1 and "history was rewritten" in done.output
    bad = live.call("GET", "/api/v1/workspaces/acme/audit/proof/consistency?from=0", auditor)
    assert bad.status == 422 and bad.json["errors"][0]["field"] == "from"
    bad = live.call("GET", "/api/v1/workspaces/acme/audit/proof/inclusion?decision=x", auditor)
    assert bad.status == 422 and bad.json["errors"] == [
        {"field": "decision", "message": "must be a decision id (a UUID)"}
    ]
    assert (
        live.call(
            "GET", f"/api/v1/workspaces/acme/audit/proof/inclusion?decision={decided}", live.tokens["sandbox"]
        ).status
        == 403
    )


def delivered(witness_dir: Path, at_least: int = 1) -> list[Path]:
    deadline = time.monotonic() + 30
    while len(files := sorted((witness_dir / "acme").glob("*.checkpoint"))) < at_least:
        assert time.monotonic() < deadline, "no checkpoint reached the witness directory within 30 s"
        time.sleep(0.05)
    return files


def witness(tmp_path: Path, witness_dir: Path, public_key: Path) -> subprocess.CompletedProcess:
    return fresh_process(
        "audit",
        "witness",
        "--state",
        str(tmp_path / "witness-state"),
        "--key",
        str(tmp_path / "witness.pem"),
        "--log-key",
        str(public_key),
        str(witness_dir),
        cwd=tmp_path,
    )


def test_checkpoints_reach_the_witness_directory_by_themselves_and_the_witness_cosigns(
    live, app, witness_dir, public_key, tmp_path
):
    app.evaluation.evaluate("acme", "python", ["alpha"], None, {})  # the sealer seals and signs it within 0.2 s
    delivered(witness_dir)
    done = witness(tmp_path, witness_dir, public_key)
    assert done.returncode == 0, done.stderr
    assert "\u2014 runcode-policy/witness " in done.stdout and "cosigned " in done.stderr


def test_the_witness_refuses_a_history_rewritten_and_re_signed_with_the_key(
    live, app, witness_dir, public_key, tmp_path, database_url
):
    decided = app.evaluation.evaluate("acme", "python", ["left-pad"], None, {})["decisions"][0]["id"]
    size = app.chain.checkpoint("acme")["seq"]
    deadline = time.monotonic() + 30
    while not any(f.name.startswith(f"{size:020d}") for f in delivered(witness_dir)):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert witness(tmp_path, witness_dir, public_key).returncode == 0  # it has seen the honest history
    honest = set(delivered(witness_dir))
    # The attacker holds the database and the key: rewrite a decision, re-seal everything, re-sign.
    tamper = Tamperer(database_url)
    tamper.rewrite_history(decided)
    tamper.close()
    resigned = app.chain.checkpoint("acme")
    assert resigned["seq"] >= size
    deadline = time.monotonic() + 30
    while not set(delivered(witness_dir)) - honest:  # the re-signed checkpoint is pushed like any other
        assert time.monotonic() < deadline, "the re-signed checkpoint did not reach the witness directory"
        time.sleep(0.05)
    done = witness(tmp_path, witness_dir, public_key)
    assert done.returncode == 1
    assert "is not consistent with the one cosigned at size" in done.stderr
    assert "the log's history was rewritten" in done.stderr
