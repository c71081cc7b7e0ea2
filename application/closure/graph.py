"""What both resolvers build: the closure's names, who needs each, and its bounds.

A `Graph` collects, per registry name, the version chosen (None when none could be), the names
that need it and why a part could not be followed; `Budget` counts upstream fetches and names so
one call stays bounded (`domain.limits`), refusing with 422 rather than answering a partial
closure that an approval would then grant as if it were whole. `Hide` is what the index would
hide of a project now: the resolvers choose among the versions it would show, as an install
through it does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from application.index.versions import Judged
from domain.errors import FieldError, InvalidInputError
from domain.limits import MAX_CLOSURE_FETCHES, MAX_CLOSURE_NAMES
from domain.rules import VersionFacts


class ClosureTooLargeError(InvalidInputError):
    """The closure needs more names or upstream fetches than one call may take."""


@dataclass
class Budget:
    fetches: int = 0
    max_fetches: int = MAX_CLOSURE_FETCHES
    max_names: int = MAX_CLOSURE_NAMES

    def spend(self) -> None:
        self.fetches += 1
        if self.fetches > self.max_fetches:
            raise ClosureTooLargeError(
                f"the closure needs more than {self.max_fetches} upstream fetches",
                [FieldError("specs", f"the closure may take at most {self.max_fetches} upstream fetches")],
            )

    def check_names(self, count: int) -> None:
        if count > self.max_names:
            raise ClosureTooLargeError(
                f"the closure has more than {self.max_names} names",
                [FieldError("specs", f"a closure may hold at most {self.max_names} names")],
            )


def memo(fetch, budget: Budget):
    """`fetch` once per argument, each first call spending one upstream fetch."""
    found: dict = {}

    def fetched(key):
        if key not in found:
            budget.spend()
            found[key] = fetch(key)
        return found[key]

    return fetched


# `hide(name, facts)`: the keys of `facts()` (npm versions, python files) the index would hide,
# each as judged (`application.index.versions`); `facts` is read only if a version may be hidden.
Hide = Callable[[str, Callable[[], Mapping[str, VersionFacts]]], dict[str, Judged]]


def shows_all(name: str, facts: Callable[[], Mapping[str, VersionFacts]]) -> dict[str, Judged]:
    return {}


@dataclass
class Node:
    versions: set[str] = field(default_factory=set)
    needed_by: set[str] = field(default_factory=set)
    requested: bool = False
    refused: str | None = None  # the reason every version some requirement on it could take is hidden


@dataclass
class Graph:
    budget: Budget
    nodes: dict[str, Node] = field(default_factory=dict)
    unresolved: list[dict] = field(default_factory=list)

    def reach(self, name: str, by: str | None) -> Node:
        node = self.nodes.get(name)
        if node is None:
            self.budget.check_names(len(self.nodes) + 1)
            node = self.nodes[name] = Node()
        if by is None:
            node.requested = True
        elif by != name:
            node.needed_by.add(by)
        return node

    def cannot_follow(self, name: str, spec: str, why: str) -> None:
        entry = {"name": name, "spec": spec, "why": why}
        if entry not in self.unresolved:
            self.unresolved.append(entry)

    def refuse(self, name: str, spec: str, newest: Judged) -> None:
        """Every version `spec` could take is hidden: the index's reason for the newest of them."""
        finding = newest.hiding[0]
        node = self.nodes[name]
        node.refused = node.refused or finding.reason
        self.cannot_follow(name, spec, f"every version it could take is hidden: {newest.message}")

    def answer(self) -> dict:
        """Names sorted, each with its chosen versions, the names that need it and, when the index
        hides every version some requirement on it could take, that refusal's reason."""
        return {
            "names": [
                {
                    "name": name,
                    "versions": sorted(node.versions),
                    "requested": node.requested,
                    "needed_by": sorted(node.needed_by),
                    "refused": node.refused,
                }
                for name, node in sorted(self.nodes.items())
            ],
            "unresolved": self.unresolved,
        }
