"""Matching npm versions against node-semver ranges, as npm picks a version to install.

The range is desugared by the node-semver port (`node_semver.comparator_sets`); this module
compares versions (SemVer 2.0 precedence) and applies node-semver's prerelease rule: a
prerelease satisfies a comparator set only if one of its comparators names a prerelease of the
same major.minor.patch. `pick` is npm-pick-manifest's choice: the `latest` tag when it
satisfies, else the highest satisfying version.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any

from domain.specs.node_semver import comparator_sets

_VERSION = re.compile(
    r"[v=\s]*(\d{1,16})\.(\d{1,16})\.(\d{1,16})(?:-?([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+[0-9A-Za-z.-]+)?"
)
_OPERATOR = re.compile(r"(<=|>=|<|>|=)?(.*)")


def parse_version(text: str) -> tuple[Any, ...] | None:
    """(major, minor, patch, prerelease identifiers) or None when `text` is not a version."""
    found = _VERSION.fullmatch(text.strip()) if isinstance(text, str) else None
    if found is None:
        return None
    major, minor, patch, pre = found.groups()
    identifiers = tuple(int(p) if p.isdigit() else p for p in pre.split(".")) if pre else ()
    return int(major), int(minor), int(patch), identifiers


def _key(version: tuple[Any, ...]) -> tuple[Any, ...]:
    """SemVer precedence: a release sorts after its prereleases; numeric identifiers before others."""
    *core, pre = version
    return (*core, not pre, tuple((isinstance(p, str), p) if isinstance(p, str) else (False, p) for p in pre))


def _holds(version: tuple[Any, ...], comparator: str) -> bool:
    if comparator == "":
        return True
    operator, text = _OPERATOR.fullmatch(comparator).groups()  # type: ignore[union-attr]  # comparators match
    bound = parse_version(text)
    if bound is None:
        return False
    mine, theirs = _key(version), _key(bound)
    return {
        None: mine == theirs,
        "=": mine == theirs,
        "<": mine < theirs,
        "<=": mine <= theirs,
        ">": mine > theirs,
        ">=": mine >= theirs,
    }[operator]


def _prerelease_allowed(version: tuple[Any, ...], comparators: list[str]) -> bool:
    if not version[3]:
        return True
    for comparator in comparators:
        bound = parse_version(_OPERATOR.fullmatch(comparator).group(2)) if comparator else None  # type: ignore[union-attr]
        if bound is not None and bound[3] and bound[:3] == version[:3]:
            return True
    return False


def satisfies(version_text: str, range_text: str, include_prerelease: bool = False) -> bool:
    """node-semver's `satisfies`; `include_prerelease` (its option of that name) lets a
    prerelease match any range, as a deny must (fail closed)."""
    version, sets = parse_version(version_text), comparator_sets(range_text)
    if version is None or sets is None:
        return False
    return any(
        all(_holds(version, c) for c in s) and (include_prerelease or _prerelease_allowed(version, s)) for s in sets
    )


def pick(versions: list[str], range_text: str, latest: str | None = None) -> str | None:
    """The version npm installs for `range_text` among `versions` (None: none satisfies)."""
    if latest in versions and satisfies(latest, range_text):
        return latest
    matching = [v for v in versions if satisfies(v, range_text)]
    return max(matching, key=lambda v: _key(parse_version(v)), default=None)  # type: ignore[arg-type]  # they parsed


def repoint(tags: dict[str, Any], versions: Collection[str]) -> dict[str, Any]:
    """A packument's `dist-tags` once only `versions` are offered: tags on the others are dropped,
    and `latest` moves to the highest release offered (the highest prerelease if none is)."""
    kept = {tag: v for tag, v in tags.items() if v in versions}
    keyed = [(_key(parsed), v) for v in versions if (parsed := parse_version(v)) is not None]
    releases = [(key, v) for key, v in keyed if key[3]] or keyed
    if "latest" not in kept and releases:
        kept["latest"] = max(releases)[1]
    return kept
