"""Real installers through the gate and the service's package index, with pypiserver (a real
third-party PyPI server, HTML pages only) as the index's upstream, all on 127.0.0.1.

The tree: alpha depends on beta. Each bypass of the issue ("Why") is a test: before the gate ran
its installer through the index, every one of them installed beta through the "allowed"
command `pip install alpha`, with only alpha on the allow list.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from tests.support.gate import Gate, sandbox_env
from tests.support.index_fixtures import set_policy
from tests.support.index_live import sqlite_store  # noqa: F401 - fixture database_url: SQLite only
from tests.support.python_gate import (  # noqa: F401 - fixtures project, live_env
    index_decisions,
    project_folder,
    pypiserver_behind_the_index,
)
from tests.support.target_env import TargetEnv
from tests.support.third_party import require

MARKER = "import pathlib, sys; pathlib.Path({path!r}).write_text('evil ran'); sys.exit(0)\n"


@pytest.fixture
def wheelhouse(pypiserver_upstream):
    return pypiserver_upstream.packages  # the wheels pypiserver serves


@pytest.fixture
def target(tmp_path) -> TargetEnv:
    return TargetEnv(tmp_path / "venv")


@pytest.fixture
def gate(tmp_path, target):
    return Gate(tmp_path, installer_path=f"{target.bin}:/usr/bin:/bin")


@pytest.fixture
def env(live, tmp_path) -> dict:
    home = tmp_path / "home"
    home.mkdir()
    venv = tmp_path / "venv"  # the sandbox's own PATH and environment (the gate ignores its PATH)
    return sandbox_env(live, home, VIRTUAL_ENV=str(venv), PATH=f"{venv / 'bin'}:/usr/bin:/bin")


def test_an_allowed_tree_installs_through_the_index(gate, env, app, target, project):
    set_policy(app, "allowlist", python=["alpha", "beta"])
    done = gate("--", "pip", "install", "alpha", env=env, cwd=project)
    assert done.returncode == 0, done.stderr
    assert {"alpha", "beta"} <= target.installed()
    assert {("alpha", True), ("beta", True)} <= index_decisions(app)


@pytest.mark.parametrize("rule", ["allowlist", "denylist"])
def test_a_denied_dependency_fails_the_install_though_an_older_parent_lacks_it_and_the_gate_prints_it(
    gate, env, app, target, project, rule
):
    set_policy(app, rule, python=["alpha"] if rule == "allowlist" else ["beta"])
    done = gate("--", "pip", "install", "alpha", env=env, cwd=project)
    assert done.returncode == 3, done.stderr  # the installer failed; the gate says the index refused beta
    assert "beta" not in target.installed() and "alpha" not in target.installed()  # nor alpha 0.9, without beta
    reason = "not-on-the-allow-list" if rule == "allowlist" else "matches-the-deny-list"
    assert f"denied: beta (python) \u2014 {reason}" in done.stderr, done.stderr


def redirect(kind: str, upstream: str, wheelhouse, tmp_path, target) -> dict:
    """The environment (and files) of one bypass from the issue, aimed at the raw upstream."""
    simple = f"{upstream}/simple/"
    conf = tmp_path / "evil-pip.conf"
    conf.write_text(f"[global]\nindex-url = {simple}\n")
    requirements = tmp_path / "evil-requirements.txt"
    requirements.write_text(f"--index-url {simple}\nbeta\n")
    if kind == "pip.conf":  # the environment's own (site) configuration file
        (target.root / "pip.conf").write_text(conf.read_text())
        return {}
    return {
        "PIP_INDEX_URL": {"PIP_INDEX_URL": simple},
        "PIP_EXTRA_INDEX_URL": {"PIP_EXTRA_INDEX_URL": simple},
        "PIP_FIND_LINKS": {"PIP_FIND_LINKS": str(wheelhouse), "PIP_NO_INDEX": "1"},
        "PIP_REQUIREMENT": {"PIP_REQUIREMENT": str(requirements)},
        "PIP_CONFIG_FILE": {"PIP_CONFIG_FILE": str(conf)},
    }[kind]


@pytest.mark.parametrize(
    "kind", ["PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_REQUIREMENT", "PIP_CONFIG_FILE", "pip.conf"]
)
def test_a_redirecting_variable_or_config_file_cannot_install_a_denied_package(
    gate, env, app, target, project, pypiserver_upstream, wheelhouse, tmp_path, kind
):
    set_policy(app, "allowlist", python=["alpha"])
    extra = redirect(kind, pypiserver_upstream.url, wheelhouse, tmp_path, target)
    done = gate("--", "pip", "install", "alpha", env={**env, **extra}, cwd=project)
    assert "beta" not in target.installed(), done.stderr
    assert done.returncode != 0 and "denied: beta (python)" in done.stderr, done.stderr


def test_a_pip_module_in_the_working_directory_cannot_stand_in_for_pip(gate, env, app, target, project, tmp_path):
    set_policy(app, "allowlist", python=["alpha", "beta"])
    marker = tmp_path / "evil-ran"
    (project / "pip").mkdir()
    (project / "pip" / "__init__.py").write_text("")
    (project / "pip" / "__main__.py").write_text(MARKER.format(path=str(marker)))
    done = gate("--", "python", "-m", "pip", "install", "alpha", env=env, cwd=project)
    assert done.returncode == 0, done.stderr
    assert not marker.exists() and {"alpha", "beta"} <= target.installed()  # the real pip ran


def test_a_pip_package_on_pythonpath_cannot_stand_in_for_pip(gate, env, app, target, project, tmp_path):
    set_policy(app, "allowlist", python=["alpha", "beta"])
    marker, shadow = tmp_path / "evil-ran", tmp_path / "shadow"
    (shadow / "pip" / "_internal" / "cli").mkdir(parents=True)
    for folder in ("pip", "pip/_internal", "pip/_internal/cli"):
        (shadow / folder / "__init__.py").write_text("")
    (shadow / "pip/_internal/cli/main.py").write_text(f"def main():\n    {MARKER.format(path=str(marker))}")
    done = gate("--", "pip", "install", "alpha", env={**env, "PYTHONPATH": str(shadow)}, cwd=project)
    assert done.returncode == 0, done.stderr
    assert not marker.exists() and {"alpha", "beta"} <= target.installed()


def test_another_pip_named_by_path_is_refused(gate, env, app, target, project, tmp_path):
    set_policy(app, "allowlist", python=["alpha"])
    marker = tmp_path / "evil-ran"
    evil = project / "tools" / "pip"
    evil.parent.mkdir()
    evil.write_text(f"#!/bin/sh\necho evil > {marker}\n")
    evil.chmod(0o755)
    done = gate("--", "./tools/pip", "install", "alpha", env=env, cwd=project)
    assert done.returncode == 2 and not marker.exists(), done.stderr


@pytest.fixture
def uv(tmp_path):
    """A bin folder holding only uv (from the [dev] extra), for the gate's trusted path."""
    found = shutil.which("uv", path=str(Path(sys.executable).parent))
    require("uv", found is not None, "pip install -e '.[dev]'")
    folder = tmp_path / "uv-bin"
    folder.mkdir()
    (folder / "uv").symlink_to(found)
    return folder


