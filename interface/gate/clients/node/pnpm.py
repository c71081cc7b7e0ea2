"""pnpm through the gate: `pnpm add NAMES` and `pnpm install`.

pnpm reads its registries from .npmrc and pnpm-workspace.yaml (`registries:`); its own view
(`pnpm config list --json`) names them all, and each scope is pointed at the index on the
command line (see `npmrc`), then checked. pnpm-lock.yaml records no registry for registry
packages (they come from the configured one); a `tarball:` URL anywhere but the index is refused,
in the root's lockfile and in every project's own (`sharedWorkspaceLockfile: false`); a
`lockfileDir` (a lockfile elsewhere) is refused.
pnpm's update notifier asks the registry for pnpm itself in every run: it is turned off.

A pnpmfile's hooks (`.pnpmfile.cjs`, a `pnpmfile` or `globalPnpmfile` setting, a config
dependency's) can rewrite any package's dependencies, or the configuration, as pnpm runs:
pnpm runs with `--ignore-pnpmfile`. What pnpm-workspace.yaml adds to the project (`overrides`,
`packageExtensions`, catalogs) is judged as pnpm reports it (see `settings`).
"""

from __future__ import annotations

import os

from ...installers import Unresolvable
from . import npmrc, settings
from .project import LOCAL_PROTOCOLS, WORKSPACE_FILE, check_lockfiles, project_plan

PROJECT_FLAGS = frozenset(
    "--frozen-lockfile --prefer-frozen-lockfile --ignore-scripts --prod -P --dev -D --no-optional "
    "--silent --reporter --lockfile-only".split()
)
LOCKFILES = ("pnpm-lock.yaml",)
LOCKFILE_DIR = ("lockfileDir", "lockfile-dir")  # a lockfile elsewhere (pnpm reports the first)
BUILT_IN_SCOPES = ("@jsr",)  # pnpm's own scope registry (npm.jsr.io), not listed as a key
ADDING = ("overrides", "packageExtensions", "catalogs")  # settings that add to the dependencies


def plan(command: list[str], cwd: str):
    kept = (*LOCAL_PROTOCOLS, settings.CATALOG)  # resolved by pnpm's own catalogs, judged in prepare
    return project_plan(command, cwd, {"install", "i"}, {"add"}, PROJECT_FLAGS, kept)


def prepare(argv: list[str], run: dict, workdir: str, env: dict, cwd: str):
    registry = run["npm"]
    check_lockfiles(cwd, LOCKFILES, registry, "pnpm", below=True)  # a project may have its own
    env.update(npmrc.settings(run, workdir, env["no_proxy"]))
    xdg = os.path.join(workdir, "xdg")  # pnpm's global config.yaml lives there
    os.mkdir(xdg, 0o700)
    env.update({"pnpm_config_registry": registry, "pnpm_config_update_notifier": "false", "XDG_CONFIG_HOME": xdg})
    fixed = [
        f"--registry={registry}",
        "--config.update-notifier=false",
        "--ignore-pnpmfile",
        *(f"--config.{scope}:registry={registry}" for scope in BUILT_IN_SCOPES),
    ]
    options, config = npmrc.pointed_at_index(argv[0], fixed, "--config.{}={}", registry, env, cwd)
    for key in LOCKFILE_DIR:
        if config.get(key):
            raise Unresolvable(
                f"pnpm's {key} is set ({config[key]!r}): the gate checks the lockfiles in the workspace's "
                "own folders only; remove the setting"
            )
    files = settings.files_above(cwd, WORKSPACE_FILE)
    settings.check({name: config[name] for name in ADDING if name in config}, files)
    settings.check_catalog_references(cwd, config.get("catalogs"), files)
    return [argv[0], *options, *argv[1:]], env
