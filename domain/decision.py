"""Judging one parsed spec against one language's rules, the typed decision (`DecisionRecord`),
and the Decision aggregate that records it.

A Decision is its own small aggregate (never an event on the Policy): concurrent sandboxes would
otherwise conflict on the Policy's version.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any
from uuid import NAMESPACE_URL, UUID, uuid5

from eventsourcing.domain import Aggregate, event

from domain.egress import REASONS as EGRESS_REASONS
from domain.egress import EgressVerdict
from domain.ids import uuid7
from domain.policy import LanguageRules
from domain.rules import REASONS as RULE_REASONS
from domain.specs import KINDS, Spec

# The service's own labels (`context.source`) of the decisions it records itself, which a caller's
# context may never carry (interface.api.schemas): the package index's, the egress proxy's.
INDEX_SOURCE = "index"
EGRESS_PROXY_SOURCE = "egress-proxy"
SERVICE_SOURCES = (INDEX_SOURCE, EGRESS_PROXY_SOURCE)
# The package index refuses everything to a run after its first project denial (see `run_failed`).
RUN_FAILED = "run-failed"
# The index refuses a version an imported known-malware advisory affects (hidden from pages,
# its files 403), and records a name its upstream does not have: neither denies a project.
KNOWN_MALWARE = "known-malware"
NOT_FOUND_UPSTREAM = "not-found-upstream"
# A file whose version nothing says (a Python file name no standard reads) while its project's
# versions are judged: no rule can be applied to it, so it is refused; one whose name names another
# project is no version of its page's at all, and is refused always. No project denial either.
VERSION_UNKNOWN = "version-unknown"
# The index records an upstream that failed what it allowed (unreachable, untrusted, too slow), with
# the reason: package clients print only the status line, so the gate prints this. No project denial.
UPSTREAM_FAILED = "upstream-failed"
REASONS = (
    "matches-the-allow-list",
    "not-on-the-allow-list",
    "matches-the-deny-list",
    "not-on-the-deny-list",
    "direct-reference",
    "invalid-spec",
    "matches-an-exception",
    RUN_FAILED,
    KNOWN_MALWARE,
    NOT_FOUND_UPSTREAM,
    VERSION_UNKNOWN,
    *RULE_REASONS,  # a version the index hides by a rule beyond names (domain.rules)
    UPSTREAM_FAILED,
)
EXCEPTION_REASON = "matches-an-exception"
# Every reason a decision can carry: the package rules', then the egress rules'.
DECISION_REASONS = (*REASONS, *EGRESS_REASONS)
# Every kind a decision can carry: a spec's kind, or "egress" for a network destination.
DECISION_KINDS = (*KINDS, "egress")
DIRECT_KINDS = ("url", "vcs", "path")
JUDGED_KINDS = ("registry", "alias", *DIRECT_KINDS)
# A version 1 record's text, kept as its rendering where its parameters cannot be re-derived (`upcast_record`).
LEGACY = "shown"


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    reason: str
    # What a denial's message needs beyond the spec (`application.messages` words it); None: nothing.
    params: dict[str, Any] | None = None


def judge(rules: LanguageRules, spec: Spec, workspace: str) -> Verdict:
    """The rule (docs/policy-rules.md): deny list first (an entry naming the name does not deny it
    while a lifting exception for it is in force), then the mode; direct references never ride on
    a registry name's approval; unjudgeable specs are refused."""
    if spec.kind not in JUDGED_KINDS or (spec.kind not in DIRECT_KINDS and spec.name is None):
        return Verdict(False, "invalid-spec")  # also any kind added later: fail closed
    denied = spec.name is not None and rules.denies(spec.name)
    if spec.kind in DIRECT_KINDS:  # a lifted deny entry still denies them: an exception is a registry name's
        if rules.mode == "allowlist" or denied or spec.name is None or (rules.lifted and rules.lifts(spec.name)):
            return Verdict(False, "direct-reference", {"mode": rules.mode})
        return Verdict(True, "direct-reference")
    if denied:  # a pattern's denial is named: no request for the name can be approved under it
        pattern = rules.deny_pattern(spec.name)  # type: ignore[arg-type]  # denied: it has its name
        return Verdict(False, "matches-the-deny-list", {"pattern": pattern} if pattern else None)
    if rules.lifted and rules.lifts(spec.name):  # type: ignore[arg-type]  # a registry spec has its name
        return Verdict(True, EXCEPTION_REASON)  # its deny entry stays, lifted for the exception's window
    if rules.mode == "denylist":
        return Verdict(True, "not-on-the-deny-list")
    if rules.allows(spec.name):  # type: ignore[arg-type]  # a registry spec has its name
        return Verdict(True, "matches-the-allow-list")
    if rules.excepts(spec.name):  # type: ignore[arg-type]  # a time-boxed exception vouches for the name, like the allow list
        return Verdict(True, EXCEPTION_REASON)
    return Verdict(False, "not-on-the-allow-list")


# What of a run's first project denial its `run-failed` refusals keep: enough to render it.
FIRST_DENIAL_FIELDS = ("spec", "language", "name", "kind", "reason", "detail", "params")


