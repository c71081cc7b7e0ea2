"""The real service with its package index pointed at a test's upstreams, and policy helpers."""

from __future__ import annotations

import pytest

from tests.support.http_client import LiveServer


@pytest.fixture
def indexed_service(app, tmp_path):
    """`indexed_service(pypi=URL, npm=URL)`: the live service on loopback, workspace `acme`, with a
    sandbox token, whose index proxies those upstreams."""
    servers = []

    def start(pypi: str | None = None, npm: str | None = None) -> LiveServer:
        from interface import create_app

        env = {"RUNCODE_POLICY_DATA_DIR": str(tmp_path)}
        env |= {"RUNCODE_POLICY_PYPI_UPSTREAM": pypi} if pypi else {}
        env |= {"RUNCODE_POLICY_NPM_UPSTREAM": npm} if npm else {}
        owner = app.create_workspace("acme", by="founder")["token"]
        server = LiveServer(create_app(env=env, governance=app))
        server.tokens = {"owner": owner, "sandbox": app.issue_token("acme", "sbx", "sandbox", by="founder")["token"]}
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()
        for upstream in ("pypi_upstream", "npm_upstream"):
            server.app.extensions[upstream].close()


def allow_only(app, language: str, names: list[str]) -> None:
    """Allowlist mode for `language`, with exactly `names` allowed."""
    changes = [
        {"action": "switch-mode", "language": language, "mode": "allowlist"},
        {"action": "add", "language": language, "list": "allow", "entries": names},
    ]
    app.change_policy("acme", changes, by="security", note="test")


def deny(app, language: str, names: list[str]) -> None:
    app.change_policy(
        "acme", [{"action": "add", "language": language, "list": "deny", "entries": names}], by="security", note="test"
    )


def index_decisions(app) -> list[dict]:
    return [d for d in app.decisions("acme")["decisions"] if (d.get("context") or {}).get("source") == "index"]
