"""Request and response schemas: they validate requests and generate the OpenAPI document.

One definition serves both, so the published contract cannot drift from what is enforced.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from domain.decision import REASONS
from domain.policy import LANGUAGES, LISTS, MODES
from domain.specs import KINDS
from domain.token import ROLES

# The closed sets come from the domain, so the schema cannot list a value the rules don't know.
Language = Literal[LANGUAGES]
Mode = Literal[MODES]
ListName = Literal[LISTS]
Role = Literal[ROLES]
Text = Annotated[str, Field(max_length=4096)]
Entries = Annotated[
    str | list[Text],
    Field(description="Entries separated by newlines and/or commas, or an array of entries. "
                      "Version constraints, extras and markers are stripped."),
]
Reason = Literal[REASONS]
Instant = Annotated[str, Field(json_schema_extra={"format": "date-time"})]  # RFC 3339, UTC, `Z`
Kind = Literal[(*KINDS, "egress")]


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class Context(Body):
    sandbox: Annotated[str, Field(max_length=200)] | None = None
    source: Annotated[str, Field(max_length=200)] | None = None
    skill: Annotated[str, Field(max_length=200)] | None = None
    actor: Annotated[str, Field(max_length=200)] | None = None


class LanguageDraft(Body):
    mode: Mode | None = None
    allow: Entries | None = None
    deny: Entries | None = None


class Draft(Body):
    python: LanguageDraft | None = None
    node: LanguageDraft | None = None


class PolicyPut(Draft):
    expected_version: Annotated[int, Field(ge=0)] | None = None
    note: Annotated[str, Field(max_length=2000)] = ""


class SwitchMode(Body):
    action: Literal["switch-mode"]
    language: Language
    mode: Mode


class EditEntries(Body):
    action: Literal["add", "remove"]
    language: Language
    list: ListName
    entries: Entries


class PolicyChanges(Body):
    expected_version: Annotated[int, Field(ge=0)] | None = None
    note: Annotated[str, Field(max_length=2000)] = ""
    changes: Annotated[list[Annotated[SwitchMode | EditEntries, Field(discriminator="action")]],
                       Field(min_length=1, max_length=1000)]


class EvaluateBody(Body):
    language: Language | None = None
    specs: Annotated[list[Text], Field(min_length=1, max_length=500)] | None = None
    command: Annotated[list[Text], Field(min_length=1, max_length=500)] | None = None
    context: Context | None = None
    # Exactly one of specs/command, and language with specs: checked by the application, which
    # names the field (the CLI and the console share that check).


class TestBody(EvaluateBody):
    draft: Draft | None = None
    at: Annotated[str, Field(description="RFC 3339 instant: test against the policy as it was")] | None = None


class EgressBody(Body):
    target: Annotated[str, Field(max_length=4096)]
    resolved: Annotated[list[Annotated[str, Field(max_length=100)]], Field(max_length=64)] = []
    context: Context | None = None


class EgressTestBody(EgressBody):
    hostname_allowlist: Annotated[list[Annotated[str, Field(max_length=300)]], Field(max_length=10000)] | None


class TokenBody(Body):
    name: Annotated[str, Field(min_length=1, max_length=200)]
    role: Role


# -- query strings (strings arrive; numbers and booleans are converted) --------------------------
class Query(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class AtQuery(Query):
    at: str | None = None


class PageQuery(Query):
    from_: str | None = Field(None, alias="from")
    to: str | None = None
    limit: Annotated[int, Field(ge=1, le=1000)] = 100
    cursor: Annotated[str, Field(max_length=500)] | None = None


class DecisionsQuery(PageQuery):
    language: Language | None = None
    name: Annotated[str, Field(max_length=500)] | None = None
    allowed: bool | None = None
    reason: Annotated[str, Field(max_length=100)] | None = None
    source: Annotated[str, Field(max_length=200)] | None = None
    sandbox: Annotated[str, Field(max_length=200)] | None = None
    kind: Kind | None = None
    format: Literal["json", "csv", "jsonl"] = "json"


class PackageQuery(Query):
    at: str | None = None
    on: str | None = None
    from_: str | None = Field(None, alias="from")
    to: str | None = None


# -- responses ---------------------------------------------------------------------------------
class LanguagePolicy(BaseModel):
    mode: Mode
    allow: list[str]
    deny: list[str]


class PolicyView(BaseModel):
    workspace: str
    version: int
    at: Instant | None
    python: LanguagePolicy
    node: LanguagePolicy
    changed_at: Instant | None
    changed_by: str | None


class ChangeView(BaseModel):
    version: int
    at: Instant
    by: str
    note: str
    type: Literal["mode-switched", "entry-added", "entry-removed"]
    language: Language
    mode: Mode | None = None
    list: ListName | None = None
    name: str | None = None


class HistoryPage(BaseModel):
    changes: list[ChangeView]
    next_cursor: str | None


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
    message: str | None = None
    resolved: list[str] | None = Field(None, description="egress decisions: the addresses judged")
    port: int | None = Field(None, description="egress decisions: the port of the target")


class EvaluateAnswer(BaseModel):
    allowed: bool
    policy_version: int
    decisions: list[DecisionView]


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
