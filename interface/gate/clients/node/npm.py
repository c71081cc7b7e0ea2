"""npm through the gate: `npm install NAMES`, `npm install` and `npm ci`.

The registry and every scope npm reports are pointed at the index on the command line (see
`npmrc`), and `replace-registry-host=always` makes npm fetch each lockfile `resolved` URL from
the index instead, whatever host the lockfile names (npm keeps the path: the index serves
tarballs under the same paths as a registry). npm's cache is the run's own, so nothing
installs from a cache the index never judged.

An npmrc's `proxy` and `https-proxy` are overridden on the command line (`false`, `null`: npm
then takes its proxy from HTTP(S)_PROXY, as with no setting, and lifecycle scripts see them
empty), and its `noproxy` by the gate's NO_PROXY (see `npmrc`), which names the index: npm
reaches the index directly, never through a proxy a project names.
"""

from __future__ import annotations

import os

from . import npmrc
from .project import project_plan

INSTALL = frozenset("install i add in ins inst insta instal isnt isnta isntal isntall".split())
CLEAN_INSTALL = frozenset("ci clean-install ic install-clean isntall-clean".split())
PROXIES = ("--proxy=false", "--https-proxy=null")  # no setting, in npm's types: the environment's proxy

# Flags a project install may carry: they change neither sources nor caches.
PROJECT_FLAGS = frozenset(
    "--ignore-scripts --no-audit --no-fund --silent --quiet --omit --include --production "
    "--foreground-scripts --loglevel --no-save --no-package-lock --no-progress".split()
)


def plan(command: list[str], cwd: str):
    return project_plan(command, cwd, INSTALL | CLEAN_INSTALL, INSTALL, PROJECT_FLAGS)


def prepare(argv: list[str], run: dict, workdir: str, env: dict, cwd: str):
    env.update(npmrc.settings(run, workdir, env["no_proxy"]))
    registry = run["npm"]
    fixed = [
        f"--registry={registry}",
        "--replace-registry-host=always",
        f"--cache={os.path.join(workdir, 'cache')}",
        *PROXIES,
    ]
    options, _ = npmrc.pointed_at_index(argv[0], fixed, "--{}={}", registry, env, cwd)
    return [argv[0], *options, *argv[1:]], env