def run_failed(first: dict[str, Any], window_minutes: int | None = None) -> Verdict:
    """Every fetch after a run's first project denial (`first`, a decision as recorded): refused,
    naming that denial, so no resolver can back-track to an old release that lacks the denied
    dependency. `window_minutes`: a token reading without a run fails for that long, a run for good."""
    params: dict[str, Any] = {"first": {k: first[k] for k in FIRST_DENIAL_FIELDS if first.get(k) is not None}}
    if window_minutes is not None:
        params["window_minutes"] = window_minutes
    return Verdict(False, RUN_FAILED, params)


def known_malware(name: str, version: str, advisories: list[str]) -> Verdict:
    """A version an imported advisory affects: refused everywhere, whatever the lists say."""
    return Verdict(False, KNOWN_MALWARE, {"name": name, "version": version, "advisories": list(advisories)})


def another_projects_file(name: str, file: str) -> Verdict:
    """A file listed under `name` whose name names another project or none
    (`domain.python_files.names_project`): a client installs the project it is, which nothing
    judged, so it is refused whatever the rules (its name says no version of `name`)."""
    return Verdict(False, VERSION_UNKNOWN, {"name": name, "file": file, "another_project": True})


def not_found_upstream() -> Verdict:
    """A name the upstream registry does not have: recorded (names that do not exist are what
    squatters register), never served, and no project denial."""
    return Verdict(False, NOT_FOUND_UPSTREAM)


def upstream_failed(why: str) -> Verdict:
    """What the index allowed but its upstream could not deliver, and why (the problem's detail,
    which names the setting to change when one would help): a fact, kept as the upstream said it."""
    return Verdict(False, UPSTREAM_FAILED, {"why": why})


# What the decisions table keeps in columns of their own beside the record (filters, counts).
COLUMNS = ("language", "name", "kind", "allowed", "reason", "source", "sandbox")


@dataclass(frozen=True)
class DecisionRecord:
    """One decision as it is recorded and answered: the one definition of its shape.

    `to_dict` is exactly what the Decision event stores and, with `id`, `at` and the rendered
    `message` (`application.messages`), what the API answers. Egress decisions always carry
    `detail`, `resolved` and `port`; package decisions carry `detail` and `params` only when they
    have them. No words meant for a reader are stored: a refusal keeps its reason and `params`,
    the facts its message is rendered from.
    """

    spec: str
    language: str | None
    name: str | None
    kind: str
    allowed: bool
    reason: str
    policy_version: int | None
    context: dict[str, Any] | None
    detail: str | None = None
    params: dict[str, Any] | None = None
    resolved: tuple[str, ...] | None = None
    port: int | None = None
    # Made by the package index: what was fetched (page, metadata, download), in which run (or,
    # without a run, by which API token: its id), and for downloads the file and its package version.
    request: str | None = None
    run: str | None = None
    file: str | None = None
    package_version: str | None = None
    # A declared dependency the index judged (`domain.declared`): the version that declares it
    # (`alpha@1.1.0`, `alpha==1.1`), hidden when the dependency is refused; never a project denial.
    declared_by: str | None = None
    token: str | None = None

    @classmethod
    def for_spec(
        cls, spec: Spec, verdict: Verdict, policy_version: int, context: dict[str, Any] | None
    ) -> DecisionRecord:
        detail = spec.detail if spec.detail and not verdict.allowed else None
        return cls(
            spec.text,
            spec.language,
            spec.name,
            spec.kind,
            verdict.allowed,
            verdict.reason,
            policy_version,
            context,
            detail,
            verdict.params,
        )

    @classmethod
    def for_egress(
        cls,
        target: str,
        verdict: EgressVerdict,
        resolved: Iterable[str],
        context: dict[str, Any] | None,
        policy_version: int | None = None,
    ) -> DecisionRecord:
        return cls(
            target,
            None,
            verdict.host,
            "egress",
            verdict.allowed,
            verdict.reason,
            policy_version,
            context,
            verdict.detail,
            None,
            tuple(resolved),
            verdict.port,
        )

    def fetched(
        self, request: str, run: str | None, file: str | None, package_version: str | None, token: str | None = None
    ) -> DecisionRecord:
        """This decision as the package index made it, for one fetch (`token`: only without a run)."""
        return replace(self, request=request, run=run, file=file, package_version=package_version, token=token)

    @property
    def source(self) -> str | None:
        return (self.context or {}).get("source")

    @property
    def sandbox(self) -> str | None:
        return (self.context or {}).get("sandbox")

    @staticmethod
    def columns(record: dict[str, Any]) -> tuple[Any, ...]:
        """The values of COLUMNS (the read model's own columns of a decision) of a record in its
        `to_dict` form, read from the dict: the group-commit writer asks this of every decision it records,
        and building the whole record again for seven fields was a tenth of its time."""
        context = record.get("context") or {}
        head = (record.get("language"), record.get("name"), record["kind"], bool(record["allowed"]), record["reason"])
        return (*head, context.get("source"), context.get("sandbox"))

    def to_dict(self) -> dict[str, Any]:
        record = {
            "spec": self.spec,
            "language": self.language,
            "name": self.name,
            "kind": self.kind,
            "allowed": self.allowed,
            "reason": self.reason,
            "policy_version": self.policy_version,
            "context": self.context,
        }
        if self.kind == "egress":
            return {**record, "detail": self.detail, "resolved": list(self.resolved or ()), "port": self.port}
        extra = {
            "detail": self.detail,
            "params": self.params,
            "request": self.request,
            "run": self.run,
            "file": self.file,
            "package_version": self.package_version,
            "declared_by": self.declared_by,
            "token": self.token,
        }
        return {**record, **{k: v for k, v in extra.items() if v is not None}}

    @classmethod
    def from_dict(cls, record: dict[str, Any]) -> DecisionRecord:
        resolved = record.get("resolved")
        return cls(
            record["spec"],
            record.get("language"),
            record.get("name"),
            record["kind"],
            bool(record["allowed"]),
            record["reason"],
            record.get("policy_version"),
            record.get("context"),
            record.get("detail"),
            record.get("params"),
            None if resolved is None else tuple(resolved),
            record.get("port"),
            record.get("request"),
            record.get("run"),
            record.get("file"),
            record.get("package_version"),
            record.get("declared_by"),
            record.get("token"),
        )


