"""Node installers: npm and pnpm, pointed at the run's registry.

npm and pnpm get a per-run user and global npmrc holding only the run token, scoped to the index.
Their project .npmrc beats their user config and (for pnpm) the environment, so the registry and
every scope an .npmrc above the working directory names are pointed at the index on the command
line, which beats every file.
"""

from __future__ import annotations

import os
import re
import urllib.parse

from ..installers import Unresolvable, write_private
from .plan import Plan

# An .npmrc line that sends a scope to a registry: `@scope:registry = URL`.
SCOPED_REGISTRY = re.compile(r"""^\s*["']?(@[^\s=:;#"']+):registry["']?\s*=""")


def plan_for(command: list[str], cwd: str) -> Plan | None:
    if command[0] in ("npm", "pnpm"):
        return Plan(command[0], "node", {"command": command})
    return None


def prepare(kind: str, argv: list[str], run: dict, workdir: str, env: dict, cwd: str):
    argv = npm_argv(kind, argv, run["npm"], cwd)
    env.update(npm_settings(kind, run, workdir, env["no_proxy"]))
    return argv, env


def npm_settings(kind: str, run: dict, workdir: str, no_proxy: str) -> dict:
    """npm and pnpm: the registry, and user and global configuration files of the gate's own."""
    registry = run["npm"]
    userconfig, globalconfig = os.path.join(workdir, "npmrc"), os.path.join(workdir, "global-npmrc")
    write_private(userconfig, f"{nerf_dart(registry)}:_authToken={run['token']}\n")
    write_private(globalconfig, "")
    env = {
        "npm_config_registry": registry,
        "npm_config_userconfig": userconfig,
        "npm_config_globalconfig": globalconfig,
        "npm_config_noproxy": no_proxy,
        # a lockfile's public-registry URLs are fetched from the configured registry instead
        "npm_config_replace_registry_host": "npmjs",
        "npm_config_audit": "false",
        "npm_config_update_notifier": "false",
    }
    if kind == "pnpm":  # pnpm reads its own variables, and a global config in XDG_CONFIG_HOME
        xdg = os.path.join(workdir, "xdg")
        os.mkdir(xdg, 0o700)
        env.update({"pnpm_config_registry": registry, "XDG_CONFIG_HOME": xdg})
    return env


def npm_argv(kind: str, argv: list[str], registry: str, cwd: str) -> list[str]:
    """The registry and each scope that an .npmrc names, pointed at the index on the command line."""
    scopes = project_scopes(cwd) | ({"@jsr"} if kind == "pnpm" else set())  # pnpm's built-in scope
    option = "--config.{}:registry={}" if kind == "pnpm" else "--{}:registry={}"
    return [argv[0], f"--registry={registry}", *(option.format(s, registry) for s in sorted(scopes)), *argv[1:]]


def project_scopes(cwd: str) -> set:
    """Scopes given a registry by an .npmrc in the working directory or any directory above it
    (npm and pnpm read the project's own; every one above is a safe over-approximation)."""
    scopes, directory = set(), os.path.abspath(cwd)
    while True:
        for line in _lines(os.path.join(directory, ".npmrc")):
            key = line.split("=", 1)[0]
            if "${" in key:  # npm expands variables in keys: the scope cannot be known here
                raise Unresolvable(f"{directory}/.npmrc names a key through a variable: {key.strip()!r}")
            found = SCOPED_REGISTRY.match(line)
            if found:
                scopes.add(found.group(1).lower())
        parent = os.path.dirname(directory)
        if parent == directory:
            return scopes
        directory = parent


def _lines(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read().splitlines()
    except OSError:
        return []


def nerf_dart(url: str) -> str:
    """npm's key for one registry's credentials: `//host:port/path/`."""
    parts = urllib.parse.urlsplit(url)
    path = parts.path if parts.path.endswith("/") else parts.path + "/"
    return f"//{parts.netloc.rpartition('@')[2]}{path}"
