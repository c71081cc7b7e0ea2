"""The locked-down deployment, for real: real pip (and curl) inside a network namespace whose only
ways out are the service (its package index) and the egress proxy, bridged in over Unix sockets.
No address but loopback is used, inside the namespace or out.

CI runs these as root and must run them; elsewhere they skip loudly without `unshare --net`.
"""

from __future__ import annotations

import shutil
import socket

import pytest

from application.egress import EgressConfig
from interface.egress_proxy import EgressProxy, ProxyLimits
from tests.support.gate import Gate
from tests.support.index_fixtures import set_policy
from tests.support.index_live import sqlite_store  # noqa: F401 - fixture database_url: SQLite only
from tests.support.netns import Sandbox, connects, namespaces_or_skip
from tests.support.python_gate import pypiserver_behind_the_index  # noqa: F401 - fixture live_env
from tests.support.target_env import TargetEnv
from tests.support.third_party import require


def no_dns(host: str, port: int) -> list[str]:
    raise socket.gaierror(socket.EAI_NONAME, "the test resolves nothing")


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
    decisions = app.audit.decisions("acme", {"kind": "egress"})["decisions"]
    assert [(d["name"], d["allowed"], d["reason"]) for d in decisions] == [("pypi.org", False, "package-registry")]
    assert "package index" in decisions[0]["detail"]
    # Without the proxy nothing is reachable at all (there is no route, not even to a resolver).
    assert direct.returncode != 0 and not list((tmp_path / "dl").glob("*"))
    assert len(app.audit.decisions("acme", {"kind": "egress"})["decisions"]) == 1


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
    assert app.audit.decisions("acme", {"kind": "egress"})["decisions"] == []  # nothing went round the index


# --- hostile code in the sandbox: curl, not an installer ------------------------------------------

MIRROR_TARBALL = "https://registry.npmmirror.com/beta/-/beta-1.0.0.tgz"  # Alibaba's npm mirror


class Lookups(list):
    """A resolver that records each name it is asked for and resolves none (no DNS in tests)."""

    def __call__(self, host: str, port: int) -> list[str]:
        self.append(host)
        raise socket.gaierror(socket.EAI_NONAME, "the test resolves nothing")


def curl_in_sandbox(tmp_path, governance, url: str, *extra: str):
    """`curl URL` inside the namespace, with the egress proxy as its proxy (as a sandbox sets it).

    Returns (curl's result, the proxy's port, the names the proxy looked up, every address this
    process connected to meanwhile: the bridge's and the proxy's own dials)."""
    require("curl", shutil.which("curl") is not None, "apt-get install curl")
    namespaces_or_skip()
    lookups = Lookups()
    proxy = EgressProxy(governance, "acme", ("127.0.0.1", 0), resolver=lookups, sandbox="sbx-locked").start(0.05)
    port = proxy.server_address[1]
    sandbox = Sandbox(tmp_path / "bridges", [port])
    address = f"http://127.0.0.1:{port}"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "HTTPS_PROXY": address, "https_proxy": address}
    env["http_proxy"] = address  # curl reads plain HTTP's proxy in lower case only
    argv = ["curl", "-sS", "--max-time", "20", "-o", "fetched", "-w", "%{http_code} %{http_connect}", *extra, url]
    try:
        with connects() as dialled:
            done = sandbox.run(argv, env=env, cwd=tmp_path, timeout=60)
    finally:
        sandbox.close()
        proxy.close()
    return done, port, lookups, dialled


def egress_decisions(governance) -> list[tuple]:
    return [
        (d["name"], d["allowed"], d["reason"])
        for d in governance.audit.decisions("acme", {"kind": "egress"})["decisions"]
    ]


def test_curl_of_a_denied_packages_tarball_from_a_mirror_is_refused_before_any_lookup_or_dial(tmp_path, app):
    # Open egress (no hostname allowlist): the mirror is refused by name, as a registry.
    app.create_workspace("acme", by="founder")
    done, port, lookups, dialled = curl_in_sandbox(tmp_path, app, MIRROR_TARBALL, "--fail")
    assert done.returncode != 0 and done.stdout == "000 403", done.stderr  # the CONNECT was answered 403
    assert not (tmp_path / "fetched").exists()
    assert egress_decisions(app) == [("registry.npmmirror.com", False, "package-registry")]
    (decision,) = app.audit.decisions("acme", {"kind": "egress"})["decisions"]
    assert "Alibaba's npm mirror" in decision["detail"] and "package index" in decision["detail"]
    assert lookups == []  # refused by name: never resolved
    assert dialled == [("127.0.0.1", port)]  # the bridge reaching the proxy, and nothing else


@pytest.mark.parametrize(
    ("url", "allowlist", "reason", "curl_says"),
    [
        ("http://10.20.30.40/beta-1.0.0.tgz", None, "private-range", "403 000"),
        (
            "https://104.16.0.1/beta/-/beta-1.0.0.tgz",
            ("docs.python.org",),
            "not-on-hostname-allowlist",
            "000 403",
        ),
    ],
    ids=["private-address-under-open-egress", "public-address-under-a-hostname-allowlist"],
)
def test_curl_of_an_ip_literal_is_refused_without_the_proxy_dialling_it(
    tmp_path, open_app, url, allowlist, reason, curl_says
):
    governance = open_app(egress=EgressConfig(hostname_allowlist=allowlist))
    governance.create_workspace("acme", by="founder")
    done, port, lookups, dialled = curl_in_sandbox(tmp_path, governance, url, "--fail")
    assert done.returncode != 0 and done.stdout == curl_says, done.stderr  # "plain HTTP, CONNECT" status
    host = url.split("/")[2]
    assert egress_decisions(governance) == [(host, False, reason)]
    assert lookups == [] and dialled == [("127.0.0.1", port)]  # nothing resolved, nothing dialled
