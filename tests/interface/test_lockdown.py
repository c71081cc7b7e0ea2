"""The locked-down deployment, for real: real pip inside a network namespace whose only ways out
are the service (its package index) and the egress proxy, bridged in over Unix sockets. No
address but loopback is used, inside the namespace or out.

CI runs these as root and must run them; elsewhere they skip loudly without `unshare --net`.
"""

from __future__ import annotations

import socket

import pytest

from interface.egress_proxy import EgressProxy, ProxyLimits
from tests.support.gate import Gate
from tests.support.index_fixtures import set_policy
from tests.support.index_live import sqlite_store  # noqa: F401 - fixture database_url: SQLite only
from tests.support.netns import Sandbox, namespaces_or_skip
from tests.support.target_env import TargetEnv


def no_dns(host: str, port: int) -> list[str]:
    raise socket.gaierror(socket.EAI_NONAME, "the test resolves nothing")


@pytest.fixture
def live_env(pypiserver_upstream) -> dict:
    """`live` (the real service) with pypiserver behind its index."""
    return {"RUNCODE_POLICY_PYPI_UPSTREAM": f"{pypiserver_upstream.url}/simple/"}


@pytest.fixture
def egress_proxy(app, live):
    proxy = EgressProxy(
        app, "acme", ("127.0.0.1", 0), resolver=no_dns, limits=ProxyLimits(connect_timeout=2.0), sandbox="sbx-locked"
    ).start(poll_interval=0.05)
    yield proxy
    proxy.close()


@pytest.fixture
def target(tmp_path) -> TargetEnv:
    return TargetEnv(tmp_path / "venv")


def pip_straight_at_pypi(target: TargetEnv) -> list[str]:
    options = "download -vv --no-deps --retries 0 --timeout 5 -d dl --index-url https://pypi.org/simple/"
    return [str(target.bin / "pip"), *options.split(), "requests"]


def test_pip_aimed_straight_at_a_public_registry_is_refused_by_the_egress_proxy(tmp_path, app, egress_proxy, target):
    namespaces_or_skip()
    port = egress_proxy.server_address[1]
    sandbox = Sandbox(tmp_path / "bridges", [port])
    try:
        proxy = f"http://127.0.0.1:{port}"
        env = {
            "PATH": "/usr/bin:/bin",
            "HOME": str(tmp_path),
            "PIP_CONFIG_FILE": "/dev/null",
            "HTTPS_PROXY": proxy,
            "HTTP_PROXY": proxy,
        }
        through_proxy = sandbox.run(pip_straight_at_pypi(target), env=env, cwd=tmp_path)
        direct = sandbox.run(
            pip_straight_at_pypi(target), env={**env, "HTTPS_PROXY": "", "HTTP_PROXY": ""}, cwd=tmp_path
        )
    finally:
        sandbox.close()
    assert through_proxy.returncode != 0 and "403" in through_proxy.stdout + through_proxy.stderr
    decisions = app.decisions("acme", {"kind": "egress"})["decisions"]
    assert [(d["name"], d["allowed"], d["reason"]) for d in decisions] == [("pypi.org", False, "package-registry")]
    assert "package index" in decisions[0]["detail"]
    # Without the proxy nothing is reachable at all (there is no route, not even to a resolver).
    assert direct.returncode != 0 and not list((tmp_path / "dl").glob("*"))
    assert len(app.decisions("acme", {"kind": "egress"})["decisions"]) == 1


@pytest.mark.parametrize("allowed", [["alpha", "beta"], ["alpha"]], ids=["alpha-and-beta", "alpha-only"])
def test_an_allowed_tree_installs_through_the_index_and_only_through_it(
    tmp_path, app, live, egress_proxy, target, allowed
):
    namespaces_or_skip()
    set_policy(app, "allowlist", python=allowed)
    gate = Gate(tmp_path / "sandbox", installer_path=str(target.bin))
    service_port, proxy_port = int(live.url.rpartition(":")[2]), egress_proxy.server_address[1]
    sandbox = Sandbox(tmp_path / "bridges", [service_port, proxy_port])
    proxy = f"http://127.0.0.1:{proxy_port}"
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "HTTPS_PROXY": proxy,
        "HTTP_PROXY": proxy,
        "RUNCODE_POLICY_URL": live.url,
        "RUNCODE_POLICY_TOKEN": live.tokens["sandbox"],
        "RUNCODE_POLICY_WORKSPACE": "acme",
        "RUNCODE_POLICY_INSTALLER_PATH": str(target.bin),
    }
    try:
        done = sandbox.run(gate.argv("--", "pip", "install", "alpha"), env=env, cwd=tmp_path)
    finally:
        sandbox.close()
    if allowed == ["alpha"]:
        assert done.returncode != 0 and not {"alpha", "beta"} & target.installed()
        assert "denied: beta (python) \u2014 not-on-the-allow-list" in done.stderr, done.stderr
    else:
        assert done.returncode == 0, done.stdout + done.stderr
        assert {"alpha", "beta"} <= target.installed()
    assert app.decisions("acme", {"kind": "egress"})["decisions"] == []  # nothing went round the index
