"""Node installers, one module per client: npm, pnpm, yarn (1.x and 4.x) and bun.

Each offers `plan(command, cwd) -> Plan` (what to ask /evaluate: see `project`) and
`prepare(argv, run, workdir, env, cwd) -> (argv, env)`: the client pointed at the run's
registry, with every other source it would use overridden or refused. What they share:
`project` (manifests, lockfiles, flags), `npmrc` (npm and pnpm), `query` (asking a client
for its configuration).

Standard library only, like the whole gate.
"""

from __future__ import annotations

from ...installers import Unresolvable
from ...service import CannotVerify
from . import bun, npm, pnpm, yarn

CLIENTS = {"npm": npm, "pnpm": pnpm, "yarn": yarn, "bun": bun}


def plan_for(command: list[str], cwd: str):
    client = CLIENTS.get(command[0])
    if client is None:
        return None
    try:
        return client.plan(command, cwd)
    except Unresolvable as error:  # a manifest it cannot read: nothing is asked, nothing runs
        raise CannotVerify(str(error)) from None


def prepare(kind: str, argv: list[str], run: dict, workdir: str, env: dict, cwd: str):
    return CLIENTS[kind].prepare(argv, run, workdir, env, cwd)
