"""The judged root listing of an index, computed once per policy version and upstream revision.

In denylist mode the listing is upstream's whole project list less the denied names: judging
PyPI's list (hundreds of thousands of names) takes seconds of CPU, so the result is kept, one per
(workspace, language), and reused while neither the policy version nor upstream's list changed.
In allowlist mode it is the allow list, judged, and upstream is asked only when the list holds a
pattern (`@scope/*`, `name-*`), which lists what it matches of upstream's list. Not recorded: a
listing installs nothing, and each project is judged when it is fetched.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from domain.decision import judge
from domain.patterns import is_pattern
from domain.specs import Spec


class ListingSource(Protocol):
    """Upstream's project list: `revision()` names its current content, `names()` reads it."""

    def revision(self) -> str: ...

    def names(self) -> Iterable[str]: ...


@dataclass(frozen=True)
class Listing:
    tag: str  # what the answer depends on: the policy version (and upstream's revision)
    names: tuple[str, ...]


class Listings:
    def __init__(self):
        self._kept: dict[tuple[str, str], Listing] = {}
        self._lock = threading.Lock()  # one computation at a time: the others then reuse it

    def get(self, workspace: str, language: str, version: int, language_rules, source: ListingSource) -> Listing:
        allowlist = language_rules.mode == "allowlist"
        # An allow-list pattern (`@scope/*`, `name-*`) lists what it matches of upstream's list.
        upstream = not allowlist or bool(language_rules.patterned[0])
        tag = f"{version}-{source.revision()}" if upstream else f"{version}"
        found = self._kept.get((workspace, language))
        if found is not None and found.tag == tag:
            return found
        with self._lock:
            found = self._kept.get((workspace, language))
            if found is None or found.tag != tag:
                names = language_rules.allow if allowlist else source.names()
                if allowlist and upstream:
                    names = {n for n in language_rules.allow if not is_pattern(n)} | set(source.names())
                spec = lambda n: Spec(n, language, "registry", n)  # noqa: E731
                allowed = (n for n in names if judge(language_rules, spec(n), workspace).allowed)
                found = self._kept[(workspace, language)] = Listing(tag, tuple(sorted(allowed)))
            return found
