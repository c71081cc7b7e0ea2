"""Request and answer schemas of the requests, exceptions and impact endpoints
(docs/requests.md); the shared closed sets come from `interface.api.schemas`."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from domain.access import STATUS_FILTERS, STATUSES
from domain.decision import KNOWN_MALWARE, VERSION_UNKNOWN
from domain.limits import MAX_CLOSURE_NAMES, MAX_FILTER, MAX_NOTE, MAX_PAGE, MAX_TEXT
from domain.rules import REASONS
from interface.api.answers import AskLanguage, ExceptionView, Shadowed
from interface.api.schemas import Body, ContextValue, Draft, Instant, Language, Query, Source, Text

Note = Annotated[str, Field(max_length=MAX_NOTE)]


class RequestContext(Body):
    sandbox: ContextValue | None = None
    actor: ContextValue | None = None
    run: ContextValue | None = None
    source: Source | None = None
    skill: ContextValue | None = None


class RequestBody(Body):
    language: AskLanguage
    name: Annotated[
        str,
        Field(
            min_length=1, max_length=MAX_TEXT, description="Any spelling of the name, or a registry spec (pandas==2.1)"
        ),
    ]
    justification: Note = ""
    context: RequestContext | None = None


class Expiry(Body):
    expires_at: Annotated[str, Field(description="RFC 3339 instant the exception ends")] | None = None
    duration: Annotated[str, Field(max_length=40, description="ISO 8601 duration from now, e.g. P7D")] | None = None
    note: Note = ""
    lift_deny: bool = Field(
        False,
        description="Required for a deny-listed name: its deny entries stay on the list and are lifted for the "
        "exception's window only, denying it again when the exception ends or is revoked",
    )


class ApproveBody(Expiry):
    """Neither expires_at nor duration: the exception is permanent (until revoked)."""

    with_dependencies: bool = Field(
        False,
        description="Also grant, on the same terms and in the same save, every name of the package's dependency "
        "closure (POST /allowlist/closure) the policy does not allow yet; deny-listed ones need lift_deny",
    )
    expected_version: Annotated[int, Field(ge=0)] | None = Field(
        None,
        description="The policy version the approval was decided on (a closure's policy_version): if the policy "
        "has moved on since, 409 (422 for a version it never had) and nothing is granted",
    )
    expected_names: Annotated[list[Text], Field(max_length=MAX_CLOSURE_NAMES + 1)] | None = Field(
        None,
        description="The exact names the approval must grant, as granted lists them: the request's name and, with "
        "with_dependencies, each name of its closure the policy does not allow yet. If it would now grant others "
        "(or fewer), 409 naming the difference, and nothing is granted",
    )


class RejectBody(Body):
    note: Note = ""


class ExceptionBody(Expiry):
    language: AskLanguage
    name: Annotated[str, Field(min_length=1, max_length=MAX_TEXT)]


class ImpactBody(Body):
    draft: Draft
    days: Annotated[int, Field(ge=1, le=366)] = 30


class RequestsQuery(Query):
    status: Literal[STATUS_FILTERS] = "open"
    limit: Annotated[int, Field(ge=1, le=MAX_PAGE)] = 100
    cursor: Annotated[str, Field(max_length=MAX_FILTER)] | None = Field(
        None, description="the next_cursor of the page before: the requests after it, in the same order"
    )


class Asker(BaseModel):
    by: str
    first_at: Instant
    last_at: Instant
    asks: int
    justification: str
    context: dict


class GrantedException(BaseModel):
    id: str
    expires_at: Instant | None
    revoked_at: Instant | None
    lift_deny: bool = Field(
        description="Whether the exception lifts deny entries naming the package (its lifts_deny in GET "
        "/exceptions): false when lift_deny was asked for a name no entry denied"
    )


class RequestView(BaseModel):
    id: str
    language: AskLanguage
    name: str
    status: Literal[STATUSES]
    filed_at: Instant
    filed_by: str
    justification: str
    context: dict
    requesters: int = Field(description="How many distinct tokens asked for it")
    askers: list[Asker]
    decided_at: Instant | None
    decided_by: str | None
    note: str | None
    exception: GrantedException | None
    denied_last_30_days: int = Field(description="Recorded denials of this package in the last 30 days")
    joined: bool | None = Field(None, description="On filing: true if an open request was joined")
    granted: list[str] | None = Field(None, description="On approval: every name that was granted an exception")


class RequestList(BaseModel):
    requests: list[RequestView]
    next_cursor: str | None = Field(description="more requests follow: pass it as cursor for the next page")


class ExceptionList(BaseModel):
    exceptions: list[ExceptionView]


class ImpactPackage(BaseModel):
    language: AskLanguage
    name: str
    installs: int
    sandboxes: int


class ImpactVersion(BaseModel):
    language: Language
    name: str
    version: str | None = Field(description="null: a file whose name says no version")
    reason: Literal[(KNOWN_MALWARE, VERSION_UNKNOWN, *REASONS)] = Field(
        description="the first reason it is hidden (on the side that hides it): known malware, then the rules"
    )
    installs: int
    sandboxes: int


class ImpactAnswer(BaseModel):
    days: int
    from_: Annotated[str, Field(alias="from", description="First UTC day counted")]
    would_deny: list[ImpactPackage]
    would_allow: list[ImpactPackage]
    unchanged: int
    shadowed: list[Shadowed] = Field([], description="deny patterns of the draft that shadow allow entries")
    would_hide: list[ImpactVersion] | None = Field(
        None,
        description="when the saved policy or the draft has rules beyond names, or the draft changes known_malware: "
        "downloads of versions the draft would have hidden and the saved policy did not, judged with the facts "
        "known at the day's first fetch",
    )
    would_show: list[ImpactVersion] | None = Field(None, description="the reverse of would_hide")
