"""Pattern entries of allow and deny lists: what they may look like and which names they match.

Two shapes, one per language, each matching a set of names that can be enumerated from the name
being judged (so judging stays a few set lookups, and a point-in-time answer reads only the
entries that could decide one name):

- Node `@scope/*`: every package of the scope (`@corp/*` matches `@corp/api`, never `@corp`).
- Python `prefix-*`: every canonical (PEP 503) name that starts with `prefix-` and goes on
  (`django-*` matches `django-rest-framework`, never `django` itself). The prefix is canonical
  too, so `Django_*` is stored as `django-*`.

Anything else holding `*` is refused with the rule it breaks: a bare `*`, `@*/*` or `-*` would
match everything, and a wildcard inside a name would make a match no one can predict.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from domain.specs import deny_key, parse
from domain.specs.pip import canonical
from domain.text import quoted

WILDCARD = "*"
PYTHON_SUFFIX = "-*"
NODE_SUFFIX = "/*"
RULES = {
    "python": "a Python pattern is a package name followed by '-*', such as 'django-*'",
    "node": "a Node pattern is a scope followed by '/*', such as '@corp/*'",
}


def is_pattern(entry: str) -> bool:
    return WILDCARD in entry


def parse_pattern(language: str, entry: str) -> tuple[str | None, str | None]:
    """(the pattern in canonical form, None), or (None, the rule it breaks)."""
    if language == "python":
        # the separator may be any of PEP 503's, as in a name: `django_*` is `django-*`
        prefix = entry[:-2] if entry[-2:] in ("-*", "_*", ".*") else ""
        named = canonical(prefix) if WILDCARD not in prefix else None
        return (
            (named + PYTHON_SUFFIX, None) if named else (None, f"{quoted(entry)} is not a pattern: {RULES[language]}")
        )
    scope = entry[: -len(NODE_SUFFIX)] if entry.endswith(NODE_SUFFIX) and entry.startswith("@") else ""
    # a scope is valid when a package inside it is: `@scope/x` read as npm reads it
    inside = parse(language, f"{scope}/x") if scope and WILDCARD not in scope else None
    if inside is None or inside.kind != "registry" or inside.name != f"{scope}/x":
        return None, f"{quoted(entry)} is not a pattern: {RULES[language]}"
    return scope + NODE_SUFFIX, None


# Remembered for names up to this long: a Python name has a pattern per dash, so a long one's
# are large (2,048 prefixes, 4 MB, for a 4,096-character name), and 65,536 such names remembered
# would have been gigabytes; at this length and count, at most about 32 MB.
CACHED_NAME_CHARS = 128


def patterns_for(language: str, name: str) -> tuple[str, ...]:
    """Every pattern that matches `name` (a canonical registry name), as stored."""
    if len(name) <= CACHED_NAME_CHARS:
        return _remembered_patterns(language, name)
    return _patterns(language, name)


@lru_cache(maxsize=8192)
def _remembered_patterns(language: str, name: str) -> tuple[str, ...]:
    return _patterns(language, name)


def _patterns(language: str, name: str) -> tuple[str, ...]:
    if language == "node":
        scope, slash, rest = name.partition("/")
        return (scope + NODE_SUFFIX,) if name.startswith("@") and slash and rest else ()
    dashes = [i for i, char in enumerate(name) if char == "-" and i + 1 < len(name)]
    return tuple(name[:i] + PYTHON_SUFFIX for i in dashes)


def matches(language: str, pattern: str, name: str) -> bool:
    """Does a stored pattern match a name (exactly, as the allow list compares)?"""
    return pattern in patterns_for(language, name)


def shadowed(language: str, allow: Iterable[str], deny: Iterable[str]) -> list[dict[str, Any]]:
    """Each deny pattern with the allow entries it overrides: `{"pattern", "shadows": [...]}`,
    patterns and entries in sorted order.

    The deny list wins, so these allow entries decide nothing while the pattern stands; a draft
    shows them so that no one saves such a list by accident. Each allow entry looks up the few
    deny patterns that could override it (`_overriding_keys`), as judging a name does: comparing
    every pattern with every entry took 89 s for 10,000 of each."""
    patterns = sorted(p for p in deny if is_pattern(p))
    by_key: dict[str, list[str]] = {}  # Node deny keys ignore case: `@Corp/*` and `@corp/*` share one
    for pattern in dict.fromkeys(patterns):
        by_key.setdefault(deny_key(language, pattern), []).append(pattern)
    hits: dict[str, list[str]] = {}
    for entry in sorted(allow):
        for key in _overriding_keys(language, entry):
            for pattern in by_key.get(key, ()):
                hits.setdefault(pattern, []).append(entry)
    return [{"pattern": p, "shadows": hits[p]} for p in patterns if p in hits]


def _overriding_keys(language: str, entry: str) -> set[str]:
    """The deny keys of the patterns that override an allow entry: those matching it (a name), or
    those matching every name it matches (a pattern). For Python `a-b-*` those are `a-*` and
    itself, the patterns at each dash as for a name: a deny pattern is a prefix and `-*`."""
    if not is_pattern(entry):
        found = patterns_for(language, entry)
    elif language == "python":
        found = (*patterns_for(language, deny_key(language, entry)), entry)
    else:
        found = (entry,)
    return {deny_key(language, p) for p in found}
