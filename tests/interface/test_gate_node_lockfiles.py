"""How the gate reads a Node lockfile's URLs (interface.gate.clients.node.urls and project's
lockfile check), without a client: as a WHATWG URL parser (pnpm's, yarn 4's) reads them, so that
no spelling of another host passes for the index. tests/interface/test_gate_node_clients.py runs
the same spellings through the real pnpm and yarn 4."""

from __future__ import annotations

import pytest

from interface.gate.clients.node.project import check_lockfiles
from interface.gate.clients.node.urls import found, parsed, within
from interface.gate.installers import Unresolvable

REGISTRY = "http://127.0.0.1:8000/npm/acme/"


@pytest.mark.parametrize(
    ("written", "read"),
    [
        ("http:evil/x.tgz", "http://evil/x.tgz"),
        ("http:/evil/x.tgz", "http://evil/x.tgz"),
        ("http:\\\\evil\\x.tgz", "http://evil/x.tgz"),
        ("http:////evil/x.tgz", "http://evil/x.tgz"),
        ("HTTPS:EVIL/x.tgz", "https://evil/x.tgz"),
        ("ht\ttp:/\t/ev\nil/x.tgz", "http://evil/x.tgz"),
        ("https://evil:443/x.tgz", "https://evil/x.tgz"),
        ("http://evil:0080/x.tgz", "http://evil/x.tgz"),
        ("ws:evil:81/x", "ws://evil:81/x"),
        ("http://h/a/./b/../../c.tgz?x#y", "http://h/c.tgz?x#y"),
        ("http://h/a/..", "http://h/"),
        ("http://user@h/x", "http://user@h/x"),
        ("http://[::1]:8080/x", "http://[::1]:8080/x"),
        ("git+ssh://git@Host/x", "git+ssh://git@Host/x"),
    ],
)
def test_a_url_is_read_as_a_whatwg_parser_reads_it(written, read):
    assert parsed(written) == read


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/npm/acme/alpha/-/alpha-1.0.0.tgz",
        "HTTP:127.0.0.1:8000/npm/acme/alpha/-/alpha-1.0.0.tgz",
        "http:/127.0.0.1:8000/npm/acme/./alpha/-/alpha-1.0.0.tgz",
    ],
)
def test_the_index_however_it_is_spelt_is_within_the_index(url):
    assert within(url, REGISTRY)


@pytest.mark.parametrize(
    "url",
    [
        "http:127.0.0.2:8000/npm/acme/alpha/-/alpha-1.0.0.tgz",
        "http://127.0.0.1:8000/npm/acme/../beta/-/beta-1.0.0.tgz",
        "http://127.0.0.1:8000/npm/acme-evil/beta/-/beta-1.0.0.tgz",
        "http://127.0.0.1:8000@evil/npm/acme/beta/-/beta-1.0.0.tgz",
        "http://127.0.0.1:80/npm/acme/beta/-/beta-1.0.0.tgz",
        "https://127.0.0.1:8000/npm/acme/beta/-/beta-1.0.0.tgz",
        "http:127.0.0.1:8000",
    ],
)
def test_another_host_port_scheme_or_path_is_not_within_the_index(url):
    assert not within(url, REGISTRY)


@pytest.mark.parametrize(
    "text",
    ["ws: 8.16.0", "      ws:", "'@types/ws': 8.5.10", '"ws@npm:^8.0.0":', '  resolution: "ws@npm:8.16.0"', "http"],
)
def test_a_package_named_like_a_scheme_is_not_a_url(text):
    assert found(text) == []


LOCK_HEAD = "lockfileVersion: '9.0'\n\npackages:\n\n  alpha@1.0.0:\n    resolution: {integrity: sha512-AAAA}\n\n"
# beta's resolution (from line 9 on), and how the refusal names where it is
REFUSED = {
    "no slashes": ("    resolution: {tarball: http:127.0.0.1:9/b.tgz}\n", "line 9 fetches http://127.0.0.1:9/b.tgz"),
    "upper case, one slash": ("    resolution: {tarball: 'HTTP:/evil/b.tgz'}\n", "line 9 fetches http://evil/b.tgz"),
    "a tab": ("    resolution: {tarball: 'ht\ttp:evil/b.tgz'}\n", "line 9 fetches http://evil/b.tgz (written with"),
    "percent-encoded": (
        "    resolution: {tarball: http%3Aevil%2Fb.tgz}\n",
        "line 9 fetches http://evil/b.tgz (percent-",
    ),
    # decoded, INDEX's path ends its authority; as written, INDEX is userinfo and the host is another
    "userinfo percent-encoded": (
        "    resolution: {tarball: 'http://127.0.0.1:8000%2Fnpm%2Facme%2F@127.0.0.1:9/b.tgz'}\n",
        "line 9 fetches http://127.0.0.1:8000%2Fnpm%2Facme%2F@127.0.0.1:9/b.tgz,",
    ),
    "over a blank line": (
        '    resolution:\n      tarball: "http:\n\n        //evil/b.tgz"\n',
        "line 10, continued over blank lines to line 12, fetches http://evil/b.tgz",
    ),
    "over several blank lines": (
        '    resolution:\n      tarball: "ht\n\n  \n\ttp\n\n:evil/b.tgz"\n',
        "line 10, continued over blank lines to line 15, fetches http://evil/b.tgz",
    ),
    "CR line breaks": (
        "    resolution: {tarball: 'http:\r\r//evil/b.tgz'}\n",
        "line 9, continued over blank lines to line 11, fetches http://evil/b.tgz",
    ),
    "block scalar": (
        "    resolution:\n      tarball: |-\n        http:\n        //evil/b.tgz\n",
        "line 10 starts a YAML",
    ),
    "folded block scalar": ("    resolution:\n      tarball: >+2 # folded\n", "line 10 starts a YAML block scalar"),
    "NEL line breaks": ("    resolution:\n      tarball: |\x85        http:\x85        //evil\n", "line 10 starts a"),
}


@pytest.mark.parametrize("case", REFUSED)
def test_a_lockfile_url_on_another_host_is_refused_however_it_is_spelt(tmp_path, case):
    resolution, where = REFUSED[case]
    lockfile = tmp_path / "pnpm-lock.yaml"
    lockfile.write_text(f"{LOCK_HEAD}  beta@1.0.0:\n{resolution}", encoding="utf-8", newline="")
    with pytest.raises(Unresolvable, match="which is not the package index|could spell a URL") as refused:
        check_lockfiles(str(tmp_path), ("pnpm-lock.yaml",), REGISTRY, "pnpm")
    assert f"{lockfile} {where}" in str(refused.value)


def test_a_lockfile_of_registry_packages_and_the_index_spelt_otherwise_passes(tmp_path):
    (tmp_path / "pnpm-lock.yaml").write_text(
        LOCK_HEAD
        + "  ws@8.16.0:\n    resolution: {integrity: sha512-BBBB}\n    engines: {node: '>=10.0.0'}\n\n"
        + "  beta@1.0.0:\n    resolution: {tarball: 'HTTP:127.0.0.1:8000/npm/acme/beta/-/beta-1.0.0.tgz'}\n\n"
        + "snapshots:\n\n  alpha@1.0.0:\n    dependencies:\n      ws: 8.16.0\n\n  ws@8.16.0: {}\n"
    )
    check_lockfiles(str(tmp_path), ("pnpm-lock.yaml",), REGISTRY, "pnpm")
