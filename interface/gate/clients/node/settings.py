"""What a client's own settings add to a project's dependencies, as the client reports them:
pnpm's `overrides`, `packageExtensions` and catalogs (pnpm-workspace.yaml), yarn 4's
`packageExtensions` (.yarnrc.yml).

The index judges every package a client fetches from it, but a setting can name a URL, git or a
path instead of a registry version, which the client then fetches itself. Every spec a setting
holds must be one the index serves: a registry range or tag, an `npm:` alias of one (the index
judges the name it fetches), or what package.json may hold unjudged (`workspace:`, `$name`, and
`catalog:`, whose catalog entries are checked the same way). Anything else is refused before the
client runs, naming the file and line where it is written. A package.json `catalog:` spec must
name an entry of a catalog.

Standard library only, like the whole gate.
"""

from __future__ import annotations

import os

from ...files import ancestors
from ...installers import Unresolvable
from .project import DEPENDENCY_FIELDS, LOCAL_PROTOCOLS, is_registry_spec, manifests, needs_judging

CATALOG = "catalog:"
DEFAULT_CATALOG = "default"  # `catalog:` alone; pnpm reports `catalog:` as catalogs.default too
SERVED = (*LOCAL_PROTOCOLS, CATALOG)
HELP = "the gate installs only what the package index serves: remove it, or name a registry version"


def check(settings: dict, files: list[str]) -> None:
    """Refuse a spec in `settings` ({name: value as the client reports it}) the index does not
    serve; `files` are where the client reads them from, to name the line."""
    for name, value in settings.items():
        for path, spec in _specs(value, (name,)):
            if needs_judging(spec, SERVED) and not _is_registry_alias(spec):
                setting = ".".join(path)
                raise Unresolvable(f"{written(spec, files)}{setting} is {spec!r}, not a registry version; {HELP}")


def check_catalog_references(cwd: str, catalogs: object, files: list[str]) -> None:
    """Refuse a package.json `catalog:` / `catalog:NAME` spec that no catalog entry resolves."""
    catalogs = catalogs if isinstance(catalogs, dict) else {}
    for manifest_path, manifest in manifests(cwd).items():
        for field in DEPENDENCY_FIELDS:
            entries = manifest.get(field)
            for name, spec in (entries if isinstance(entries, dict) else {}).items():
                if not (isinstance(spec, str) and spec.startswith(CATALOG)):
                    continue
                catalog = spec[len(CATALOG) :].strip() or DEFAULT_CATALOG
                entries_of = catalogs.get(catalog)
                if not (isinstance(entries_of, dict) and name in entries_of):
                    where = " or ".join(files) or "no pnpm-workspace.yaml"
                    raise Unresolvable(
                        f"{manifest_path}: {field}.{name} is {spec!r}, but catalog {catalog!r} has no entry "
                        f"for {name} ({where}); add it there, or name a registry version"
                    )


def files_above(cwd: str, name: str, *more: str) -> list[str]:
    """`name` in the working directory and every folder above it, and `more`, where they exist."""
    found = [os.path.join(d, name) for d in ancestors(cwd)] + list(more)
    return [path for path in dict.fromkeys(found) if os.path.isfile(path)]


def _specs(value: object, path: tuple):
    """(path, spec) for every string under `value`; other leaves (peerDependenciesMeta's
    `optional: true`) say nothing about a source."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, inner in value.items():
            yield from _specs(inner, (*path, str(key)))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from _specs(inner, (*path, str(index)))


def _is_registry_alias(spec: str) -> bool:
    """`npm:name` or `npm:name@range`: the registry package `name`, fetched (and judged) by name."""
    if not spec.startswith("npm:"):
        return False
    target = spec[len("npm:") :]
    at = target.find("@", 1)
    name, version = (target, "") if at < 0 else (target[:at], target[at + 1 :])
    return bool(name) and ":" not in name and (not version or is_registry_spec(version))


def written(spec: str, files: list[str]) -> str:
    """`path line N: ` of the first line of `files` that holds `spec`, or nothing."""
    for path in files:
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                lines = handle.read().split("\n")
        except OSError:
            continue
        for number, line in enumerate(lines, 1):
            if spec in line:
                return f"{path} line {number}: "
    return ""
