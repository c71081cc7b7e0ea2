"""Public package registries: the sandbox installs through the service's package index, so a
direct connection to a registry is refused by name (issue 9, "only one way out").

An entry is a hostname or `*.name` (any subdomain, never the apex), matched like allowlist
entries. The rule runs with the other name rules, before anything is resolved, and no hostname
allowlist unlocks it: a registry reached directly would judge nothing.
"""

from __future__ import annotations

from domain.egress.allowlist import host_matches

REGISTRY_HOSTS = (
    "pypi.org",
    "*.pypi.org",
    "pypi.python.org",  # PyPI's index, uploads and its old name
    "files.pythonhosted.org",
    "*.pythonhosted.org",  # PyPI's files
    "registry.npmjs.org",
    "registry.yarnpkg.com",  # npm's registry and Yarn's mirror of it
    "npm.jsr.io",  # JSR's npm registry, which pnpm uses for `@jsr/*` unless told otherwise
)


def registry_finding(host: str) -> tuple[str, str] | None:
    """`package-registry` for a normalised host naming a public registry, else None."""
    if not host_matches(host, REGISTRY_HOSTS):
        return None
    return (
        "package-registry",
        f"{host} is a public package registry: install through the policy service's package "
        "index instead (runcode-policy-gate -- pip install NAME), which judges every package",
    )
