"""Real pip and real uv installing through the PyPI index proxy from the fixture upstream.

`alpha` depends on `beta`: whatever the client, a dependency the policy denies is not
installed, at any depth, and its denial is in the run's record. The clients' behaviour does not
depend on the store, so these run on SQLite only (the store's side is tested on both).
"""

from __future__ import annotations

import hashlib
import os
import sys

import pytest

from tests.support import clients
from tests.support.index_fixtures import run_decisions, set_policy, start_run
from tests.support.index_live import index_live_env, sqlite_store  # noqa: F401 - fixtures live_env, database_url

INSTALLERS = {"pip": clients.pip_install, "uv": clients.uv_install}


def install(live, tmp_path, installer: str, *args: str):
    run = start_run(live)
    outcome = INSTALLERS[installer](tmp_path, run["pypi"], run["token"], *args)
    return run, outcome


def installed(tmp_path) -> set[str]:
    site = tmp_path / "site"
    return {p.name.split("-")[0].lower() for p in site.glob("*.dist-info")} if site.exists() else set()


@pytest.mark.parametrize("installer", INSTALLERS)
@pytest.mark.parametrize("mode, listed", [("allowlist", ["alpha"]), ("denylist", ["beta"])])
def test_a_denied_dependency_fails_the_install_and_its_denial_is_recorded(live, app, tmp_path, installer, mode, listed):
    set_policy(app, mode, python=listed)
    run, outcome = install(live, tmp_path, installer, "alpha")
    assert not outcome.ok, outcome.output
    assert "beta" in outcome.output
    assert installed(tmp_path) == set()  # neither alpha 1.0 nor the older alpha 0.9, which lacks beta
    decisions = run_decisions(live, run)
    denied = [d for d in decisions if not d["allowed"] and d["reason"] != "run-failed"]
    assert denied and {d["name"] for d in denied} == {"beta"}
    assert all(d["context"]["source"] == "index" and d["run"] == run["id"] for d in denied)
    # The resolver back-tracked to alpha 0.9: refused, because the run had already failed.
    refused = [d for d in decisions if d["reason"] == "run-failed"]
    assert refused and all("beta (python) was denied" in d["message"] for d in refused)
    assert not [d for d in decisions if d["allowed"] and "0.9" in (d.get("file") or "")]


@pytest.mark.parametrize("installer", INSTALLERS)
@pytest.mark.parametrize("mode, listed", [("allowlist", ["alpha", "beta"]), ("denylist", ["gamma"])])
def test_an_allowed_tree_installs_and_every_download_is_recorded(live, app, tmp_path, installer, mode, listed):
    set_policy(app, mode, python=listed)
    run, outcome = install(live, tmp_path, installer, "alpha")
    assert outcome.ok, outcome.output
    assert installed(tmp_path) == {"alpha", "beta"}
    decisions = run_decisions(live, run)
    assert all(d["allowed"] for d in decisions)
    downloads = {(d["name"], d["file"], d["package_version"]) for d in decisions if d["request"] == "download"}
    assert downloads == {("alpha", "alpha-1.0-py3-none-any.whl", "1.0"), ("beta", "beta-1.1-py3-none-any.whl", "1.1")}


def test_pip_require_hashes_with_upstream_hashes_installs_through_the_proxy(live, app, tmp_path, pypi_upstream):
    set_policy(app, "allowlist", python=["alpha", "beta"])
    lines = []
    for filename, pin in (("alpha-1.0-py3-none-any.whl", "alpha==1.0"), ("beta-1.1-py3-none-any.whl", "beta==1.1")):
        digest = hashlib.sha256(pypi_upstream.file(filename).data).hexdigest()
        lines.append(f"{pin} --hash=sha256:{digest}")
    requirements = tmp_path / "req.txt"
    requirements.write_text("\n".join(lines) + "\n")
    run, outcome = install(live, tmp_path, "pip", "--require-hashes", "-r", str(requirements))
    assert outcome.ok, outcome.output
    assert installed(tmp_path) == {"alpha", "beta"}


@pytest.mark.parametrize("credentials", ["", "run:rcp_not-a-token@"])
def test_pip_in_a_terminal_without_a_valid_token_is_refused_and_never_prompts(live, app, tmp_path, credentials):
    set_policy(app, "denylist")
    index = f"{live.url}/pypi/acme/simple/".replace("://", f"://{credentials}")
    env = clients.clean_env(tmp_path, PIP_CONFIG_FILE=os.devnull)
    argv = [sys.executable, "-m", "pip", "install", "--no-cache-dir", "--target", str(tmp_path / "site")]
    outcome = clients.run_in_terminal([*argv, "--index-url", index, "alpha"], env)
    assert outcome.code not in (0, 124), outcome.output  # refused, not stuck at a prompt
    assert "User for" not in outcome.output and "Password" not in outcome.output
    assert installed(tmp_path) == set()


def test_uv_honours_yanked_and_requires_python_through_the_proxy(live, app, tmp_path):
    set_policy(app, "allowlist", python=["beta"])
    run, outcome = install(live, tmp_path, "uv", "beta")
    assert outcome.ok, outcome.output
    assert "beta==1.1" in outcome.output  # 9.0 is yanked upstream, and stays yanked through the proxy
