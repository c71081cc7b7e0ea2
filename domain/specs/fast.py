"""Exact shortcuts for the commonest spec shapes: a bare name, optionally with a plain version.

Each answers only what it can prove the full parser (`pip.parse_line`, `npm.parse_arg`) answers
for the same text, and None for everything else, which the full parser then reads. Their
grammars are deliberately narrow (ASCII, no markers, extras, URLs, paths or options), so every
check the full parser makes is decided by the shape alone; tests/domain/test_spec_fast_path.py
holds them to the full parser on the corpus and on generated near misses.
"""

from __future__ import annotations

import re

from domain.specs import npm, pip
from domain.specs.types import Parsed

# PEP 508 name, then numeric PEP 440 specifiers packaging always accepts: ~= needs two release
# parts, only == and != take '.*'. No '#', ';', '@', '[', ':', '/', '\\', '$' or leading '-', so
# none of pip's comment, option, marker, URL, extras, path or ${VAR} rules can apply.
_REL = r"[0-9]+(?:\.[0-9]+)*"
_PIP_CLAUSE = rf"(?:(?:==|!=)[ \t]*{_REL}(?:\.\*)?|~=[ \t]*[0-9]+(?:\.[0-9]+)+|(?:<=|>=|<|>)[ \t]*{_REL})"
_PIP_SIMPLE = re.compile(
    rf"[ \t]*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)"
    rf"(?:[ \t]*{_PIP_CLAUSE}(?:[ \t]*,[ \t]*{_PIP_CLAUSE})*)?[ \t]*",
    re.ASCII,
)

# npm: an unscoped or scoped name (always valid for validate-npm-package-name) and an optional
# spec. Without ':', '/', '@', '#', blanks or a leading '.', npa sees neither a URL, an scp or
# hosted-git shortcut nor a path, so the spec is a registry one exactly when it is a dist-tag
# (encodeURIComponent-safe) or a version range; the range shapes here are ones node-semver
# always accepts (numbers stay below 2**53).
_NPM_PART = r"[A-Za-z0-9][A-Za-z0-9._-]*"
_NPM_NUM = r"(?:0|[1-9][0-9]{0,14})"
_NPM_RANGE = rf"(?:\^|>=|<=|>|<|=)?{_NPM_NUM}(?:\.{_NPM_NUM}){{0,2}}"
_NPM_TAG = r"[A-Za-z0-9\-_!~*'()][A-Za-z0-9\-_.!~*'()]*"
_NPM_SIMPLE = re.compile(rf"(@{_NPM_PART}/)?({_NPM_PART})(?:@(?:{_NPM_TAG}|{_NPM_RANGE})?)?", re.ASCII)
# npa's tarball test, on an unscoped name and on the spec (a scoped one is left to npa)
_NPM_TARBALL = re.compile(r"\.(?:tgz|tar\.gz|tar)(?:@|\Z)", re.I | re.A)


def pip_line(text: str) -> Parsed | None:
    """`pip.parse_line(text)` for a bare name or a name with plain version specifiers, else None."""
    match = _PIP_SIMPLE.fullmatch(text)
    if match is None or match.group(1).lower().endswith(pip.ARCHIVES):  # a bare `x.zip` is a local file
        return None
    return ("registry", pip.canonical(match.group(1)), None)


def npm_arg(text: str) -> Parsed | None:
    """`npm.parse_arg(text)` for a registry name with an optional dist-tag or plain range, else None."""
    match = _NPM_SIMPLE.fullmatch(text)
    if match is None or _NPM_TARBALL.search(text):
        return None
    scope, name = match.groups()
    if scope is None and name.lower() in npm.RESERVED_NAMES:
        return None
    return ("registry", name if scope is None else scope + name, None)
