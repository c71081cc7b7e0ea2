"""How the gate runs an installer: its own program, an environment with nothing that redirects
installs, its own configuration files, a run token instead of the sandbox's. Stand-in installers
record their argv, environment and the config files they were given; the service is real."""

from __future__ import annotations

import os
import urllib.parse
from pathlib import Path

import pytest

from tests.support.gate import Gate, sandbox_env

REDIRECTS = {  # every one of these, left in place, sends an "allowed" install elsewhere
    "PIP_INDEX_URL": "http://evil.test/simple",
    "PIP_EXTRA_INDEX_URL": "http://evil.test/simple",
    "PIP_FIND_LINKS": "/tmp/evil-wheels",
    "PIP_REQUIREMENT": "/tmp/evil-requirements.txt",
    "PIP_CONSTRAINT": "/tmp/evil-constraints.txt",
    "PIP_CONFIG_FILE": "/tmp/evil-pip.conf",
    "PIP_TARGET": "/tmp/evil-target",
    "PIP_NO_INDEX": "1",
    "pip_index_url": "http://evil.test/simple",
    "UV_INDEX": "http://evil.test/simple",
    "UV_EXTRA_INDEX_URL": "http://evil.test/simple",
    "UV_FIND_LINKS": "/tmp/evil-wheels",
    "UV_CONFIG_FILE": "/tmp/evil-uv.toml",
    "UV_PROJECT": "/tmp/evil",  # another project than the one the gate finds from the working folder
    "UV_WORKING_DIRECTORY": "/tmp/evil",
    "npm_config_registry": "http://evil.test/",
    "NPM_CONFIG_USERCONFIG": "/tmp/evil-npmrc",
    "npm_config_globalconfig": "/tmp/evil-npmrc",
    "npm_config_@evil:registry": "http://evil.test/",
    "pnpm_config_registry": "http://evil.test/",
    "PYTHONPATH": "/tmp/evil",
    "PYTHONSTARTUP": "/tmp/evil.py",
    "PYTHONHOME": "/tmp/evil",
    "PYTHONUSERBASE": "/tmp/evil",
    "NODE_OPTIONS": "--require /tmp/evil.js",
    "NODE_PATH": "/tmp/evil",
    "COREPACK_NPM_REGISTRY": "http://evil.test/",
    "npm_config_ca": "-----BEGIN CERTIFICATE-----evil",  # part of the kept CACHE's name, not it
    "PDM_LOCKFILE": "/tmp/evil.lock",  # a lock with static URLs elsewhere
    "PDM_PROJECT": "/tmp/evil",
    "PIPENV_PIPFILE": "/tmp/evil/Pipfile",  # another Pipfile, with another [[source]]
    "PIPENV_DOTENV_LOCATION": "/tmp/evil.env",
    "POETRY_REPOSITORIES_EVIL_URL": "http://evil.test/simple",
    "POETRY_HTTP_BASIC_POLICY_USERNAME": "evil",
}
HARMLESS = {
    "PIP_DEFAULT_TIMEOUT": "60",
    "PYTHONUNBUFFERED": "1",
    "NODE_EXTRA_CA_CERTS": "/etc/ssl/ca.pem",
    "HTTPS_PROXY": "http://127.0.0.1:9",
    "LANG": "C.UTF-8",
}


@pytest.fixture
def gate(tmp_path):
    return Gate(tmp_path)


@pytest.fixture
def env(live) -> dict:
    return sandbox_env(live, "/nonexistent")


