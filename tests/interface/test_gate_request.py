"""`runcode-policy-gate request LANGUAGE NAME --why ...`: the one command an agent runs after a
denial, as the sandbox runs it (a copy of gate.py, standard library only) against the real service."""

from __future__ import annotations

from tests.interface.test_gate import OFFLINE, gate, sandbox_env  # noqa: F401 - fixtures


def test_a_denied_agent_files_a_request_in_one_command(gate, sandbox_env, app):  # noqa: F811
    app.change_policy("acme", [{"action": "switch-mode", "language": "python", "mode": "allowlist"}], by="a")
    denied = gate("--", "pip", "install", "beta", env=sandbox_env)
    assert denied.returncode == 3 and "runcode-policy-gate request python beta --why" in denied.stderr
    filed = gate("request", "python", "Beta==1.0", "--why", "the report needs it", env=sandbox_env)
    assert filed.returncode == 0, filed.stderr
    assert filed.stdout.startswith("filed request ") and "python beta" in filed.stdout
    (request,) = app.access.requests("acme")["requests"]
    assert (request["name"], request["justification"], request["filed_by"]) == (
        "beta",
        "the report needs it",
        "sandbox-token",
    )
    assert request["context"] == {"sandbox": "sbx-7", "actor": "agent-7", "source": "gate", "run": None, "skill": None}
    again = gate("request", "python", "beta", "--why", "still", env={**sandbox_env, "RUNCODE_POLICY_SANDBOX": "sbx-8"})
    assert again.returncode == 0 and again.stdout.startswith(f"joined the open request {request['id']}")
    assert "(1 requester);" in again.stdout, again.stdout  # one token asked twice: one requester


def test_a_request_that_cannot_be_filed_says_why_and_fails(gate, sandbox_env):  # noqa: F811
    bad = gate("request", "python", "https://x.example/a.whl", env=sandbox_env)
    assert bad.returncode == 4 and "HTTP 422" in bad.stderr and "name:" in bad.stderr
    unreachable = gate("request", "python", "beta", env={**OFFLINE, "RUNCODE_POLICY_URL": "http://127.0.0.1:9"})
    assert unreachable.returncode == 4 and "could not file the request" in unreachable.stderr
    usage = gate("request", "ruby", "rails", env=sandbox_env)
    assert usage.returncode == 2 and "invalid choice" in usage.stderr
