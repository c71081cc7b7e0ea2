"""What both resolvers build: the closure's names, who needs each, and its bounds.

A `Graph` collects, per registry name, the version chosen (None when none could be), the names
that need it and why a part could not be followed; `Budget` counts upstream fetches and names so
one call stays bounded (`domain.limits`), refusing with 422 rather than answering a partial
closure that an approval would then grant as if it were whole.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from domain.errors import FieldError, InvalidInputError
from domain.limits import MAX_CLOSURE_FETCHES, MAX_CLOSURE_NAMES


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


@dataclass
class Node:
    versions: set[str] = field(default_factory=set)
    needed_by: set[str] = field(default_factory=set)
    requested: bool = False


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

    def answer(self) -> dict:
        """Names sorted, each with its chosen versions and the names that need it."""
        return {
            "names": [
                {
                    "name": name,
                    "versions": sorted(node.versions),
                    "requested": node.requested,
                    "needed_by": sorted(node.needed_by),
                }
                for name, node in sorted(self.nodes.items())
            ],
            "unresolved": self.unresolved,
        }
