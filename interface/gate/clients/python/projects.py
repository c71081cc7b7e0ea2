"""What a Python project declares, read with a TOML/JSON parser (never by pattern): the
requirements it will install (so URL requirements are judged before any client fetches them
directly) and the indexes or sources its files name besides the service's.

Standard library only, like the whole gate (TOML needs Python 3.11's tomllib; without it a project
file cannot be read, and the gate fails closed).
"""

from __future__ import annotations

import json
import os
import urllib.parse

from ...service import CannotVerify

try:
    import tomllib
except ImportError:  # Python before 3.11
    tomllib = None


def toml(path: str) -> dict:
    """The file's TOML document; {} when there is no such file."""
    if not os.path.isfile(path):
        return {}
    if tomllib is None:
        raise CannotVerify(f"reading {path} needs Python 3.11 or later (tomllib) for the gate")
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except (OSError, ValueError) as error:
        raise CannotVerify(f"cannot read {path}: {error}") from None


def requirements(cwd: str) -> list[str]:
    """Every requirement pyproject.toml declares: dependencies, optional dependencies, dependency
    groups, build requirements, and the dependencies of Poetry's and PDM's own tables."""
    document = toml(os.path.join(cwd, "pyproject.toml"))
    project = document.get("project", {})
    if "dependencies" in project.get("dynamic", ()):
        raise CannotVerify(
            "pyproject.toml declares its dependencies as dynamic: the gate cannot read them before "
            "the build backend runs; list them in [project] dependencies"
        )
    found = list(project.get("dependencies", ()))
    for group in project.get("optional-dependencies", {}).values():
        found += group
    for group in document.get("dependency-groups", {}).values():
        found += [r for r in group if isinstance(r, str)]  # {include-group = ...} names another group
    found += document.get("build-system", {}).get("requires", ())
    tool = document.get("tool", {})
    for group in tool.get("pdm", {}).get("dev-dependencies", {}).values():
        found += group
    if not all(isinstance(r, str) for r in found):
        raise CannotVerify("pyproject.toml holds a requirement that is not a string")
    return found


def same_index(url: str, index: str) -> bool:
    """Whether `url` is the service's index (credentials and a trailing slash aside)."""

    def bare(text: str) -> tuple:
        parts = urllib.parse.urlsplit(text.strip())
        return (parts.scheme.lower(), parts.netloc.rpartition("@")[2].lower(), parts.path.rstrip("/"))

    return bare(url) == bare(index)


def foreign(urls: list[str], index: str) -> list[str]:
    return sorted({u for u in urls if not same_index(u, index)})


def declared_sources(cwd: str) -> list[tuple[str, str]]:
    """(where, url) of each index a project file names: Poetry's and PDM's sources, uv's indexes,
    a Pipfile's [[source]]."""
    document = toml(os.path.join(cwd, "pyproject.toml")).get("tool", {})
    found = [("[[tool.poetry.source]]", s.get("url", "")) for s in document.get("poetry", {}).get("source", ())]
    found += [("[[tool.pdm.source]]", s.get("url", "")) for s in document.get("pdm", {}).get("source", ())]
    found += [("[[tool.uv.index]]", s.get("url", "")) for s in document.get("uv", {}).get("index", ())]
    found += [("Pipfile [[source]]", s.get("url", "")) for s in toml(os.path.join(cwd, "Pipfile")).get("source", ())]
    return [(where, str(url)) for where, url in found]


def pipfile_lock_sources(cwd: str) -> list[str]:
    path = os.path.join(cwd, "Pipfile.lock")
    if not os.path.isfile(path):
        return []
    try:
        with open(path, encoding="utf-8") as handle:
            meta = json.load(handle).get("_meta", {})
    except (OSError, ValueError, AttributeError) as error:
        raise CannotVerify(f"cannot read {path}: {error}") from None
    return [str(s.get("url", "")) for s in meta.get("sources", ())]
