"""bun through the gate: `bun install`.

bun has no command that tells its configuration. The gate gives it a bunfig.toml of its own
(`--config`, which replaces the project's: the registry with the run token, a cache of the
run's own) and an empty global configuration folder. bun also reads `.npmrc`, with a parser of
its own, in the home folder and in the project's root (a workspace's root, above the working
directory): one in the working directory or any folder above it, or in the home folder, that
mentions a registry at all, or holds an escape that could spell one, is refused. bun fetches a
bun.lock URL as it is, whatever registry is configured, so a bun.lock naming anything but the
index is refused, and so is the binary bun.lockb, which the gate cannot read.
"""

from __future__ import annotations

import json
import os

from ...files import ancestors, read_regular
from ...installers import Unresolvable, write_private
from .project import check_lockfiles, project_plan

PROJECT_FLAGS = frozenset("--frozen-lockfile --ignore-scripts --production -p --silent --no-progress".split())
LOCKFILES = ("bun.lock",)
BINARY_LOCKFILE = "bun.lockb"
NPMRC_REFUSED = ("registry", "\\")  # a registry setting, or an escape that could spell one


def plan(command: list[str], cwd: str):
    return project_plan(command, cwd, {"install", "i"}, set(), PROJECT_FLAGS)


def prepare(argv: list[str], run: dict, workdir: str, env: dict, cwd: str):
    registry = run["npm"]
    check_lockfiles(cwd, LOCKFILES, registry, "bun")
    if os.path.exists(os.path.join(cwd, BINARY_LOCKFILE)):
        raise Unresolvable(
            f"{BINARY_LOCKFILE} is a binary lockfile the gate cannot read; delete it and run "
            "`runcode-policy-gate -- bun install`, which writes a text bun.lock"
        )
    for folder in dict.fromkeys((*ancestors(cwd), env.get("HOME", ""))):
        check_npmrc(os.path.join(folder, ".npmrc"))
    bunfig = os.path.join(workdir, "bunfig.toml")
    registry_table = f"{{ url = {json.dumps(registry)}, token = {json.dumps(run['token'])} }}"
    cache = json.dumps(os.path.join(workdir, "cache"))
    write_private(bunfig, f"[install]\nregistry = {registry_table}\n\n[install.cache]\ndir = {cache}\n")
    xdg = os.path.join(workdir, "xdg")  # where bun looks for a global .bunfig.toml
    os.mkdir(xdg, 0o700)
    env.update({"XDG_CONFIG_HOME": xdg, "DO_NOT_TRACK": "1"})
    return [argv[0], f"--config={bunfig}", *argv[1:]], env


def check_npmrc(path: str) -> None:
    try:
        text = read_regular(path).decode("utf-8", errors="replace").lower()
    except FileNotFoundError:
        return
    except OSError as error:
        raise Unresolvable(f"cannot read {path}: {error}") from None
    found = [word for word in NPMRC_REFUSED if word in text]
    if found:
        raise Unresolvable(
            f"{path} mentions {found[0]!r}: bun reads registries from .npmrc in a way the gate cannot "
            "override; remove registry settings from it (the gate gives bun the package index itself)"
        )
