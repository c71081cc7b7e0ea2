"""What the gate's tests with real Python clients share: pypiserver behind the service's index, a
second fixture index standing for public PyPI, the project folder, and the index's decisions.

Import the fixtures into a test module by their function names; they are `live_env` (overriding
the conftest's there only), `public` and `project`."""

from __future__ import annotations

import pytest

from tests.support.pypi_upstream import Dist, PyPIUpstream


@pytest.fixture(name="live_env")
def pypiserver_behind_the_index(pypiserver_upstream) -> dict:
    """`live` (the real service) with pypiserver behind its index."""
    return {"RUNCODE_POLICY_PYPI_UPSTREAM": f"{pypiserver_upstream.url}/simple/"}


@pytest.fixture(name="public")
def public_index():
    """Stands for public PyPI: the same tree (alpha depends on beta), on another port, every
    request logged."""
    server = PyPIUpstream((Dist("alpha", "1.0", requires=("beta",)), Dist("beta", "1.0")))
    yield server
    server.close()


@pytest.fixture(name="project")
def project_folder(tmp_path):
    path = tmp_path / "project"
    path.mkdir()
    return path


def index_decisions(app) -> set:
    """(name, allowed) of every decision the index recorded in workspace acme."""
    return {
        (d["name"], d["allowed"])
        for d in app.audit.decisions("acme")["decisions"]
        if d["context"].get("source") == "index"
    }
