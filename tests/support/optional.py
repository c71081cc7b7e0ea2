"""The parts of the suite that need something beyond the project's .venv, and whether this machine
has each: `make test` says at its start what it will skip and how to get it (`make test-deps`).

Each test that needs a part still checks for itself, skipping loudly here and failing under
CI=true; this table only tells the reader up front.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.support.corpus import SHARED_CORPUS_DIR

REPO = Path(__file__).resolve().parents[2]
NODE_BIN = REPO / "tests" / "support" / "node-tools" / "node_modules" / ".bin"
PY_BIN = REPO / "tests" / "support" / "python-tools" / "bin"


def _postgres() -> bool:
    import psycopg

    from tests.conftest import postgres_url

    try:
        psycopg.connect(postgres_url().rsplit("/", 1)[0] + "/postgres", connect_timeout=2).close()
    except psycopg.Error:
        return False
    return True


def _namespaces() -> bool:
    if shutil.which("unshare") is None:
        return False
    return subprocess.run(["unshare", "--net", "true"], capture_output=True, timeout=30).returncode == 0


# (part, the tests that need it, is it here?)
PARTS = (
    ("PostgreSQL", "every store test on PostgreSQL", _postgres),
    ("Chromium", "the console in a browser", lambda: Path("/usr/bin/chromium").exists()),
    (
        "verdaccio",
        "a real npm registry as the index's upstream",
        lambda: (REPO / ".ci/node_tools/node_modules/.bin/verdaccio").exists(),
    ),
    ("Node package clients", "pnpm, yarn and bun through the index and the gate", lambda: (NODE_BIN / "bun").exists()),
    (
        "Python package clients",
        "poetry, pdm, pipenv and pip-compile through the gate",
        lambda: (PY_BIN / "poetry").exists(),
    ),
    ("network namespaces", "the locked-down sandbox (root, unshare --net)", _namespaces),
    ("faketime", "an instance whose clock disagrees with PostgreSQL's", lambda: shutil.which("faketime") is not None),
    (
        "the shared corpus",
        "the comparison of tests/corpus with the corpus its cases came from (not installed: CI keeps a copy "
        "beside the checkout; the project's own cases run without it)",
        lambda: SHARED_CORPUS_DIR.exists(),
    ),
)


def report() -> list[str]:
    missing = [f"  {name}: {what}" for name, what, present in PARTS if not present()]
    if not missing:
        return ["optional parts: all present, nothing will be skipped for want of one"]
    return [
        "optional parts missing here, their tests will SKIP (under CI=true they fail instead):",
        *missing,
        "  get them with `make test-deps` (as root: it installs what CI installs)",
    ]
