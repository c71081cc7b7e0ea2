"""Install specs: what a pip or npm argument would really install (docs/policy-rules.md).

`parse` is the one entry point. It classifies exactly the text it is given (no trimming, no
case folding beyond PEP 503) into one of `KINDS` and names the package only when the name is a
fact. It never raises on user text: anything it cannot be sure of comes back as `invalid`, so a
gate built on it fails closed.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from functools import lru_cache

from domain.errors import FieldError, InvalidInputError
from domain.specs import fast, npm, pip
from domain.specs.types import KINDS, LANGUAGE_TITLES, LANGUAGES, UNSAFE_CHARS, Parsed, Spec, make_spec
from domain.text import quoted

__all__ = [
    "KINDS",
    "LANGUAGES",
    "LANGUAGE_TITLES",
    "UNSAFE_CHARS",
    "Parsed",
    "Spec",
    "check_language",
    "deny_key",
    "make_spec",
    "parse",
    "registry_name",
]


def _python(text: str) -> Parsed:
    return fast.pip_line(text) or pip.parse_line(text)


def _node(text: str) -> Parsed:
    kind, name, detail = fast.npm_arg(text) or npm.parse_arg(text)
    if name is not None and "*" in name:
        # npm still reads such a name (validForOldPackages), but lists read `*` as a pattern
        # (`domain.patterns`): a package no list could name would escape the deny list.
        detail = f"{name!r} holds '*', which npm refuses in new package names and lists read as a pattern"
        return ("invalid", None, detail)
    return kind, name, detail


# the shortcuts answer the commonest shapes exactly as the full parsers do, at a fraction of the cost
_PARSERS = {"python": _python, "node": _node}


def check_language(
    language: object,
    refusal: Callable[[str, list[FieldError]], Exception] = InvalidInputError,
    field: str = "language",
) -> str:
    if language not in LANGUAGES:
        said = "no language given" if language is None else f"unknown language {quoted(language)}"
        raise refusal(said, [FieldError(field, "must be python or node")])
    return str(language)


# Sandboxes ask about the same specs over and over: a bounded per-process memo turns a repeated
# spec into one dict lookup (parsing is pure and a Spec is immutable). Long texts are rare and
# are not kept, so the memo's size stays bounded (at most MEMO_SIZE texts of MEMO_MAX_TEXT).
MEMO_SIZE = 8192
MEMO_MAX_TEXT = 256


def parse(language: str, text: str) -> Spec:
    """Classify one pip requirement line or npm install argument; never raises for a str."""
    if isinstance(text, str) and len(text) <= MEMO_MAX_TEXT and language in _PARSERS:
        return _memo(language, text)
    return parse_uncached(language, text)


@functools.lru_cache(maxsize=MEMO_SIZE)
def _memo(language: str, text: str) -> Spec:
    return parse_uncached(language, text)


def parse_uncached(language: str, text: str) -> Spec:
    """`parse` without the memo: the parser's own cost (the benchmark measures this)."""
    try:
        parser = _PARSERS[language]
    except KeyError:
        raise ValueError(f"unknown language {language!r}; expected one of {LANGUAGES}") from None
    if not isinstance(text, str):
        return Spec(text=repr(text), language=language, kind="invalid", name=None, detail="a spec must be a string")
    return make_spec(language, text, parser(text))


def registry_name(language: str, text: str) -> str | None:
    """The canonical registry name if `text` is a plain registry spec, else None.

    Lets callers look a package up by any spelling (`Pandas`, `pandas==2.1`, `lodash@4`).
    Aliases are not registry specs: the alias name is not what gets installed.
    """
    spec = parse(language, text)
    return spec.name if spec.kind == "registry" else None


@lru_cache(maxsize=8192)  # pure, and asked again for every judged name (impact judges thousands)
def deny_key(language: str, name: str) -> str:
    """Key for deny-list matching.

    Python: the PEP 503 form (only for ASCII-valid names, so KELVIN SIGN never folds to `k`).
    Node: lower case. npm names are case-sensitive, but a deny list that ignores case fails
    closed (`Evil` is denied when `evil` is).
    """
    if language == "node":
        return name.lower()
    if language != "python":
        raise ValueError(f"unknown language {language!r}; expected one of {LANGUAGES}")
    if "*" in name:  # a pattern (`domain.patterns`): no name holds '*', and NAME_RE would scan it to say so
        return name  # (for each of a long name's patterns, one per dash: 0.1 s for 4,096 characters)
    return pip.canonical(name) or name
