"""How the gate runs an installer so that it can only install through the service's index.

- The program is one the gate finds itself on a trusted path: never `./pip`, never a path given
  on the command line; `python -m pip` runs with -I (no PYTHON* variables, no user site, no
  working directory on sys.path, so a `./pip/` module cannot stand in for pip).
- Its environment keeps nothing that redirects installs (index, extra index, find-links,
  configuration files, requirement, constraint and target variables, registries, PYTHONPATH,
  NODE_OPTIONS, ...), and its configuration files are the gate's own: pip reads none
  (PIP_CONFIG_FILE=/dev/null), uv none (UV_NO_CONFIG), npm and pnpm a per-run user and global
  npmrc holding only the run token, scoped to the index.
- npm's and pnpm's project .npmrc beats their user config and (for pnpm) the environment, so
  the registry and every scope an .npmrc above the working directory names are pointed at the
  index on the command line, which beats every file.

Standard library only, like the whole gate.
"""

from __future__ import annotations

import os
import re
import shutil
import urllib.parse

PIP = re.compile(r"pip(\d+(\.\d+)*)?\Z")
PYTHON = re.compile(r"python(\d+(\.\d+)*)?\Z")

# Variable families that steer installers: cleared from the installer's environment, but for
# the few beside each that only change output, timeouts or caches. Compared upper-cased (npm
# reads its variables in any case; clearing too much is the safe side).
CLEARED = (
    (
        "PIP_",
        "CERT CLIENT_CERT DEFAULT_TIMEOUT TIMEOUT RETRIES PROGRESS_BAR NO_COLOR CACHE_DIR NO_CACHE_DIR QUIET VERBOSE",
    ),
    ("UV_", "CACHE_DIR NO_CACHE NO_PROGRESS LINK_MODE HTTP_TIMEOUT NATIVE_TLS CONCURRENT_DOWNLOADS CONCURRENT_BUILDS"),
    ("PYTHON", "UNBUFFERED DONTWRITEBYTECODE IOENCODING UTF8"),
    ("NODE_", "EXTRA_CA_CERTS ENV"),
    ("NPM_CONFIG_", "CACHE LOGLEVEL COLOR PROGRESS FUND"),
    ("PNPM_CONFIG_", ""),
    ("COREPACK_", ""),  # a corepack shim downloads the package manager itself
    ("RUNCODE_POLICY_", ""),  # the gate's own: its sandbox token never reaches the installer
)
# An .npmrc line that sends a scope to a registry: `@scope:registry = URL`.
SCOPED_REGISTRY = re.compile(r"""^\s*["']?(@[^\s=:;#"']+):registry["']?\s*=""")


class Usage(Exception):
    """Not a command the gate runs."""


class Unresolvable(Exception):
    """The installer is not on the trusted path, or its configuration cannot be made safe."""


def installer_kind(command: list[str]) -> str:
    """`pip`, `uv`, `npm` or `pnpm`; Usage for anything else, a program named by path included."""
    program = command[0]
    if "/" in program or "\\" in program:
        raise Usage(
            f"name the installer, not a path: {program!r}; the gate runs the one it finds "
            "on its trusted path (RUNCODE_POLICY_INSTALLER_PATH)"
        )
    if PIP.match(program) or (PYTHON.match(program) and command[1:3] == ["-m", "pip"]):
        return "pip"
    if program == "uv" and command[1:2] == ["pip"]:
        return "uv"
    if program in ("npm", "pnpm"):
        return program
    raise Usage(f"{program!r} is not an installer the gate runs: use pip, python -m pip, uv pip, npm or pnpm")


def resolved_argv(command: list[str], path: str) -> list[str]:
    """The command with its program found on the trusted path (its absolute entries only)."""
    trusted = os.pathsep.join(p for p in path.split(os.pathsep) if os.path.isabs(p))
    program = shutil.which(command[0], path=trusted)
    if program is None:
        raise Unresolvable(f"{command[0]!r} is not on the trusted path {trusted!r}")
    if PYTHON.match(command[0]):
        return [program, "-I", "-m", "pip", *command[3:]]
    return [program, *command[1:]]


def prepared(kind: str, argv: list[str], run: dict, workdir: str, service: str, environ, cwd: str):
    """(argv, environment) for the installer: redirects removed, pointed at the run's index."""
    env = cleared(environ)
    hosts = [urllib.parse.urlsplit(u).hostname for u in (service, run["pypi"], run["npm"])]
    for name in ("NO_PROXY", "no_proxy"):  # the index is reached directly, never via a proxy
        env[name] = ",".join(filter(None, [environ.get(name, ""), *dict.fromkeys(hosts)]))
    if kind == "pip":
        env.update(pip_settings(run))
    elif kind == "uv":
        env.update(uv_settings(run))
    else:
        argv = npm_argv(kind, argv, run["npm"], cwd)
        env.update(npm_settings(kind, run, workdir, env["no_proxy"]))
    return argv, env


def cleared(environ) -> dict:
    """The environment without the installer-steering families (CLEARED)."""
    env = {}
    for name, value in environ.items():
        upper = name.upper()
        family = next((f for f in CLEARED if upper.startswith(f[0])), None)
        if family is None or upper[len(family[0]) :] in family[1]:
            env[name] = value
    return env


def with_password(url: str, token: str) -> str:
    """The index URL with the run token as its Basic password (any user name does)."""
    parts = urllib.parse.urlsplit(url)
    netloc = f"run:{urllib.parse.quote(token, safe='')}@{parts.netloc.rpartition('@')[2]}"
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


def pip_settings(run: dict) -> dict:
    return {
        "PIP_INDEX_URL": with_password(run["pypi"], run["token"]),
        "PIP_CONFIG_FILE": os.devnull,  # pip then reads no configuration file at all
        "PIP_NO_INPUT": "1",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        # the `pip` script is not run with -I: keep the user site and cwd off sys.path
        "PYTHONNOUSERSITE": "1",
        "PYTHONSAFEPATH": "1",
    }


def uv_settings(run: dict) -> dict:
    index = with_password(run["pypi"], run["token"])
    return {"UV_DEFAULT_INDEX": index, "UV_INDEX_URL": index, "UV_NO_CONFIG": "1", "UV_KEYRING_PROVIDER": "disabled"}


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


def write_private(path: str, text: str) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(text)
