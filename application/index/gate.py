"""Judging what a package client fetches through the index, and recording it once per run.

The rule and the policy are those of `/evaluate`: the same `judge` on the same cached policy
(one indexed version probe, then a dict lookup: O(1) in the size of the policy and of history),
and the decision is durable (group commit) before the client gets an answer.

Recording without drowning: a resolver fetches the same page many times while it backtracks.
Within a run (or, for a plain token, a window of `TOKEN_WINDOW_SECONDS`) one decision is kept
per (principal, language, project, request) - where a download's request includes its file
name - as long as the verdict and policy version stay the same. Repeats are counted, not
recorded again; a policy change in the middle of a run records the new verdict.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

from application.decision_writer import DecisionWriter
from application.policies import Policies
from domain.decision import Decision, DecisionRecord, judge
from domain.declared import declared_record, declared_specs, hidden_message, judge_declared, version_label
from domain.errors import NotFoundError
from domain.specs import Spec, parse
from domain.specs.pip import NAME_RE
from domain.text import check_text

REQUESTS = ("page", "metadata", "download")
TOKEN_WINDOW_SECONDS = 15 * 60
MAX_REMEMBERED = 100_000
MAX_FILE_NAME = 255


@dataclass(frozen=True)
class Principal:
    """Who asks the index: a run's token, or an API token that may evaluate."""

    workspace: str
    token: str  # the id of the API token (the run's starter, for runs)
    name: str
    role: str = "run"  # the API token's role, or "run" for a run's token
    run: str | None = None
    sandbox: str | None = None
    expires: float | None = None  # monotonic deadline for a run's memory of its decisions


class IndexGate:
    def __init__(self, policies: Policies, writer: DecisionWriter):
        self._policies = policies
        self._writer = writer
        self._seen: OrderedDict[tuple, tuple] = OrderedDict()
        self._lock = threading.Lock()
        self.repeats = 0  # fetches answered from an earlier decision of the same run

    def judge(
        self,
        principal: Principal,
        language: str,
        name: str,
        request: str,
        file: str | None = None,
        package_version: str | None = None,
    ) -> dict:
        """The verdict for one fetch; recorded unless this run already recorded the same one.
        (Two concurrent first fetches of one thing may both be recorded: the memory is not a lock.)"""
        version, rules = self._policies.current(principal.workspace)
        spec = registry_spec(language, name)
        for field, value in (("file", file), ("package_version", package_version)):
            if value is not None:
                check_text(value, field, MAX_FILE_NAME)  # from the URL: bounded and printable before it is stored
        verdict = judge(rules[language], spec, principal.workspace)
        key = (principal.run or principal.token, language, spec.name, request, file if request == "download" else None)
        earlier = self._earlier(key, (verdict.allowed, verdict.reason, version))
        if earlier is not None:
            return _answer(verdict, version, earlier, recorded=False)
        made = DecisionRecord.for_spec(spec, verdict, version, _context(principal))
        record = made.fetched(request, principal.run, file, package_version if file is not None else None)
        decision = Decision(workspace=principal.workspace, record=record.to_dict())
        self._writer.record(decision)  # StoreUnavailableError: the client gets a 503
        self._remember(key, (verdict.allowed, verdict.reason, version), str(decision.id), principal)
        return _answer(verdict, version, str(decision.id), recorded=True)

    def hidden_versions(
        self, principal: Principal, language: str, name: str, declarations: dict, request: str, file: str | None = None
    ) -> dict[str, str]:
        """Judge what each version declares (`{version: npm manifest or Requires-Dist list}`):
        {version: message} for the versions a refused non-registry dependency hides. Each such
        dependency is recorded once per run, allowed or not, all in one commit."""
        policy_version, rules = self._policies.current(principal.workspace)
        if file is not None:
            check_text(file, "file", MAX_FILE_NAME)
        hidden: dict[str, str] = {}
        made = []
        for version, metadata in declarations.items():
            label = version_label(language, name, version)
            for found in judge_declared(rules[language], declared_specs(language, metadata), principal.workspace):
                if not found.verdict.allowed:
                    hidden.setdefault(version, hidden_message(label, found))
                key = (principal.run or principal.token, language, name, request, label, found.spec.text, file)
                outcome = (found.verdict.allowed, found.verdict.reason, policy_version)
                if self._earlier(key, outcome) is None:
                    record = declared_record(
                        found, label, policy_version, _context(principal), request, principal.run, file, version
                    )
                    made.append((key, outcome, Decision(workspace=principal.workspace, record=record.to_dict())))
        if made:
            self._writer.record(*(decision for _, _, decision in made))  # StoreUnavailableError: a 503
            for key, outcome, decision in made:
                self._remember(key, outcome, str(decision.id), principal)
        return hidden

    def listing(self, workspace: str, language: str, candidates) -> list[str]:
        """The projects an index root lists: the allow list (allowlist mode), or `candidates()`
        (upstream's list, denylist mode), less every name the rules deny. Not recorded: a
        listing installs nothing, and each project is judged when it is fetched."""
        _, rules = self._policies.current(workspace)
        language_rules = rules[language]
        names = language_rules.allow if language_rules.mode == "allowlist" else candidates()
        return sorted(n for n in names if judge(language_rules, Spec(n, language, "registry", n), workspace).allowed)

    def _earlier(self, key: tuple, outcome: tuple) -> str | None:
        with self._lock:
            found = self._seen.get(key)
            if found is None or found[0] != outcome or found[2] < time.monotonic():
                return None
            self.repeats += 1
            return found[1]

    def _remember(self, key: tuple, outcome: tuple, decision_id: str, principal: Principal) -> None:
        deadline = principal.expires or time.monotonic() + TOKEN_WINDOW_SECONDS
        with self._lock:
            self._seen[key] = (outcome, decision_id, deadline)
            self._seen.move_to_end(key)
            while len(self._seen) > MAX_REMEMBERED:
                self._seen.popitem(last=False)


def registry_spec(language: str, name: str) -> Spec:
    """The project a client asked for, as a registry spec judged like `/evaluate`'s names; a
    path that names no project (a version, a range, a URL) is no resource here."""
    spec = parse(language, name)
    bare = NAME_RE.fullmatch(name) if language == "python" else spec.name == name
    if spec.kind != "registry" or spec.name is None or not bare:
        raise NotFoundError(f"{name!r} is not a {language} package name")
    return spec


def _context(principal: Principal) -> dict:
    context = {"source": "index", "sandbox": principal.sandbox, "actor": principal.name}
    return {k: v for k, v in context.items() if v is not None}


def _answer(verdict, version: int, decision_id: str, recorded: bool) -> dict:
    return {
        "allowed": verdict.allowed,
        "reason": verdict.reason,
        "message": verdict.message,
        "policy_version": version,
        "id": decision_id,
        "recorded": recorded,
    }
