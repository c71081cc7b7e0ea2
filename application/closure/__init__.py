"""Dependency closures: the names a set of specs needs, each marked against the current policy.

`Closures.closure` resolves through fetchers the interface hands it (`Fetchers`: the index's own
upstream clients) and judges every name with the rule `evaluate` uses, at this instant, without
recording anything (a closure is a question, not an install). The resolvers skip the versions the
index would hide now (known malware, the rules beyond names: `application.index.versions`), so
the versions chosen are those an install would get; an allowed name every version of which
that some requirement could take is hidden is `refused`, with the index's reason. Approving a request with
its dependencies (`application.access`) grants what this answers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from application.advisories import Advisories
from application.closure import npm, python
from application.closure.graph import Budget, ClosureTooLargeError, Hide
from application.closure.python import Target
from application.index.versions import judge_all, judges
from application.policies import Policies
from domain.decision import judge
from domain.errors import FieldError, InvalidInputError
from domain.limits import MAX_SPECS
from domain.policy import LanguageRules
from domain.specs import check_language, parse

__all__ = ["Budget", "ClosureTooLargeError", "Closures", "Fetchers", "Target", "status_of"]


@dataclass(frozen=True)
class Fetchers:
    """What the resolvers read upstream (see `application.closure.python` and `.npm`)."""

    pypi_page: Callable[[str], dict | None]
    pypi_requires: Callable[[str], list[str]]
    packument: Callable[[str], dict | None]
    target: Target
    npm_times: Callable[[str], dict | None] = lambda name: None  # the full packument's `time`


def status_of(verdict, refused: str | None = None) -> str:
    """allowed (the lists or an exception), denied (the deny list), unlisted (not allowed by the
    mode) or, for an allowed name, refused (the index hides every version some requirement on it
    could take: `refused` is why). The name's own answer comes first: it is what an approval
    changes, and an exception does not show a hidden version (`unresolved` says it is hidden)."""
    if not verdict.allowed:
        return "denied" if verdict.reason == "matches-the-deny-list" else "unlisted"
    return "allowed" if refused is None else "refused"


class Closures:
    def __init__(self, policies: Policies, advisories: Advisories):
        self.policies = policies
        self.advisories = advisories

    def closure(self, workspace: str, language: str, specs: list[str], fetchers: Fetchers, budget=None) -> dict:
        check_language(language)
        if not isinstance(specs, list) or not 1 <= len(specs) <= MAX_SPECS:
            raise InvalidInputError(
                f"specs must list 1 to {MAX_SPECS} specs", [FieldError("specs", f"1 to {MAX_SPECS} specs")]
            )
        self.policies.require_workspace(workspace)
        budget = budget or Budget()
        version, rules = self.policies.current(workspace)
        hide = self._hiding(rules[language], language)
        if language == "python":
            found = python.resolve(specs, fetchers.pypi_page, fetchers.pypi_requires, fetchers.target, budget, hide)
        else:
            found = npm.resolve(specs, fetchers.packument, budget, hide, fetchers.npm_times)
        for entry in found["names"]:
            verdict = judge(rules[language], parse(language, entry["name"]), workspace)
            refused = entry.pop("refused")
            status = status_of(verdict, refused)
            entry.update(status=status, reason=refused if status == "refused" else verdict.reason)
            if verdict.params and "pattern" in verdict.params:  # no exception lifts a pattern (domain.access)
                entry["pattern"] = verdict.params["pattern"]
        return {"language": language, "policy_version": version, **found}

    def _hiding(self, rules: LanguageRules, language: str) -> Hide:
        """What the index would hide of a project now: its judged keys that are hidden, judged
        once per closure (a resolver may choose a project's version several times)."""
        at = rules.at or self.policies.clock()
        known: dict[str, dict] = {}

        def hide(name, facts):
            if not judges(rules, self.advisories, language, name):
                return {}
            if name not in known:
                judged = judge_all(rules, self.advisories, language, name, facts(), at)
                known[name] = {key: found for key, found in judged.items() if found.hiding}
            return known[name]

        return hide
