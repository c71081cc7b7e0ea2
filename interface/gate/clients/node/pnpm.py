"""pnpm through the gate: `pnpm add NAMES` and `pnpm install`.

pnpm reads its registries from .npmrc and pnpm-workspace.yaml (`registries:`); its own view
(`pnpm config list --json`) names them all, and each scope is pointed at the index on the
command line (see `npmrc`), then checked. pnpm-lock.yaml records no registry for registry
packages (they come from the configured one); a `tarball:` URL anywhere but the index is refused,
in the root's lockfile and in every project's own (`sharedWorkspaceLockfile: false`); a
`lockfileDir` (a lockfile elsewhere) is refused.
pnpm's update notifier asks the registry for pnpm itself in every run: it is turned off.

pnpm reads proxies from .npmrc (`proxy`, `http-proxy`, `https-proxy`, `noproxy`, `no-proxy`) and
pnpm-workspace.yaml (`httpProxy`, `httpsProxy`, `proxy`, `noProxy`) over the environment's, and does
not report them (`pnpm config list`). Its command line beats both, so the gate forces them there:
the environment's own proxies, and the gate's NO_PROXY (which names the index) as `no-proxy`; with
no proxy in the environment, `no-proxy=true` (none at all: an empty proxy would fall through to
the files). So pnpm reaches the index directly, never through a proxy a project names.

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
PROXY_VARIABLES = {"https-proxy": ("HTTPS_PROXY", "https_proxy"), "http-proxy": ("HTTP_PROXY", "http_proxy")}


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
    forced = proxies(env)
    env.update({f"pnpm_config_{key.replace('-', '_')}": value for key, value in forced.items()})
    fixed = [
        f"--registry={registry}",
        "--config.update-notifier=false",
        "--ignore-pnpmfile",
        *(f"--config.{scope}:registry={registry}" for scope in BUILT_IN_SCOPES),
        *(f"--config.{key}={value}" for key, value in forced.items()),
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


def proxies(env: dict) -> dict:
    """pnpm's proxy settings as the gate forces them: the environment's proxies (one it lacks
    takes the other's), and the gate's NO_PROXY; with no proxy in the environment, none at all."""
    found = {key: next((env[name] for name in names if env.get(name)), "") for key, names in PROXY_VARIABLES.items()}
    if not any(found.values()):
        return {"no-proxy": "true"}  # pnpm's "bypass every proxy"
    https, http = found["https-proxy"] or found["http-proxy"], found["http-proxy"] or found["https-proxy"]
    return {"https-proxy": https, "http-proxy": http, "no-proxy": env["no_proxy"]}
