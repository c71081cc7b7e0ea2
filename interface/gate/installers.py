"""What every installer the gate runs has in common: a trusted program and a cleared environment.

- The program is one the gate finds itself on a trusted path: never `./pip`, never a path given
  on the command line; `python -m pip` runs with -I (no PYTHON* variables, no user site, no
  working directory on sys.path, so a `./pip/` module cannot stand in for pip).
- Its environment keeps nothing that redirects installs (index, extra index, find-links,
  configuration files, requirement, constraint and target variables, registries, PYTHONPATH,
  NODE_OPTIONS, ...); each ecosystem's module in `clients` then adds the settings that point
  the client at the index with the run token.

Standard library only, like the whole gate.
"""

from __future__ import annotations

import os
import re
import shutil
import urllib.parse

PYTHON = re.compile(r"python(\d+(\.\d+)*)?\Z")

# Variable families that steer installers: cleared from the installer's environment, but for
# the few named beside each that only change output, timeouts or caches, kept by exact name
# (`npm_config_ca`, a CA to trust, is not `npm_config_cache`). Compared upper-cased (npm reads
# its variables in any case; clearing too much is the safe side).
CLEARED = (
    (
        "PIP_",
        "CERT CLIENT_CERT DEFAULT_TIMEOUT TIMEOUT RETRIES PROGRESS_BAR NO_COLOR CACHE_DIR NO_CACHE_DIR QUIET VERBOSE",
    ),
    ("UV_", "CACHE_DIR NO_CACHE NO_PROGRESS LINK_MODE HTTP_TIMEOUT NATIVE_TLS CONCURRENT_DOWNLOADS CONCURRENT_BUILDS"),
    # Every setting of pdm, pipenv and poetry is one of these too (PDM_LOCKFILE, PIPENV_PIPFILE, ...).
    ("PDM_", "CACHE_DIR PYTHON IGNORE_SAVED_PYTHON IGNORE_ACTIVE_VENV REQUEST_TIMEOUT"),
    ("PIPENV_", "PYTHON VENV_IN_PROJECT IGNORE_VIRTUALENVS CACHE_DIR TIMEOUT INSTALL_TIMEOUT QUIET VERBOSE"),
    ("POETRY_", "CACHE_DIR VIRTUALENVS_IN_PROJECT VIRTUALENVS_CREATE REQUESTS_TIMEOUT"),
    ("PYTHON", "UNBUFFERED DONTWRITEBYTECODE IOENCODING UTF8"),
    ("NODE_", "EXTRA_CA_CERTS ENV"),
    ("NPM_CONFIG_", "CACHE LOGLEVEL COLOR PROGRESS FUND"),
    ("PNPM_CONFIG_", ""),
    ("COREPACK_", ""),  # a corepack shim downloads the package manager itself
    ("YARN_", ""),  # yarn 1 and 4 read any setting from YARN_* (registries, scopes, yarnPath)
    ("BUN_CONFIG_", ""),  # bun's registry and token
    ("RUNCODE_POLICY_", ""),  # the gate's own: its sandbox token never reaches the installer
)


class Usage(Exception):
    """Not a command the gate runs."""


class Unresolvable(Exception):
    """The installer is not on the trusted path, or its configuration cannot be made safe."""


def resolved_argv(command: list[str], path: str) -> list[str]:
    """The command with its program found on the trusted path (its absolute entries only)."""
    trusted = os.pathsep.join(p for p in path.split(os.pathsep) if os.path.isabs(p))
    program = shutil.which(command[0], path=trusted)
    if program is None:
        raise Unresolvable(f"{command[0]!r} is not on the trusted path {trusted!r}")
    if PYTHON.match(command[0]):
        return [program, "-I", "-m", "pip", *command[3:]]
    return [program, *command[1:]]


def cleared(environ) -> dict:
    """The environment without the installer-steering families (CLEARED)."""
    env = {}
    for name, value in environ.items():
        upper = name.upper()
        family = next((f for f in CLEARED if upper.startswith(f[0])), None)
        if family is None or upper[len(family[0]) :] in family[1].split():
            env[name] = value
    return env


def no_proxy_for(environ, service: str, run: dict) -> dict:
    """NO_PROXY naming the service's hosts: the index is reached directly, never via a proxy. Both
    spellings name every host either names (clients differ on which one they read, and a client
    the gate gives one value, such as pnpm, gets all of them)."""
    given = [host.strip() for name in ("NO_PROXY", "no_proxy") for host in environ.get(name, "").split(",")]
    hosts = [urllib.parse.urlsplit(u).hostname for u in (service, run["pypi"], run["npm"])]
    listed = ",".join(dict.fromkeys(filter(None, [*given, *hosts])))
    return {"NO_PROXY": listed, "no_proxy": listed}


def with_password(url: str, token: str) -> str:
    """The index URL with the run token as its Basic password (any user name does)."""
    parts = urllib.parse.urlsplit(url)
    netloc = f"run:{urllib.parse.quote(token, safe='')}@{parts.netloc.rpartition('@')[2]}"
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


def write_private(path: str, text: str) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(text)
