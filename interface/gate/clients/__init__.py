"""The installers the gate runs, one module per ecosystem, behind one seam.

`plan(command, cwd)` says which client a command is for and what the gate asks `/evaluate`
before running it; `prepare(plan, argv, ...)` returns the argv and environment that make the
client use only the service's package index. Each ecosystem module offers the same two:
`plan_for(command, cwd) -> Plan | None` and `prepare(kind, argv, run, workdir, env, cwd)`.

Standard library only, like the whole gate.
"""

from __future__ import annotations

from ..installers import Usage, cleared, no_proxy_for
from . import node, python
from .plan import Plan

ECOSYSTEMS = {"python": python, "node": node}

__all__ = ["Plan", "plan", "prepare"]


def plan(command: list[str], cwd: str) -> Plan:
    """The client and the question for `/evaluate`; Usage for anything the gate does not run."""
    program = command[0]
    if "/" in program or "\\" in program:
        raise Usage(
            f"name the installer, not a path: {program!r}; the gate runs the one it finds "
            "on its trusted path (RUNCODE_POLICY_INSTALLER_PATH)"
        )
    for module in ECOSYSTEMS.values():
        found = module.plan_for(command, cwd)
        if found is not None:
            return found
    raise Usage(
        f"{program!r} is not an installer the gate runs: use pip, python -m pip, uv, pdm, pipenv, "
        "poetry, pip-compile, npm, pnpm, yarn or bun"
    )


def prepare(found: Plan, argv: list[str], run: dict, workdir: str, service: str, environ, cwd: str):
    """(argv, environment) for the installer: redirects removed, pointed at the run's index."""
    env = cleared(environ)
    env.update(no_proxy_for(environ, service, run))
    return ECOSYSTEMS[found.language].prepare(found.kind, argv, run, workdir, env, cwd)
