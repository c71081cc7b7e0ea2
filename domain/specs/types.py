"""The shapes every spec parser shares: the leaf of `domain.specs` (it imports nothing of it)."""

from __future__ import annotations

import re
from dataclasses import dataclass

LANGUAGES = ("python", "node")
# How sentences for people name the languages (`the Python deny list`), wherever they are said.
LANGUAGE_TITLES = {"python": "Python", "node": "Node"}
KINDS = ("registry", "alias", "url", "vcs", "path", "option", "invalid")

# A language parser's answer: (kind, name, detail).
Parsed = tuple[str, "str | None", "str | None"]

# NUL, C0/C1 controls (tab is PEP 508 whitespace), lone surrogates, and the Unicode line
# separators that str.splitlines() (pip's file reader) would turn into a second line.
UNSAFE_CHARS = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


@dataclass(frozen=True)
class Spec:
    """One judged install argument.

    `name` is the canonical name of what would really be installed (python: PEP 503 form;
    node: as written, an alias gives its target) or None when it cannot be known before
    download/build. `detail` says why for `invalid` and `option`, and what the source is for
    url/vcs/path.
    """

    text: str
    language: str
    kind: str
    name: str | None
    detail: str | None = None


def make_spec(language: str, text: str, parsed: tuple[str, str | None, str | None]) -> Spec:
    """Wrap a language parser's (kind, name, detail) triple; shared with `commands`."""
    kind, name, detail = parsed
    return Spec(text=text, language=language, kind=kind, name=name, detail=detail)
