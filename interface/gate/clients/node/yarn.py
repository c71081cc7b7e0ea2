"""yarn through the gate: `yarn install` (or plain `yarn`), yarn 1.x and yarn 4.x alike.

Which yarn it is, the gate asks the program it found (`yarn --version`); a project's own yarn
(`yarn-path`, `yarnPath`) never runs in its place (YARN_IGNORE_PATH).

- yarn 1 gets the registry on its command line and the run token in an npmrc of the gate's own
  (as npm does); its own view (`yarn config list --json`, both its yarn and its npm settings)
  must then name no other registry or scope registry, or the install is refused: yarn 1 has no
  command-line override for a scope. It fetches a yarn.lock `resolved` URL as it is, so a
  yarn.lock that names anything but the index is refused.
- yarn 4 takes the registry and the token from the environment, which beats .yarnrc.yml; a
  scope that .yarnrc.yml sends to another registry (`npmScopes`) cannot be overridden that way,
  so it is refused, as is a yarn.lock URL anywhere but the index. Its `packageExtensions` (which
  add dependencies to any package) must name registry versions only (see `settings`).

yarn 1 gets a cache and an offline mirror of the run's own; yarn 4 keeps its cache in the project
(.yarn/cache).

Neither yarn may reach the index through a proxy a project names (around the index, with the
run token). yarn 1 sends every request through its `proxy` / `https-proxy` setting (.yarnrc,
.npmrc, or a .yarnrc line read as a flag: `--proxy`, `--install.https-proxy`), whatever NO_PROXY
says, and has no way to be told "the environment's" on its command line: one it reports is
refused. yarn 4 takes no proxy from the environment; YARN_HTTP_PROXY and YARN_HTTPS_PROXY, empty,
beat `httpProxy` / `httpsProxy` in .yarnrc.yml, but not a host's own (`networkSettings`), which is
refused.
"""

from __future__ import annotations

import json
import os
import re
import urllib.parse

from ...installers import Unresolvable
from . import npmrc, settings
from .project import check_lockfiles, project_plan
from .query import client_output, mismatched

PROJECT_FLAGS = frozenset(
    "--frozen-lockfile --immutable --pure-lockfile --ignore-scripts --production --silent "
    "--non-interactive --no-progress --inline-builds --mode".split()
)
LOCKFILES = ("yarn.lock",)
RC_FILE = ".yarnrc.yml"  # yarn 4 reads it in the project, every folder above, and the home folder
YARN1_FILES = (".yarnrc", ".npmrc")  # ...and yarn 1 these
YARN1_PROXIES = ("proxy", "https-proxy")
RC_FLAG = re.compile(r"--(?:[^.]+\.)?(.*)")  # a .yarnrc key yarn 1 reads as a flag (`--install.proxy`)
BERRY_PROXIES = ("httpProxy", "httpsProxy")


def plan(command: list[str], cwd: str):
    return project_plan(command, cwd, {"install", ""}, set(), PROJECT_FLAGS)


def prepare(argv: list[str], run: dict, workdir: str, env: dict, cwd: str):
    registry = run["npm"]
    check_lockfiles(cwd, LOCKFILES, registry, "yarn")
    env["YARN_IGNORE_PATH"] = "1"
    version = client_output([argv[0], "--version"], env, cwd).strip()
    if version.startswith("1."):
        return yarn1(argv, run, workdir, env, cwd)
    if version.split(".")[0].isdecimal() and int(version.split(".")[0]) >= 2:
        return yarn_berry(argv, run, env, cwd)
    raise Unresolvable(f"yarn {version!r} is not a yarn the gate knows (1.x or 2.x and later)")