@pytest.mark.parametrize("allowed", [["alpha"], ["alpha", "beta"]], ids=["alpha-only", "alpha-and-beta"])
def test_uv_pip_install_goes_through_the_index(tmp_path, env, app, target, project, uv, allowed):
    set_policy(app, "allowlist", python=allowed)
    gate = Gate(tmp_path / "uv-gate", installer_path=str(uv))
    done = gate(
        "--", "uv", "pip", "install", "alpha", env={**env, "UV_CACHE_DIR": str(tmp_path / "uv-cache")}, cwd=project
    )
    if allowed == ["alpha"]:
        assert done.returncode == 3 and not {"alpha", "beta"} & target.installed(), done.stderr
        assert "denied: beta (python) \u2014 not-on-the-allow-list" in done.stderr, done.stderr
    else:
        assert done.returncode == 0, done.stderr
        assert {"alpha", "beta"} <= target.installed()


def test_a_uv_toml_cannot_add_an_index(tmp_path, env, app, target, project, uv, pypiserver_upstream):
    set_policy(app, "allowlist", python=["alpha"])
    (project / "uv.toml").write_text(f'extra-index-url = ["{pypiserver_upstream.url}/simple/"]\n')
    gate = Gate(tmp_path / "uv-gate", installer_path=str(uv))
    done = gate(
        "--", "uv", "pip", "install", "alpha", env={**env, "UV_CACHE_DIR": str(tmp_path / "uv-cache")}, cwd=project
    )
    assert "beta" not in target.installed(), done.stderr
    assert done.returncode != 0 and "denied: beta (python)" in done.stderr, done.stderr
