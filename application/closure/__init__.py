"""Dependency closures: the names a set of specs needs, each marked against the current policy.

`Closures.closure` resolves through fetchers the interface hands it (`Fetchers`: the index's own
upstream clients) and judges every name with the rule `evaluate` uses, at this instant, without
recording anything (a closure is a question, not an install). Approving a request with its
dependencies (`application.access`) grants what this answers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from application.closure import npm, python
from application.closure.graph import Budget, ClosureTooLargeError
from application.closure.python import Target
from application.policies import Policies
from domain.decision import judge
from domain.errors import FieldError, InvalidInputError
from domain.limits import MAX_SPECS
from domain.specs import check_language, parse

__all__ = ["Budget", "ClosureTooLargeError", "Closures", "Fetchers", "Target", "status_of"]


@dataclass(frozen=True)
class Fetchers:
    """What the resolvers read upstream (see `application.closure.python` and `.npm`)."""

    pypi_page: Callable[[str], dict | None]
    pypi_requires: Callable[[str], list[str]]
    packument: Callable[[str], dict | None]
    target: Target


def status_of(verdict) -> str:
    """allowed (the lists or an exception), denied (the deny list) or unlisted (not allowed by the mode)."""
    if verdict.allowed:
        return "allowed"
    return "denied" if verdict.reason == "matches-the-deny-list" else "unlisted"


class Closures:
    def __init__(self, policies: Policies):
        self.policies = policies

    def closure(self, workspace: str, language: str, specs: list[str], fetchers: Fetchers, budget=None) -> dict:
        check_language(language)
        if not isinstance(specs, list) or not 1 <= len(specs) <= MAX_SPECS:
            raise InvalidInputError(
                f"specs must list 1 to {MAX_SPECS} specs", [FieldError("specs", f"1 to {MAX_SPECS} specs")]
            )
        self.policies.require_workspace(workspace)
        budget = budget or Budget()
        if language == "python":
            found = python.resolve(specs, fetchers.pypi_page, fetchers.pypi_requires, fetchers.target, budget)
        else:
            found = npm.resolve(specs, fetchers.packument, budget)
        version, rules = self.policies.current(workspace)
        for entry in found["names"]:
            verdict = judge(rules[language], parse(language, entry["name"]), workspace)
            entry.update(status=status_of(verdict), reason=verdict.reason)
        return {"language": language, "policy_version": version, **found}