def yarn1(argv: list[str], run: dict, workdir: str, env: dict, cwd: str):
    registry = run["npm"]
    # yarn 1 sends the token only with always-auth, and reads it only from an npmrc
    env.update(npmrc.settings(run, workdir, env["no_proxy"], more="always-auth=true\n"))
    # yarn 1 installs a tarball it finds in its offline mirror (`yarn-offline-mirror` in any
    # .yarnrc it reads) without asking the registry; this variable beats every file (and yarn
    # copies each tarball it fetches there: the folder must exist)
    mirror = os.path.join(workdir, "offline-mirror")
    os.mkdir(mirror, 0o700)
    env["YARN_YARN_OFFLINE_MIRROR"] = mirror
    options = ["--registry", registry]
    lines = client_output([argv[0], "config", "list", "--json", *options], env, cwd).splitlines()
    seen: dict = {}
    proxies: dict = {}
    for line in lines:
        event = json.loads(line) if line.startswith("{") else {}
        if event.get("type") == "inspect" and isinstance(event.get("data"), dict):
            data = event["data"]
            seen.update({k: str(v) for k, v in data.items() if k == "registry" or k.endswith(npmrc.SCOPE_SUFFIX)})
            proxies.update({k: v for k, v in data.items() if is_yarn1_proxy(k) and v not in ("", None)})
    if proxies:
        key, value = next(iter(proxies.items()))
        home = env.get("HOME", "")
        files = [path for name in YARN1_FILES for path in settings.files_above(cwd, name, os.path.join(home, name))]
        raise Unresolvable(
            f"{settings.written(str(value), files)}yarn's {key} is {value!r}: yarn 1 would send its requests "
            "for the package index through it, around the index and with the run token, and cannot be told "
            "otherwise; remove it (the gate reaches the index directly)"
        )
    wrong = mismatched(seen, registry)
    if wrong or "registry" not in seen:
        listed = ", ".join(f"{key} = {url}" for key, url in sorted(wrong.items())) or "no registry set"
        raise Unresolvable(
            f"yarn would still fetch from outside the package index ({listed}); yarn 1 cannot be told "
            "otherwise on its command line: remove it from .npmrc / .yarnrc"
        )
    cache = ["--cache-folder", os.path.join(workdir, "cache"), "--non-interactive"]
    return [argv[0], *argv[1:], *options, *cache], env


def yarn_berry(argv: list[str], run: dict, env: dict, cwd: str):
    registry = run["npm"]
    env.update(
        {
            "YARN_NPM_REGISTRY_SERVER": registry,
            "YARN_NPM_AUTH_TOKEN": run["token"],
            "YARN_NPM_ALWAYS_AUTH": "true",
            "YARN_UNSAFE_HTTP_WHITELIST": urllib.parse.urlsplit(registry).hostname or "",
            "YARN_ENABLE_TELEMETRY": "0",
            "YARN_ENABLE_GLOBAL_CACHE": "0",
            "YARN_HTTP_PROXY": "",  # no proxy, yarn 4's own default (it reads none from HTTP_PROXY)
            "YARN_HTTPS_PROXY": "",
        }
    )
    server = client_output([argv[0], "config", "get", "npmRegistryServer"], env, cwd).strip()
    scopes = berry_setting(argv[0], "npmScopes", env, cwd)
    seen = {"npmRegistryServer": server}
    for scope, entry in (scopes or {}).items():
        if isinstance(entry, dict) and entry.get("npmRegistryServer") is not None:
            seen[f"npmScopes.{scope}.npmRegistryServer"] = str(entry["npmRegistryServer"])
    wrong = mismatched(seen, registry)
    if wrong:
        listed = ", ".join(f"{key} = {url}" for key, url in sorted(wrong.items()))
        raise Unresolvable(
            f"yarn would still fetch from outside the package index ({listed}); the gate cannot point a "
            "yarn scope at the index: remove it from .yarnrc.yml"
        )
    files = settings.files_above(cwd, RC_FILE, os.path.join(env.get("HOME", ""), RC_FILE))
    network = berry_setting(argv[0], "networkSettings", env, cwd)
    for hosts, entry in (network if isinstance(network, dict) else {}).items():
        for name in BERRY_PROXIES:
            proxy = entry.get(name) if isinstance(entry, dict) else None
            if proxy:
                raise Unresolvable(
                    f"{settings.written(str(proxy), files)}networkSettings.{hosts}.{name} is {proxy!r}: yarn 4 "
                    "would send its requests for those hosts through it, and the gate cannot override a "
                    "host's own network settings; remove it from .yarnrc.yml (the gate reaches the index directly)"
                )
    extensions = berry_setting(argv[0], "packageExtensions", env, cwd)
    settings.check({"packageExtensions": extensions or {}}, files)
    return list(argv), env


def is_yarn1_proxy(key: str) -> bool:
    """Whether yarn 1 takes the setting `key` (as `yarn config list` names it) for a proxy."""
    flag = RC_FLAG.fullmatch(key)
    return (flag.group(1) if flag else key) in YARN1_PROXIES


def berry_setting(program: str, name: str, env: dict, cwd: str) -> object:
    """A yarn 4 setting as its JSON (`yarn config get NAME --json`); None when it is unset."""
    text = client_output([program, "config", "get", name, "--json"], env, cwd).strip()
    if text == "undefined":  # what yarn prints for an unset setting
        return None
    try:
        return json.loads(text)
    except ValueError:
        raise Unresolvable(f"`yarn config get {name} --json` answered what is not JSON: {text[:200]!r}") from None