def upcast_record(record: dict[str, Any]) -> None:
    """A version 1 record (which stored its `message`) in today's shape, in place. The reasons
    whose message is the record's own fields and the workspace (a list, an invalid spec, a name the
    upstream lacks, and a direct reference, whose mode the text says) keep no text: they render
    with today's words and places, as if recorded today. The others (a version's findings, an
    upstream's failure, a run that failed, a hidden version) keep their text, shown as it was:
    their parameters are not in the record, and re-reading them from free text would guess."""
    message = record.pop("message", None)
    if message is None:
        return
    if record.get("declared_by") is None and record["reason"] in _RE_RENDERED:
        if record["reason"] == "direct-reference":
            mode = "allowlist" if "the allow list vouches for registry names only" in message else "denylist"
            record["params"] = {"mode": mode}
        return
    record["params"] = {LEGACY: message}


def stored_record(state: dict[str, Any]) -> dict[str, Any]:
    """The record of a `Decision.Recorded` event's state as stored (its JSON, not yet upcast) in
    today's shape, as a replay reads it: what a read model or an export of it must equal."""
    record = dict(state["record"])
    if state.get("class_version", 1) < 2:
        upcast_record(record)
    return record


_RE_RENDERED = (
    "matches-the-deny-list",
    "not-on-the-allow-list",
    "direct-reference",
    "invalid-spec",
    NOT_FOUND_UPSTREAM,
)


class Decision(Aggregate):
    """One judged spec, recorded durably before the sandbox gets its answer."""

    TOPIC = "runcode_policy:Decision"

    class Created(Aggregate.Created):
        # Unused base "created" class; the library requires an explicit topic on it too.
        TOPIC = "runcode_policy:Decision.Created"

    class Recorded(Aggregate.Created):
        """Version 2: a refusal's `params` instead of its `message` (`upcast_record`)."""

        TOPIC = "runcode_policy:Decision.Recorded"
        class_version = 2
        workspace: str
        record: dict[str, Any]

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            upcast_record(state["record"])

    @event(Recorded)
    def __init__(self, workspace: str, record: dict[str, Any]):
        # `record` is a DecisionRecord's `to_dict()`, already computed: replay only assigns it.
        self.workspace = workspace
        self.record = record

    @classmethod
    def recorded(
        cls, workspace: str, record: dict[str, Any], decision_id: UUID | None = None, at: datetime | None = None
    ) -> Decision.Recorded:
        """The event `Decision(workspace=..., record=...)` would make (version 1, now), made
        without the aggregate: what every recording path records and answers from. The
        library's aggregate machinery cost three times the event itself, per decision.
        `decision_id`: one the caller worked out from what it decides (`fetch_decision_id`), so
        that every worker making it makes the same one and the store keeps the first; else fresh.
        `at`: the instant of decisions made together (the library's clock, as the default); else now."""
        # The library makes an event's annotations dataclass fields when the class is made,
        # which mypy does not see.
        return cls.Recorded(  # type: ignore[call-arg]
            originator_id=decision_id or uuid7(),
            originator_version=1,
            timestamp=at or cls.Recorded.create_timestamp(),
            originator_topic=cls.TOPIC,
            workspace=workspace,
            record=record,
        )

    @property
    def decision(self) -> DecisionRecord:
        return DecisionRecord.from_dict(self.record)


_FETCHES = uuid5(NAMESPACE_URL, "https://runcode-policy/index-fetches")


def fetch_decision_id(run: str, fetch: tuple[Any, ...], outcome: tuple[Any, ...]) -> UUID:
    """The id of a run's decision on one fetch (language, project, request kind, file) with one
    outcome (allowed, reason, policy version): the same in every worker process."""
    return uuid5(_FETCHES, json.dumps([run, *fetch, *outcome]))