@pytest.fixture
def project(tmp_path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


def run_ok(gate, command, env, cwd) -> dict:
    done = gate("--", *command, env=env, cwd=cwd)
    assert done.returncode == 0, done.stderr
    return gate.ran()


@pytest.mark.parametrize(
    "command",
    [
        ["pip", "install", "pandas"],
        ["uv", "pip", "install", "pandas"],
        ["npm", "install", "left-pad"],
        ["pnpm", "add", "left-pad"],
        ["pdm", "install"],
        ["pipenv", "install"],
        ["poetry", "install"],
    ],
)
def test_nothing_that_redirects_installs_reaches_the_installer(gate, env, project, command):
    if command[0] == "poetry":  # it runs only with the index as the project's source
        source = f'[[tool.poetry.source]]\nname = "policy"\nurl = "{env["RUNCODE_POLICY_URL"]}/pypi/acme/simple/"\n'
        (project / "pyproject.toml").write_text('[tool.poetry]\nname = "app"\n' + source)
    ran = run_ok(gate, command, {**env, **REDIRECTS, **HARMLESS}, project)
    leaked = {name: value for name, value in ran["env"].items() if "evil" in value}
    assert leaked == {}
    assert {name: ran["env"].get(name) for name in HARMLESS} == HARMLESS
    assert "127.0.0.1" in ran["env"]["NO_PROXY"].split(",")  # the index, never via a proxy


def test_a_family_keeps_only_its_harmless_names_exactly_never_a_part_of_one(gate, env, project):
    given = {"npm_config_ca": "evil-ca", "npm_config_c": "evil", "PIP_CERT": "/etc/ssl/ca.pem", "PIP_": "evil"}
    ran = run_ok(gate, ["pip", "install", "pandas"], {**env, **given}, project)
    assert ran["env"].get("PIP_CERT") == "/etc/ssl/ca.pem"
    assert not {"npm_config_ca", "npm_config_c", "PIP_"} & set(ran["env"]), ran["env"]


@pytest.mark.parametrize("command", [["pip", "install", "pandas"], ["npm", "install", "left-pad"]])
def test_the_installer_gets_a_run_token_never_the_sandbox_token(gate, env, project, command):
    ran = run_ok(gate, command, env, project)
    given = " ".join([*ran["argv"], *ran["env"].values(), *ran["files"].values()])
    assert env["RUNCODE_POLICY_TOKEN"] not in given  # not even as RUNCODE_POLICY_TOKEN
    assert not [name for name in ran["env"] if name.startswith("RUNCODE_POLICY_")]


def test_pip_reads_no_configuration_file_and_uses_the_runs_index_with_its_token(gate, env, project):
    ran = run_ok(gate, ["pip", "install", "pandas"], env, project)
    given = ran["env"]
    assert given["PIP_CONFIG_FILE"] == os.devnull and given["PIP_NO_INPUT"] == "1"
    index = urllib.parse.urlsplit(given["PIP_INDEX_URL"])
    assert index.path == "/pypi/acme/simple/" and index.username == "run" and index.password
    assert f"{index.hostname}:{index.port}" == live_host(env)
    assert given["PYTHONNOUSERSITE"] == "1"


def test_uv_reads_no_configuration_file_and_uses_the_runs_index(gate, env, project):
    env = run_ok(gate, ["uv", "pip", "install", "pandas"], env, project)["env"]
    assert env["UV_NO_CONFIG"] == "1" and env["UV_DEFAULT_INDEX"] == env["UV_INDEX_URL"]
    assert urllib.parse.urlsplit(env["UV_DEFAULT_INDEX"]).path == "/pypi/acme/simple/"


def test_npm_gets_the_registry_on_its_command_line_and_config_files_of_the_gates_own(gate, env, project):
    (project / ".npmrc").write_text("registry=http://evil.test/\n@corp:registry = http://evil.test/corp/\n")
    ran = run_ok(gate, ["npm", "install", "left-pad"], env, project)
    registry = ran["env"]["npm_config_registry"]
    assert urllib.parse.urlsplit(registry).path == "/npm/acme/"
    user, global_ = ran["env"]["npm_config_userconfig"], ran["env"]["npm_config_globalconfig"]
    cache = os.path.join(os.path.dirname(user), "cache")  # the run's own, beside its config files
    assert ran["argv"][1:] == [
        f"--registry={registry}",
        "--replace-registry-host=always",
        f"--cache={cache}",
        "--proxy=false",  # npm's "no setting": a project's proxy never stands in for the environment's
        "--https-proxy=null",
        f"--@corp:registry={registry}",
        "install",
        "left-pad",
    ]
    token = ran["files"]["npm_config_userconfig"].strip().rpartition("=")[2]
    nerf = registry.replace("http:", "", 1)
    assert ran["files"]["npm_config_userconfig"] == f"{nerf}:_authToken={token}\n"
    assert ran["files"]["npm_config_globalconfig"] == ""
    assert not Path(user).exists() and not Path(global_).exists()  # removed after the run


def test_pnpm_gets_its_registry_and_every_scope_on_its_command_line(gate, env, project):
    (project.parent / ".npmrc").write_text('"@Corp:registry"=http://evil.test/corp/\n')  # a parent's counts too
    ran = run_ok(gate, ["pnpm", "add", "left-pad"], env, project)
    registry = ran["env"]["pnpm_config_registry"]
    assert ran["argv"][1:] == [
        f"--registry={registry}",
        "--config.update-notifier=false",
        "--ignore-pnpmfile",  # no pnpmfile hook rewrites what pnpm installs
        f"--config.@jsr:registry={registry}",
        "--config.https-proxy=http://127.0.0.1:9",  # the sandbox's proxies, never a project's
        "--config.http-proxy=http://127.0.0.1:9",
        f"--config.no-proxy={ran['env']['NO_PROXY']}",  # ...and never for the index
        f"--config.@Corp:registry={registry}",  # spelt as the client reports it
        "add",
        "left-pad",
    ]
    assert Path(ran["env"]["XDG_CONFIG_HOME"]).name == "xdg"  # no global pnpm config of the sandbox's


@pytest.mark.parametrize(
    ("given", "forced"),
    [
        ({"HTTPS_PROXY": "http://s:1", "http_proxy": "http://p:2"}, ("http://s:1", "http://p:2")),
        ({"HTTP_PROXY": "http://p:2"}, ("http://p:2", "http://p:2")),  # one it lacks takes the other's
        ({"https_proxy": "http://s:1", "HTTP_PROXY": ""}, ("http://s:1", "http://s:1")),
        ({}, None),  # none at all: pnpm's "bypass every proxy"
    ],
)
def test_pnpm_gets_the_environments_proxies_and_no_proxy_for_the_index(gate, env, project, given, forced):
    env = {**{k: v for k, v in env.items() if not k.endswith("_PROXY")}, "no_proxy": "corp.example", **given}
    ran = run_ok(gate, ["pnpm", "add", "left-pad"], env, project)
    options = [option for option in ran["argv"] if "proxy=" in option]
    if forced is None:
        assert options == ["--config.no-proxy=true"]
    else:
        listed = ran["env"]["NO_PROXY"]
        assert options == [
            f"--config.https-proxy={forced[0]}",
            f"--config.http-proxy={forced[1]}",
            f"--config.no-proxy={listed}",
        ]
        assert {"corp.example", "127.0.0.1"} <= set(listed.split(","))  # the sandbox's own, and the index
    assert {name: ran["env"][name] for name in ran["env"] if name.startswith("pnpm_config_") and "proxy" in name} == {
        f"pnpm_config_{option[len('--config.') :].partition('=')[0].replace('-', '_')}": option.partition("=")[2]
        for option in options
    }


def test_an_npmrc_key_made_of_a_variable_is_pointed_at_the_index_as_the_client_reads_it(gate, env, project):
    (project / ".npmrc").write_text("${SCOPE}:registry=http://evil.test/\n")
    ran = run_ok(gate, ["npm", "install", "left-pad"], {**env, "SCOPE": "@corp"}, project)
    registry = ran["env"]["npm_config_registry"]
    assert f"--@corp:registry={registry}" in ran["argv"]


def test_an_npmrc_key_the_client_leaves_unexpanded_fails_closed(gate, env, project):
    (project / ".npmrc").write_text("${SCOPE}:registry=http://evil.test/\n")  # SCOPE is not set
    done = gate("--", "npm", "install", "left-pad", env=env, cwd=project)
    assert done.returncode == 4 and gate.ran() is None, done.stderr
    assert "would still fetch from outside the package index (${SCOPE}:registry = http://evil.test/)" in done.stderr


@pytest.mark.parametrize("program", ["./pip", "/usr/bin/pip", "bin/npm", "..\\pip"])
def test_an_installer_named_by_path_is_refused_before_anything_is_asked(gate, env, project, program, app):
    done = gate("--", program, "install", "pandas", env=env, cwd=project)
    assert done.returncode == 2 and gate.ran() is None and "not a path" in done.stderr
    assert app.audit.decisions("acme")["decisions"] == []


def test_only_absolute_entries_of_the_trusted_path_are_searched(tmp_path, env, project):
    gate = Gate(tmp_path, installer_path=f".{os.pathsep}bin{os.pathsep}")
    (project / "bin").symlink_to(gate.programs)
    done = gate("--", "pip", "install", "pandas", env=env, cwd=project)
    assert done.returncode == 127 and gate.ran() is None and "trusted path" in done.stderr


def test_a_program_that_is_not_an_installer_is_a_usage_error(gate, env):
    done = gate("--", "curl", "https://example.org/x.whl", env=env)
    assert done.returncode == 2 and gate.ran() is None and "not an installer" in done.stderr


def live_host(env: dict) -> str:
    return urllib.parse.urlsplit(env["RUNCODE_POLICY_URL"]).netloc
