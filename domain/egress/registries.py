"""Public package registries by any name: the sandbox installs through the service's package index,
so a direct connection to a registry, to one of its other names, or to a mirror or CDN serving
its packages is refused by name (`package-registry`).

`REGISTRIES` is the one table of those names, each group with the reason it is there. An entry
is a hostname or `*.name` (any subdomain, never the apex; list the apex too when it serves
packages), matched like allowlist entries. The rule runs with the other name rules, before
anything is resolved, and no hostname allowlist unlocks it: a registry reached directly would
judge nothing.

What is listed: names whose every use from a sandbox is fetching Python or npm packages (or the
installers themselves) from outside the index, so refusing them costs a sandbox nothing it should
do. Websites beside a registry, general mirror hosts that carry PyPI or npm under a path beside
operating-system repositories, and any mirror not listed here pass unless a hostname allowlist
is set; what is left out and why, and which deployment catches it, is in docs/threat-model.md.
"""

from __future__ import annotations

from domain.egress.allowlist import host_matches

# (why the names are here, the names). Order does not matter: the groups do not overlap.
REGISTRIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    # PyPI
    ("PyPI's index, its uploads and TestPyPI", ("pypi.org", "*.pypi.org")),
    ("PyPI under its older names, which still answer", ("pypi.python.org", "pypi.io", "*.pypi.io")),
    ("PyPI's file host, files. and test-files., and its apex", ("pythonhosted.org", "*.pythonhosted.org")),
    ("Tsinghua University's PyPI mirror, TUNA", ("pypi.tuna.tsinghua.edu.cn",)),
    ("the USTC PyPI mirror", ("pypi.mirrors.ustc.edu.cn",)),
    ("Douban's PyPI mirror", ("pypi.doubanio.com", "pypi.douban.com")),
    ("Gemfury's hosted PyPI registries", ("pypi.fury.io",)),
    # npm
    ("npm's registry, under its .org and its .com name", ("registry.npmjs.org", "registry.npmjs.com")),
    (
        "npm's replication feeds, every package document with its tarball URLs",
        ("replicate.npmjs.com", "skimdb.npmjs.com"),
    ),
    ("Yarn's mirror of the npm registry", ("registry.yarnpkg.com",)),
    (
        "Yarn's release hosts, from which corepack and install scripts fetch Yarn itself",
        ("repo.yarnpkg.com", "dl.yarnpkg.com"),
    ),
    ("JSR's npm registry, which pnpm uses for @jsr/* unless told otherwise", ("npm.jsr.io",)),
    (
        "GitHub Packages' npm registry and the host its tarballs redirect to",
        ("npm.pkg.github.com", "pkg-npm.githubusercontent.com"),
    ),
    ("Gemfury's hosted npm registries", ("npm.fury.io",)),
    ("Alibaba's npm mirror npmmirror, with its registry, CDN and binary mirrors", ("npmmirror.com", "*.npmmirror.com")),
    (
        "npmmirror under its former Taobao and cnpm names",
        ("npm.taobao.org", "*.npm.taobao.org", "r.cnpmjs.org", "registry.cnpmjs.org"),
    ),
    (
        "jsDelivr, a CDN serving any npm package's files, under cdn., fastly., gcore. and others",
        ("jsdelivr.net", "*.jsdelivr.net"),
    ),
    ("unpkg, a CDN serving any npm package's files", ("unpkg.com", "*.unpkg.com")),
    ("esm.sh, a CDN serving npm packages as ES modules", ("esm.sh", "*.esm.sh")),
    ("Skypack's CDN of npm packages", ("cdn.skypack.dev",)),
    ("jspm's CDNs of npm packages, ga.jspm.io and jspm.dev", ("jspm.io", "*.jspm.io", "jspm.dev", "*.jspm.dev")),
)

REGISTRY_HOSTS = tuple(entry for _, entries in REGISTRIES for entry in entries)


def registry_finding(host: str) -> tuple[str, str] | None:
    """`package-registry` for a normalised host that a registry group names, else None."""
    why = next((why for why, entries in REGISTRIES if host_matches(host, entries)), None)
    if why is None:
        return None
    return (
        "package-registry",
        f"{host} is a public package registry or a mirror of one ({why}): install through the "
        "policy service's package index instead (runcode-policy-gate -- pip install NAME, or "
        "runcode-policy-gate -- npm install NAME), which judges every package",
    )
