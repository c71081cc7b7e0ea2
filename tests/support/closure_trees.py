"""Dependency trees for the closure tests, with what a resolver must get right: environment
markers (one true, one false here), an extra named by some requests only, a prerelease and a
yanked release that are not to be chosen, a cycle, and a member an admin may deny.
"""

from __future__ import annotations

import pytest

from tests.support.index_fixtures import index_env
from tests.support.npm_upstream import NpmUpstream, Release
from tests.support.pypi_upstream import Dist, PyPIUpstream

PYTHON = (
    Dist(
        "webkit",
        "1.0",
        requires=(
            "urlkit>=1",
            "oldcompat; python_version < '3'",  # never true here
            "idnakit; python_version >= '3'",  # always true here
            "socksy>=1; extra == 'socks'",
            "certkit",
        ),
    ),
    Dist("webkit", "2.0b1", requires=("never-installed",)),  # a prerelease: not chosen unasked
    Dist("urlkit", "1.0"),
    Dist("urlkit", "2.0", requires=("cycle-a",)),
    Dist("urlkit", "3.0", requires=("never-installed",), yanked="broken"),
    Dist("cycle-a", "1.0", requires=("cycle-b",)),
    Dist("cycle-b", "1.0", requires=("cycle-a>=1",)),
    Dist("idnakit", "1.0"),
    Dist("oldcompat", "1.0"),
    Dist("socksy", "1.0"),
    Dist("certkit", "1.0", requires=("Evil_Thing",)),
    Dist("evil-thing", "1.0"),
    Dist("never-installed", "1.0"),
    Dist("lonely", "1.0", requires=("ghost-kit>=1",)),  # the upstream has no ghost-kit: not followed
)

# What webkit's closure holds, as a resolver finds it: its dependencies and theirs, no marker's false
# one, no extra unasked, no prerelease or yanked release.
WEBKIT_TREE = {"webkit", "urlkit", "cycle-a", "cycle-b", "idnakit", "certkit", "evil-thing"}

NODE = (
    Release(
        "app-a",
        "1.0.0",
        dependencies={"lib-b": "^1.0.0", "aliased": "npm:real-e@^1.0.0"},
        peer_dependencies={"peer-c": "^2.0.0", "opt-peer": "^1.0.0"},
        peer_meta={"opt-peer": {"optional": True}},
        optional_dependencies={"opt-d": "*"},
    ),
    Release("lib-b", "1.0.0"),
    Release("lib-b", "1.5.0", dependencies={"cyc-x": "^1.0.0"}),
    Release("lib-b", "2.0.0", dependencies={"never-installed": "^1.0.0"}),
    Release("cyc-x", "1.0.0", dependencies={"cyc-y": "^1.0.0"}),
    Release("cyc-y", "1.0.0", dependencies={"cyc-x": "^1.0.0"}),
    Release("peer-c", "2.0.0"),
    Release("peer-c", "2.1.0-beta.1", dependencies={"never-installed": "^1.0.0"}),
    Release("opt-d", "1.0.0"),
    Release("opt-peer", "1.0.0"),
    Release("real-e", "1.0.0"),
    Release("never-installed", "1.0.0"),
)


# Fixture overrides a test module imports (`from tests.support.closure_trees import ...`): the
# fixture upstreams serving these trees, and `live` pointed at them.
@pytest.fixture(name="pypi_upstream")
def python_tree_upstream():
    upstream = PyPIUpstream(PYTHON)
    yield upstream
    upstream.close()


@pytest.fixture(name="npm_upstream")
def node_tree_upstream():
    upstream = NpmUpstream(NODE)
    yield upstream
    upstream.close()


@pytest.fixture(name="live_env")
def trees_live_env(pypi_upstream, npm_upstream):
    return index_env(pypi_upstream, npm_upstream)
