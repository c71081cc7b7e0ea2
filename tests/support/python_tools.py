"""The Python package clients pinned in tests/support/python-tools/tools.txt (poetry, pdm,
pipenv, pip-tools), each installed in its own environment by that folder's install.sh (.ci/run
calls it). `tool_bin(name)` is the folder of its command; without it the test skips loudly, and
fails under CI=true."""

from __future__ import annotations

from pathlib import Path

from tests.support.third_party import require

TOOLS = Path(__file__).resolve().parent / "python-tools"


def tool_bin(name: str) -> Path:
    require(name, (TOOLS / "bin" / name).exists(), "bash tests/support/python-tools/install.sh .venv/bin")
    return TOOLS / "bin"
