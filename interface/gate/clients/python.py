"""Python installers: pip (and `python -m pip`) and `uv pip`, pointed at the run's index.

pip reads no configuration file at all (PIP_CONFIG_FILE=/dev/null), uv none (UV_NO_CONFIG); the
index URL carries the run token as its Basic password.
"""

from __future__ import annotations

import os
import re

from ..installers import PYTHON, with_password
from .plan import Plan

PIP = re.compile(r"pip(\d+(\.\d+)*)?\Z")


def plan_for(command: list[str], cwd: str) -> Plan | None:
    program = command[0]
    if PIP.match(program) or (PYTHON.match(program) and command[1:3] == ["-m", "pip"]):
        return Plan("pip", "python", {"command": command})
    if program == "uv" and command[1:2] == ["pip"]:
        return Plan("uv", "python", {"command": command})
    return None


def prepare(kind: str, argv: list[str], run: dict, workdir: str, env: dict, cwd: str):
    env.update(pip_settings(run) if kind == "pip" else uv_settings(run))
    return argv, env


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
