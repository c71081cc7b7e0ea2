"""What npm and pnpm share: npmrc files of the gate's own, and scope registries found through
the client's own view of its configuration (`<client> config list --json`).

Each gets a per-run user and global npmrc holding only the run token, scoped to the index. A
project .npmrc beats the user config and (for pnpm) the environment, so the registry and every
scope the client itself reports (spelt as it reports them: `@EVIL`, an escaped `\\u0040evil`
already unescaped, a byte-order mark already stripped) are pointed at the index on the command
line, which beats every file; then the client is asked again, with those settings, and any
registry that is still not the index is refused.

Standard library only, like the whole gate.
"""

from __future__ import annotations

import os
import urllib.parse

from ...installers import Unresolvable, write_private
from .query import client_json, mismatched

SCOPE_SUFFIX = ":registry"


def settings(run: dict, workdir: str, no_proxy: str, more: str = "") -> dict:
    """The registry, and user and global configuration files of the gate's own (the user file
    holds the run token, and `more` lines)."""
    registry = run["npm"]
    userconfig, globalconfig = os.path.join(workdir, "npmrc"), os.path.join(workdir, "global-npmrc")
    write_private(userconfig, f"{nerf_dart(registry)}:_authToken={run['token']}\n{more}")
    write_private(globalconfig, "")
    return {
        "npm_config_registry": registry,
        "npm_config_userconfig": userconfig,
        "npm_config_globalconfig": globalconfig,
        "npm_config_noproxy": no_proxy,
        "npm_config_audit": "false",
        "npm_config_update_notifier": "false",
    }


def pointed_at_index(program: str, settings: list[str], option: str, registry: str, env: dict, cwd: str):
    """(options, configuration): `settings` plus the command-line options that point every scope
    the client reports at the index (`option` formats one: `--{}={}` or `--config.{}={}`),
    checked by asking again; and the client's configuration with them, as it answered then."""
    seen = scope_keys(config_list(program, settings, env, cwd))
    pointed = (option.format(key, registry) for key in sorted(seen))
    options = [*settings, *(given for given in pointed if given not in settings)]  # pnpm reports its @jsr too
    config = config_list(program, options, env, cwd)
    wrong = mismatched(registries(config), registry)
    if wrong:
        listed = ", ".join(f"{key} = {url}" for key, url in sorted(wrong.items()))
        raise Unresolvable(f"{os.path.basename(program)} would still fetch from outside the package index ({listed})")
    return options, config


def config_list(program: str, options: list[str], env: dict, cwd: str) -> dict:
    config = client_json([program, "config", "list", "--json", *options], env, cwd)
    if not isinstance(config, dict):
        raise Unresolvable(f"`{os.path.basename(program)} config list --json` did not answer an object")
    return config


def scope_keys(config: dict) -> set:
    """Every `@scope:registry` key, in the client's own spelling; pnpm also lists them by registry."""
    keys = {key for key in config if key.startswith("@") and key.endswith(SCOPE_SUFFIX)}
    for entry in _registry_entries(config).values():
        keys |= {f"{scope}{SCOPE_SUFFIX}" for scope in entry.get("scopes", ()) if scope != "@"}
    return keys


def registries(config: dict) -> dict:
    """{setting: URL} for every setting that chooses where packages come from."""
    found = {key: value for key, value in config.items() if key == "registry" or key.endswith(SCOPE_SUFFIX)}
    for url, entry in _registry_entries(config).items():  # pnpm: {URL: {"scopes": [...]}}
        found.update({f"registries[{url}] {scope}": url for scope in entry.get("scopes", ())})
    return {key: str(value) for key, value in found.items()}


def _registry_entries(config: dict) -> dict:
    entries = config.get("registries")
    if not isinstance(entries, dict):
        return {}
    return {url: entry for url, entry in entries.items() if isinstance(entry, dict)}


def nerf_dart(url: str) -> str:
    """npm's key for one registry's credentials: `//host:port/path/`."""
    parts = urllib.parse.urlsplit(url)
    path = parts.path if parts.path.endswith("/") else parts.path + "/"
    return f"//{parts.netloc.rpartition('@')[2]}{path}"
