"""Real npm and pnpm through the gate and the service's npm registry proxy, with verdaccio 6.8.0
(a real third-party registry) as its upstream, all on 127.0.0.1.

The tree: alpha depends on beta; gamma stands alone. Each npm bypass of the issue ("Why") is a
test: before the gate ran npm through the index, an `.npmrc` or `npm_config_registry` aimed at
another registry installed beta through the "allowed" `npm install alpha`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.clients import require_pnpm
from tests.support.gate import Gate, sandbox_env
from tests.support.index_fixtures import set_policy
from tests.support.index_live import sqlite_store  # noqa: F401 - fixture database_url: SQLite only


@pytest.fixture
def live_env(verdaccio_upstream) -> dict:
    """`live` (the real service) with verdaccio behind its npm registry proxy."""
    return {"RUNCODE_POLICY_NPM_UPSTREAM": f"{verdaccio_upstream.url}/"}


@pytest.fixture
def gate(tmp_path):
    return Gate(tmp_path, installer_path="/usr/bin:/bin")


@pytest.fixture
def env(live, tmp_path) -> dict:
    home = tmp_path / "home"
    home.mkdir()
    return sandbox_env(live, home)


@pytest.fixture
def project(tmp_path):
    path = tmp_path / "project"
    path.mkdir()
    (path / "package.json").write_text(json.dumps({"name": "project", "version": "1.0.0", "private": True}))
    return path


def installed(project) -> set[str]:
    return {p.name for p in (project / "node_modules").glob("[!.]*")} if (project / "node_modules").exists() else set()


def install(gate, client: str, env: dict, project, package: str = "alpha"):
    if client == "pnpm":
        pnpm = Path(require_pnpm())
        gate.base["RUNCODE_POLICY_INSTALLER_PATH"] = f"{pnpm.parent}:/usr/bin:/bin"
        return gate("--", "pnpm", "add", package, env=env, cwd=project)
    return gate("--", "npm", "install", package, env=env, cwd=project)


@pytest.mark.parametrize("client", ["npm", "pnpm"])
def test_an_allowed_tree_installs_through_the_index(gate, env, app, project, client):
    set_policy(app, "allowlist", node=["alpha", "beta"])
    done = install(gate, client, env, project)
    assert done.returncode == 0, done.stdout + done.stderr
    assert {"alpha", "beta"} <= installed(project) | pnpm_store_names(project)


@pytest.mark.parametrize("client", ["npm", "pnpm"])
def test_a_denied_dependency_fails_the_install_though_an_older_parent_lacks_it_and_the_gate_prints_it(
    gate, env, app, project, client
):
    set_policy(app, "allowlist", node=["alpha"])
    done = install(gate, client, env, project)
    assert done.returncode == 3, done.stdout + done.stderr  # the installer failed; the gate names the denial
    assert not {"alpha", "beta"} & (installed(project) | pnpm_store_names(project))  # nor alpha 0.9.0
    assert "denied: beta (node) \u2014 not-on-the-allow-list" in done.stderr, done.stderr


@pytest.mark.parametrize(
    ("client", "how"),
    [("npm", "project .npmrc"), ("npm", "npm_config_registry"), ("pnpm", "project .npmrc")],
)
def test_a_registry_redirect_cannot_install_a_denied_dependency(
    gate, env, app, project, verdaccio_upstream, client, how
):
    set_policy(app, "allowlist", node=["alpha"])
    raw = f"{verdaccio_upstream.url}/"
    extra = {"npm_config_registry": raw} if how == "npm_config_registry" else {}
    if how == "project .npmrc":
        (project / ".npmrc").write_text(f"registry={raw}\n")
    done = install(gate, client, {**env, **extra}, project)
    assert "beta" not in installed(project) | pnpm_store_names(project), done.stdout + done.stderr
    assert done.returncode != 0 and "denied: beta (node)" in done.stderr, done.stderr


def test_a_package_json_override_to_a_denied_package_is_refused_before_npm_runs(
    gate, env, app, project, verdaccio_upstream
):
    set_policy(app, "allowlist", node=["alpha", "beta"])
    manifest = json.loads((project / "package.json").read_text())
    manifest["overrides"] = {"beta": "npm:gamma@^1.0.0"}  # swaps the allowed beta for the denied gamma
    (project / "package.json").write_text(json.dumps(manifest))
    extra = {"npm_config_registry": f"{verdaccio_upstream.url}/"}  # so that today's gate would have fetched it
    done = gate("--", "npm", "install", "alpha", env={**env, **extra}, cwd=project)
    assert "gamma" not in installed(project) and not (project / "node_modules" / "beta").exists()
    assert done.returncode == 3 and "denied: gamma is not on the Node allow list" in done.stderr, done.stderr


def pnpm_store_names(project) -> set[str]:
    """pnpm links packages from node_modules/.pnpm/<name>@<version>/node_modules/<name>."""
    return {p.name.rpartition("@")[0] for p in (project / "node_modules" / ".pnpm").glob("*@*")}


@pytest.mark.parametrize("client", ["npm", "pnpm"])
def test_a_scoped_registry_in_a_project_npmrc_cannot_redirect_a_scope(
    verdaccio_upstream, gate, env, app, project, client
):
    set_policy(app, "allowlist", node=["@corp/alpha"])
    # pnpm reads a project's scoped registry over its environment: only its command line wins.
    (project / ".npmrc").write_text(f"@corp:registry={verdaccio_upstream.url}/\n")
    done = install(gate, client, env, project, "@corp/alpha")
    assert not (project / "node_modules" / "@corp" / "beta").exists(), done.stdout + done.stderr
    assert done.returncode != 0 and "denied: @corp/beta (node)" in done.stderr, done.stdout + done.stderr
