"""Registries by any name: every entry of the table is refused as `package-registry`, through the
egress evaluation, whatever it resolves to and whatever the allowlist says; near misses are not.
(The issue's named hosts, as targets, are cases of tests/corpus/egress.jsonl.)"""

from __future__ import annotations

import pytest

from domain.egress import evaluate_egress
from domain.egress.allowlist import WILDCARD, host_matches, normalize_entry
from domain.egress.registries import REGISTRIES, REGISTRY_HOSTS

PUBLIC = ["93.184.215.14"]  # a public address, never contacted: the tests resolve nothing


def hosts_named_by(entry: str) -> list[str]:
    """Concrete hosts an entry must refuse: itself, or for `*.name` a subdomain at depth one and two."""
    if entry.startswith(WILDCARD):
        base = entry[len(WILDCARD) :]
        return [f"files.{base}", f"a.b.{base}"]
    return [entry]


@pytest.mark.parametrize("entry", REGISTRY_HOSTS)
def test_every_entry_is_written_in_normal_form_so_that_it_can_match_at_all(entry):
    # host_matches skips an entry that does not normalise: a misspelt one would refuse nothing.
    assert normalize_entry(entry) == entry


@pytest.mark.parametrize("entry", REGISTRY_HOSTS)
def test_every_name_in_the_table_is_refused_as_a_package_registry_even_allowlisted(entry):
    for host in hosts_named_by(entry):
        for target, allowlist in ((f"https://{host}/beta/-/beta-1.0.0.tgz", None), (f"{host}:443", [host])):
            verdict = evaluate_egress(target, PUBLIC, allowlist)
            assert (verdict.allowed, verdict.reason) == (False, "package-registry"), (target, verdict)


@pytest.mark.parametrize("entry", REGISTRY_HOSTS)
def test_a_refusal_says_why_the_host_is_listed_and_points_at_the_index(entry):
    (why,) = [why for why, entries in REGISTRIES if entry in entries]
    for host in hosts_named_by(entry):
        detail = evaluate_egress(f"https://{host}/").detail
        assert detail.startswith(f"{host} is a public package registry or a mirror of one ({why})")
        assert "package index" in detail and "runcode-policy-gate" in detail


def test_each_host_is_named_by_one_group_only_so_its_reason_is_unambiguous():
    for _, entries in REGISTRIES:
        for host in (host for entry in entries for host in hosts_named_by(entry)):
            naming = [why for why, named in REGISTRIES if host_matches(host, named)]
            assert len(naming) == 1, (host, naming)


@pytest.mark.parametrize(
    "host",
    [
        "notnpmjs.com",
        "npmjs.com",  # npm's website and documentation: not package data
        "www.npmjs.com",
        "docs.npmjs.com",
        "npmjs.com.evil.example",
        "registry.npmjs.org.evil.example",
        "xregistry.npmjs.org",
        "yarnpkg.com",  # Yarn's website
        "jsdelivr.net.example",
        "notjsdelivr.net",
        "unpkg.com.evil.example",
        "myunpkg.com",
        "esm.sh.example",
        "notesm.sh",
        "skypack.dev",  # Skypack's website; its CDN is cdn.skypack.dev
        "pypi.io.example",
        "notpypi.io",
        "pythonhosted.org.evil.example",
        "evilpythonhosted.org",
        "npmmirror.com.evil.example",
        "evilnpmmirror.com",
        "taobao.org",
        "pkg.github.com",
        "github.com",
        "raw.githubusercontent.com",  # any repository's files: a web host, not a registry
        "tsinghua.edu.cn",
        "mirrors.tuna.tsinghua.edu.cn",  # general mirror hosts, deliberately not listed
        "mirrors.aliyun.com",
        "fury.io",
    ],
)
def test_near_misses_and_deliberately_unlisted_hosts_pass_under_open_egress(host):
    verdict = evaluate_egress(f"https://{host}/beta-1.0.0.tgz", PUBLIC, None)
    assert (verdict.allowed, verdict.reason) == (True, "allowed"), verdict


@pytest.mark.parametrize("target", ["https://registry.npmmirror.com/beta", "https://files.pythonhosted.org/p/x.whl"])
def test_the_services_own_upstream_fetching_may_use_a_mirror_as_its_upstream(target):
    # The index's upstream (a deployment setting) may be a mirror; only sandbox egress refuses it.
    assert evaluate_egress(target, PUBLIC, refuse_registries=False).allowed
    assert evaluate_egress(target, ["127.0.0.1"], refuse_registries=False).reason == "loopback"
