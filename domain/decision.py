"""Judging one parsed spec against one language's rules, and the Decision aggregate that records it.

A Decision is its own small aggregate (never an event on the Policy): concurrent sandboxes would
otherwise conflict on the Policy's version.
"""

from __future__ import annotations

from dataclasses import dataclass

from eventsourcing.domain import Aggregate, event

from domain.policy import LanguageRules
from domain.specs import Spec

REASONS = (
    "matches-the-allow-list",
    "not-on-the-allow-list",
    "matches-the-deny-list",
    "not-on-the-deny-list",
    "direct-reference",
    "invalid-spec",
    "matches-an-exception",
)
EXCEPTION_REASON = "matches-an-exception"
DIRECT_KINDS = ("url", "vcs", "path")
JUDGED_KINDS = ("registry", "alias", *DIRECT_KINDS)
LANGUAGE_TITLES = {"python": "Python", "node": "Node"}
CONSOLE_PLACE = "Settings › Governance › Run-code packages"


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    reason: str
    message: str | None = None  # for denials: what was denied, by which rule, what to ask for


def judge(rules: LanguageRules, spec: Spec, workspace: str) -> Verdict:
    """The rule of API.md: deny list first, then the mode; direct references never ride on a
    registry name's approval; unjudgeable specs are refused."""
    if spec.kind not in JUDGED_KINDS or (spec.kind not in DIRECT_KINDS and spec.name is None):
        return _deny("invalid-spec", spec, workspace)  # also any kind added later: fail closed
    denied = spec.name is not None and rules.denies(spec.name)
    if spec.kind in DIRECT_KINDS:
        if rules.mode == "allowlist" or denied or spec.name is None:
            return _deny("direct-reference", spec, workspace, rules.mode)
        return Verdict(True, "direct-reference")
    if denied:
        return _deny("matches-the-deny-list", spec, workspace)
    if rules.mode == "denylist":
        return Verdict(True, "not-on-the-deny-list")
    if spec.name in rules.allow:
        return Verdict(True, "matches-the-allow-list")
    if rules.excepts(spec.name):  # a time-boxed exception vouches for the name, like the allow list
        return Verdict(True, EXCEPTION_REASON)
    return _deny("not-on-the-allow-list", spec, workspace)


def _deny(reason: str, spec: Spec, workspace: str, mode: str = "") -> Verdict:
    return Verdict(False, reason, denial_message(reason, spec, workspace, mode))


def denial_message(reason: str, spec: Spec, workspace: str, mode: str = "") -> str:
    """Written for the asker, a person or an agent: what, which rule, what to ask for."""
    lang = LANGUAGE_TITLES[spec.language]
    who = spec.name or spec.text
    ask = f"an admin can change this under {CONSOLE_PLACE}"
    if reason == "matches-the-deny-list":
        return (
            f"{who} is on the {lang} deny list of workspace {workspace}; {ask} if it should be allowed. "
            + request_hint(spec.language, who, workspace)
        )
    if reason == "not-on-the-allow-list":
        return (
            f"{who} is not on the {lang} allow list of workspace {workspace}; {ask} by adding it to the "
            f"allow list. " + request_hint(spec.language, who, workspace)
        )
    if reason == "direct-reference":
        why = (
            "the allow list vouches for registry names only"
            if mode == "allowlist"
            else "its package name cannot be known before it is fetched or built"
            if spec.name is None
            else f"{spec.name} is on the {lang} deny list"
        )
        return (
            f"{spec.text!r} installs from a {spec.kind} source, which is refused in workspace "
            f"{workspace}: {why}. Install the package from the registry by name instead."
        )
    detail = spec.detail or "it cannot be judged"
    return f"{spec.text!r} cannot be judged, so it is refused: {detail}."


def request_hint(language: str, name: str, workspace: str) -> str:
    """How an agent asks for a denied package: the gate's command, or the API call it makes."""
    return (
        f'To ask for it, run: runcode-policy-gate request {language} {name} --why "..." '
        f"(or POST /api/v1/workspaces/{workspace}/requests)."
    )


class Decision(Aggregate):
    """One judged spec, recorded durably before the sandbox gets its answer."""

    TOPIC = "runcode_policy:Decision"

    class Created(Aggregate.Created):
        # Unused base "created" class; the library requires an explicit topic on it too.
        TOPIC = "runcode_policy:Decision.Created"

    @event("Recorded", topic="runcode_policy:Decision.Recorded")
    def __init__(self, workspace: str, record: dict):
        # `record` is the plain, already-computed decision (spec, language, name, kind, allowed,
        # reason, detail, message, policy_version, context): replay only assigns it.
        self.workspace = workspace
        self.record = record
