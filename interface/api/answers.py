"""Response schemas: what the API answers, as published in the OpenAPI document (and checked
against the live service by schemathesis). Request schemas live in `interface.api.schemas`."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from application.index import REQUESTS as INDEX_REQUESTS
from domain.delivery import STATUSES as DELIVERY_STATUSES
from domain.egress.workspace import EGRESS_MODES
from domain.policy import CHANGE_TYPES, KNOWN_MALWARE
from domain.rules import ACTIONS as RULE_ACTIONS
from domain.rules import RULES
from interface.api.schemas import Instant, Kind, Language, ListName, Mode, Reason, Role, Subject

# Requests, exceptions and impact may be about a host (language `egress`) as well as a package.
AskLanguage = Annotated[Subject, Field(description="egress: a host, for the egress allowlist")]


class LanguagePolicy(BaseModel):
    mode: Mode
    allow: list[str]
    deny: list[str]
    rules: dict = Field(
        {},
        description="rules beyond names that are on (min_release_age, versions_deny, install_scripts for node, "
        "sdists for python), in the shape they are saved in; {} when all are off",
    )


class ExceptionView(BaseModel):
    """A time-boxed exception: the name is allowed (in either mode; deny entries still win, but
    for those naming it when it lifts them) until `expires_at` (null: until revoked)."""

    id: str
    language: AskLanguage
    name: str
    expires_at: Instant | None
    granted_by: str
    granted_version: int
    note: str
    request_id: str | None
    lifts_deny: bool = Field(
        False,
        description="Granted with lift_deny: the deny entries naming the package stay on the deny list and do not "
        "deny it while the exception is in force (never a deny pattern)",
    )


class PolicyView(BaseModel):
    workspace: str
    version: int
    at: Instant | None
    python: LanguagePolicy
    node: LanguagePolicy
    changed_at: Instant | None
    changed_by: str | None
    exceptions: list[ExceptionView] = Field([], description="Exceptions in force at `at` (default now)")
    egress: dict = Field(
        {"allow": None},
        description="`{\"allow\": [...]}`: the workspace's egress allowlist, narrowing the deployment's; "
        "`null`: no narrowing",
    )
    known_malware: Literal[RULE_ACTIONS] = Field(
        "enforce", description="what imported known-malware advisories do: enforce (deny) or monitor (serve, record)"
    )


class ChangeView(BaseModel):
    version: int
    at: Instant
    by: str
    by_token: str | None = Field(
        None, description="id of the token that made the change (with `by`, its name); null for the CLI and the service"
    )
    note: str
    type: Literal[CHANGE_TYPES]
    language: AskLanguage | Literal[KNOWN_MALWARE]
    mode: Mode | Literal[EGRESS_MODES] | Literal[RULE_ACTIONS] | None = Field(
        None, description="mode switches; for language known-malware, its action"
    )
    list: ListName | None = None
    name: str | None = None
    rule: Literal[tuple(sorted({r for rules in RULES.values() for r in rules}))] | None = Field(
        None, description="rule changes: the rule"
    )
    action: Literal[RULE_ACTIONS] | None = Field(None, description="rule changes: the rule's action (null: turned off)")
    exception: dict | None = Field(None, description="`because` an exception decided: its id and expiry")
    request: dict | None = Field(None, description="`because` an exception decided: the request it approved")


class HistoryPage(BaseModel):
    changes: list[ChangeView]
    next_cursor: str | None


class DeliveryView(BaseModel):
    """One transfer a download decision allowed, as it ended: `served` (relayed whole from the
    upstream), `cached` (sent whole from the service's copy) or `failed` (refused or broken off
    upstream, or the client stopped reading); `bytes` and `sha256` are of what was actually sent."""

    status: Literal[DELIVERY_STATUSES]
    bytes: int
    sha256: str
    at: Instant


class DecisionView(BaseModel):
    id: str | None = None
    spec: str
    language: Language | None
    name: str | None
    kind: Kind
    allowed: bool
    reason: str
    policy_version: int | None
    at: Instant | None
    context: dict
    detail: str | None = None
    params: dict | None = Field(
        None, description="refusals: the facts their message is rendered from (what each reason needs)"
    )
    message: str | None = Field(None, description="refusals: what was refused, by which rule, what to ask for")
    resolved: list[str] | None = Field(None, description="egress decisions: the addresses judged")
    port: int | None = Field(None, description="egress decisions: the port of the target")
    request: Literal[INDEX_REQUESTS] | None = Field(None, description="package-index decisions: what was fetched")
    run: str | None = Field(None, description="package-index decisions: the run that fetched it")
    file: str | None = Field(None, description="package-index downloads: the file")
    package_version: str | None = Field(None, description="package-index downloads: the file's package version")
    declared_by: str | None = Field(
        None,
        description="package-index decisions on a declared dependency that is not a registry package: "
        "the version that declares it (hidden when the dependency is refused; not a denial of the project)",
    )
    token: str | None = Field(None, description="package-index decisions without a run: the API token's id")
    delivery: DeliveryView | None = Field(
        None,
        description="package-index downloads, once a transfer ended: what the last one delivered "
        "(absent while none has ended, and for denials: nothing was sent)",
    )
    deliveries: list[DeliveryView] | None = Field(
        None, description="package-index downloads: every transfer of this decision that ended, oldest first"
    )


class Shadowed(BaseModel):
    language: Language
    pattern: str = Field(description="a deny-list pattern")
    shadows: list[str] = Field(description="allow-list entries it overrides (the deny list wins)")


class EvaluateAnswer(BaseModel):
    allowed: bool
    policy_version: int
    decisions: list[DecisionView]
    shadowed: list[Shadowed] | None = Field(
        None, description="`/test` with a draft: deny patterns that shadow allow entries"
    )


class DecisionsPage(BaseModel):
    decisions: list[DecisionView]
    next_cursor: str | None


class PackageAnswer(BaseModel):
    language: Language
    name: str
    at: Instant
    allowed: bool
    reason: Reason
    mode: Mode
    policy_version: int
    because: ChangeView | None
    rules: dict = Field(
        {},
        description="the rules beyond names that could hide a version of this package then (its exempt and allow "
        "entries left out, only its own version deny entries); {} when none",
    )


class Interval(BaseModel):
    from_: Instant = Field(alias="from")
    to: Instant
    allowed: bool
    reason: Reason
    policy_version: int


class Timeline(BaseModel):
    language: Language
    name: str
    from_: Instant = Field(alias="from")
    to: Instant
    intervals: list[Interval]
    decisions: dict[str, int]


class EgressAnswer(BaseModel):
    allowed: bool
    reason: str
    host: str | None
    port: int | None
    id: str | None = None
    detail: str | None = None
    policy_version: int | None = Field(None, description="with `at`: the policy version in force then")


class TokenIssued(BaseModel):
    id: str
    token: str
    name: str
    role: Role
    workspace: str


class TokenInfo(BaseModel):
    id: str
    name: str
    role: Role
    issued_at: Instant
    issued_by: str
    revoked_at: Instant | None
    revoked_by: str | None


class TokenList(BaseModel):
    tokens: list[TokenInfo]


class FieldProblem(BaseModel):
    field: str
    message: str


class Problem(BaseModel):
    type: str
    title: str
    status: int
    detail: str
    errors: list[FieldProblem] = []
