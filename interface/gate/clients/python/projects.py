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

from ...files import read_regular
from ...service import CannotVerify

try:
    import tomllib
except ImportError:  # Python before 3.11
    tomllib = None


def toml(path: str) -> dict:
    """The file's TOML document; {} when there is no such file."""
    if not os.path.lexists(path):
        return {}
    if tomllib is None:
        raise CannotVerify(f"reading {path} needs Python 3.11 or later (tomllib) for the gate")
    try:
        return tomllib.loads(read_regular(path).decode("utf-8"))
    except (OSError, ValueError) as error:
        raise CannotVerify(f"cannot read {path}: {error}") from None


def requirements(cwd: str) -> list[str]:
    """Every requirement pyproject.toml (and a Pipfile) declares: dependencies, optional
    dependencies, dependency groups, build requirements, uv's overrides and constraints, PDM's dev
    dependencies and overrides, Poetry's dependency tables and plugins, a Pipfile's packages. A dependency
    given as a table (`{url = ...}`, `{git = ...}`, `{path = ...}`) becomes `name @ ...`, which
    the service refuses as a direct reference; one given as a version is judged by its name."""
    document = toml(os.path.join(cwd, "pyproject.toml"))
    project, tool = document.get("project", {}), document.get("tool", {})
    _check_metadata_is_read(document, project, tool)
    found = list(project.get("dependencies", ()))
    for group in project.get("optional-dependencies", {}).values():
        found += group
    for group in document.get("dependency-groups", {}).values():
        found += [r for r in group if isinstance(r, str)]  # {include-group = ...} names another group
    found += document.get("build-system", {}).get("requires", ())
    uv = tool.get("uv", {})
    for key in UV_REQUIREMENT_KEYS:  # UV_NO_CONFIG leaves pyproject's [tool.uv] to uv
        found += uv.get(key, ())
    for group in tool.get("pdm", {}).get("dev-dependencies", {}).values():
        found += group
    found += _named(tool.get("pdm", {}).get("resolution", {}).get("overrides", {}))
    poetry = tool.get("poetry", {})
    for table in (poetry.get("dependencies", {}), poetry.get("dev-dependencies", {})):
        found += _named({k: v for k, v in table.items() if k != "python"})
    for group in poetry.get("group", {}).values():
        found += _named(group.get("dependencies", {}) if isinstance(group, dict) else {})
    found += _named(poetry.get("requires-plugins", {}))  # poetry installs them before it resolves
    pipfile = toml(os.path.join(cwd, "Pipfile"))
    found += _named(pipfile.get("packages", {})) + _named(pipfile.get("dev-packages", {}))
    if not all(isinstance(r, str) for r in found):
        raise CannotVerify("pyproject.toml holds a requirement that is not a string")
    return found


# [tool.uv] keys whose requirements uv installs or resolves with (pyproject's, which
# UV_NO_CONFIG does not drop): overrides and constraints may name a URL.
UV_REQUIREMENT_KEYS = ("dev-dependencies", "override-dependencies", "constraint-dependencies")
UV_REQUIREMENT_KEYS += ("build-constraint-dependencies",)
# How Poetry, PDM and Pipenv name a dependency fetched from elsewhere than an index.
DIRECT_KEYS = {"url": "", "file": "", "git": "git+", "path": "file:", "hg": "hg+", "svn": "svn+", "bzr": "bzr+"}


def _named(table: object) -> list:
    """`{name: spec}` tables as requirement strings: a table naming a URL, file, path or VCS as
    `name @ ...`, a URL-like string too (PDM's overrides), anything else by its name."""
    if not isinstance(table, dict):
        raise CannotVerify(f"a dependency table is not a table: {table!r}")
    found = []
    for name, spec in table.items():
        direct = [DIRECT_KEYS[k] + str(spec[k]) for k in DIRECT_KEYS if isinstance(spec, dict) and k in spec]
        if isinstance(spec, str) and ("://" in spec or spec.startswith(("file:", "git+"))):
            direct.append(spec)
        found.append(f"{name} @ {direct[0]}" if direct else str(name))
    return found


def _check_metadata_is_read(document: dict, project: dict, tool: dict) -> None:
    """Refuse a project whose requirements its build backend decides: declared `dynamic`, or no
    [project] table where the backend is not Poetry's (whose table is read here). A backend that
    writes other requirements than [project] declares is not caught here: a URL it names is
    fetched by the installer, which in a locked-down sandbox reaches only the index and the
    egress proxy."""
    why = None
    if "dependencies" in project.get("dynamic", ()):
        why = "declares its dependencies as dynamic"
    elif document and not project and "poetry" not in tool:
        why = "has no [project] table, so its build backend decides what it requires"
    if why:
        raise CannotVerify(
            f"pyproject.toml {why}: the gate cannot read its requirements before the backend runs; "
            "list them in [project] dependencies"
        )


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
    a Pipfile's [[source]], a project pdm.toml's [pypi] entries."""
    document = toml(os.path.join(cwd, "pyproject.toml")).get("tool", {})
    found = [("[[tool.poetry.source]]", s.get("url", "")) for s in document.get("poetry", {}).get("source", ())]
    found += [("[[tool.pdm.source]]", s.get("url", "")) for s in document.get("pdm", {}).get("source", ())]
    found += [("[[tool.uv.index]]", s.get("url", "")) for s in document.get("uv", {}).get("index", ())]
    found += [("Pipfile [[source]]", s.get("url", "")) for s in toml(os.path.join(cwd, "Pipfile")).get("source", ())]
    pdm = toml(os.path.join(cwd, "pdm.toml")).get("pypi", {})  # a project's own PDM settings
    found += [(f"pdm.toml [pypi.{k}]", v.get("url", "")) for k, v in pdm.items() if isinstance(v, dict)]
    found += [("pdm.toml pypi.url", pdm["url"])] if isinstance(pdm.get("url"), str) else []
    return [(where, str(url)) for where, url in found]


def pipfile_lock(cwd: str) -> dict:
    path = os.path.join(cwd, "Pipfile.lock")
    if not os.path.lexists(path):
        return {}
    try:
        document = json.loads(read_regular(path).decode("utf-8"))
    except (OSError, ValueError) as error:
        raise CannotVerify(f"cannot read {path}: {error}") from None
    if not isinstance(document, dict):
        raise CannotVerify(f"cannot read {path}: not a JSON object")
    return document


def pipfile_lock_sources(lock: dict) -> list[str]:
    """The indexes a Pipfile.lock (`pipfile_lock`) names in `_meta.sources`."""
    meta = lock.get("_meta", {})
    return [str(s.get("url", "")) for s in meta.get("sources", ()) if isinstance(s, dict)]
