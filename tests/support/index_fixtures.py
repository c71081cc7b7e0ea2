"""Fixtures for the package-index tests: the fixture upstreams (a pytest plugin of the root
conftest), and helpers. A test module points `live` at the upstreams by overriding `live_env`:

    @pytest.fixture
    def live_env(pypi_upstream, npm_upstream):
        return index_env(pypi_upstream, npm_upstream)
"""

from __future__ import annotations

import pytest

from tests.support.npm_upstream import NpmUpstream
from tests.support.pypi_upstream import PyPIUpstream


@pytest.fixture
def pypi_upstream():
    upstream = PyPIUpstream()
    yield upstream
    upstream.close()


@pytest.fixture
def npm_upstream():
    upstream = NpmUpstream()
    yield upstream
    upstream.close()


def index_env(pypi_upstream, npm_upstream) -> dict:
    return {
        "RUNCODE_POLICY_PYPI_UPSTREAM": pypi_upstream.url + "/simple/",
        "RUNCODE_POLICY_NPM_UPSTREAM": npm_upstream.url + "/",
    }


def set_policy(app, mode: str, python=(), node=()) -> int:
    """Both languages in one mode; the names go on that mode's list. Returns the new version."""
    listed = "allow" if mode == "allowlist" else "deny"
    other = "deny" if listed == "allow" else "allow"
    desired = {
        "python": {"mode": mode, listed: list(python), other: []},
        "node": {"mode": mode, listed: list(node), other: []},
    }
    return app.save_policy("acme", desired, by="founder")["version"]


def start_run(live, role: str = "sandbox", sandbox: str = "sbx-1") -> dict:
    reply = live.call("POST", "/api/v1/workspaces/acme/runs", live.tokens[role], {"context": {"sandbox": sandbox}})
    assert reply.status == 201, reply.body
    return reply.json


def run_decisions(live, run: dict, role: str = "auditor") -> list[dict]:
    reply = live.call("GET", f"/api/v1/workspaces/acme/runs/{run['id']}/decisions", live.tokens[role])
    assert reply.status == 200, reply.body
    return reply.json["decisions"]


def upstream_failure(live, run: dict) -> dict:
    """The run's one `upstream-failed` decision: what the gate says after the install."""
    (why,) = [d for d in run_decisions(live, run) if d["reason"] == "upstream-failed"]
    return why
