"""Request schemas and the closed sets they share with the answers (`interface.api.answers`): they
validate requests and generate the OpenAPI document, so the contract cannot drift from what is
enforced."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, PlainValidator
from pydantic_core import PydanticCustomError

from application.imports import FORMATS as IMPORT_FORMATS
from domain.decision import DECISION_KINDS, REASONS, SERVICE_SOURCES
from domain.edits import NULL_REFUSED
from domain.egress.workspace import EGRESS, EGRESS_MODES
from domain.limits import (
    MAX_ALLOWLIST,
    MAX_CHANGES,
    MAX_FILTER,
    MAX_IMPORT_NAMES,
    MAX_LABEL,
    MAX_LIST_ENTRIES,
    MAX_NOTE,
    MAX_PAGE,
    MAX_RESOLVED,
    MAX_SPECS,
    MAX_TEXT,
    MAX_VERSION_DENIES,
    MAX_VERSION_DENY_TEXT,
)
from domain.names import skeleton
from domain.policy import LANGUAGES, LISTS, MODES
from domain.rules import ACTIONS as RULE_ACTIONS
from domain.text import CONTEXT_VALUE_RULE
from domain.token import ROLES

# The closed sets come from the domain, so the schema cannot list a value the rules don't know.
Language = Literal[LANGUAGES]
Mode = Literal[MODES]
ListName = Literal[LISTS]
Role = Literal[ROLES]
# What a change, an exception or a request is about: a language's packages, or egress hosts.
# One Literal, not a union of two: a union reports each member's error ("should be 'python' or
# 'node'" beside "should be 'egress'"), as if two rules said different things.
Subject = Literal[(*LANGUAGES, EGRESS)]
Text = Annotated[str, Field(max_length=MAX_TEXT)]


def _as_sent(value: object) -> object:
    return value


def read_by_domain(shape: object) -> PlainValidator:
    """A value the layers below read themselves (a policy's in `domain.edits` and
    `domain.rules.read`, OSV records in `application.advisories`), naming every bad field with
    the rule it breaks, a wrong type among them: any JSON is let through to them, and `shape`
    only documents what is taken. A schema refusal would come first and alone (`"age": 3` had
    hidden every other bad field of the body; `[]` of records was named `dict[any,any]`)."""
    return PlainValidator(_as_sent, json_schema_input_type=shape)


Entries = Annotated[
    Any,
    read_by_domain(str | Annotated[list[Text], Field(max_length=MAX_LIST_ENTRIES)]),
    Field(
        description="Entries separated by newlines and/or commas, or an array of entries. "
        "Version constraints, extras and markers are stripped. "
        f"A list holds at most {MAX_LIST_ENTRIES} entries."
    ),
]
Reason = Literal[REASONS]
Instant = Annotated[str, Field(json_schema_extra={"format": "date-time"})]  # RFC 3339, UTC, `Z`
# What a point-in-time question's `at` may be (`application.formats.not_future`).
ASKED_AT = "RFC 3339 instant, not later than the request (a later one is 422: its answer is not known yet)"
Kind = Literal[DECISION_KINDS]


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


_RESERVED = f"must not be {' or '.join(SERVICE_SOURCES)}, the labels of the service's own recordings"


_RESERVED_LOOKS = frozenset(skeleton(s) for s in SERVICE_SOURCES)


def _callers_source(value: str) -> str:
    """A caller's source label, never one the service records its own decisions under, nor one
    that looks like it (however cased, spaced or spelled with look-alikes: domain.names), as an
    auditor reading the record would take it for the service's."""
    if skeleton(value) in _RESERVED_LOOKS:
        raise PydanticCustomError("reserved_source", _RESERVED)
    return value


# A value of a caller's context, recorded with its decisions as sent (`domain.text.check_context`).
ContextValue = Annotated[str, Field(max_length=MAX_LABEL, description=f"one line; {CONTEXT_VALUE_RULE}")]
# What a caller says its request came from: `context.source`, in every context a caller sends.
Source = Annotated[
    str,
    Field(max_length=MAX_LABEL, description=f"free text on one line; {CONTEXT_VALUE_RULE}; {_RESERVED}"),
    AfterValidator(_callers_source),
]


class Context(Body):
    sandbox: ContextValue | None = None
    source: Source | None = None
    skill: ContextValue | None = None
    actor: ContextValue | None = None


RuleAction = Annotated[
    Literal[RULE_ACTIONS], Field(description="enforce: hide what the rule catches; monitor: serve it and record")
]


class MinReleaseAgeRule(Body):
    age: Annotated[str, Field(max_length=64, description="ISO 8601 duration in weeks, days or time, such as P3D")]
    exempt: Entries | None = Field(None, description="names (or patterns) the rule never hides")
    action: RuleAction = "enforce"


class VersionsDenyRule(Body):
    entries: Annotated[
        str
        | Annotated[
            list[Annotated[str, Field(max_length=MAX_VERSION_DENY_TEXT)]], Field(max_length=MAX_VERSION_DENIES)
        ],
        Field(
            description="name and range: python 'requests<2.20' (PEP 440), node 'left-pad@<1.3' (node-semver); "
            f"at most {MAX_VERSION_DENIES}"
        ),
    ]
    action: RuleAction = "enforce"


class NamesAllowedRule(Body):
    allow: Entries | None = Field(None, description="names (or patterns) the rule lets through")
    action: RuleAction = "enforce"


def _not_null(what: str) -> BeforeValidator:
    """A field of a Save (or draft) that may be left out, keeping its saved value, but never given
    as null (`domain.edits.NULL_REFUSED` says why, and what to send)."""

    def refused(value: object) -> object:
        if value is None:
            raise PydanticCustomError("null_refused", NULL_REFUSED[what])
        return value

    return BeforeValidator(refused)


class RulesDraft(Body):
    """Rules beyond names; a rule absent or null is off. install_scripts is node's, sdists python's."""

    min_release_age: MinReleaseAgeRule | None = None
    versions_deny: VersionsDenyRule | None = None
    install_scripts: NamesAllowedRule | None = None
    sdists: NamesAllowedRule | None = None


Rules = Annotated[Any, read_by_domain(RulesDraft)]
KnownMalware = Annotated[Any, read_by_domain(RuleAction)]


class LanguageDraft(Body):
    """A language's desired state: what is left out keeps its saved value; null is refused (by
    the domain, which names it with every other bad field)."""

    mode: Annotated[Any, read_by_domain(Mode)] = None
    allow: Entries = None
    deny: Entries = None
    rules: Rules = Field(None, description="the language's rules beyond names, all of them (absent: unchanged)")


class Draft(Body):
    python: Annotated[LanguageDraft, _not_null("language")] = None
    node: Annotated[LanguageDraft, _not_null("language")] = None
    known_malware: KnownMalware = Field(None, description="what imported known-malware advisories do here")


class PolicyPut(Draft):
    egress: Annotated[EgressDraft, _not_null("egress")] = None
    expected_version: Annotated[int, Field(ge=0)] | None = None
    note: Annotated[str, Field(max_length=MAX_NOTE)] = ""


class SwitchMode(Body):
    action: Literal["switch-mode"]
    language: Subject
    mode: Annotated[Any, read_by_domain(Mode | Literal[EGRESS_MODES])] = Field(description="egress: open or allowlist")


class EditEntries(Body):
    action: Literal["add", "remove"]
    language: Subject
    list: ListName = Field(description="egress: allow")
    entries: Entries


class ImportEntries(Body):
    """A pasted requirements file or lockfile, added to a list as the names it lists."""

    action: Literal["import"]
    language: Language
    list: ListName
    format: Literal[tuple(f for formats in IMPORT_FORMATS.values() for f in formats)] = Field(
        description="requirements.txt and package.json: their direct dependencies; lockfiles: every package. "
        f"At most {MAX_IMPORT_NAMES} names."
    )
    content: Annotated[str, Field(description="The file's text (the whole body is at most 1 MiB)")]


class SetRules(Body):
    """The language's rules beyond names become exactly these."""

    action: Literal["set-rules"]
    language: Language
    rules: Rules


class SetKnownMalware(Body):
    action: Literal["set-known-malware"]
    known_malware: KnownMalware


class PolicyChanges(Body):
    expected_version: Annotated[int, Field(ge=0)] | None = None
    note: Annotated[str, Field(max_length=MAX_NOTE)] = ""
    changes: Annotated[
        list[
            Annotated[
                SwitchMode | EditEntries | ImportEntries | SetRules | SetKnownMalware, Field(discriminator="action")
            ]
        ],
        Field(min_length=1, max_length=MAX_CHANGES),
    ]


class EvaluateBody(Body):
    language: Language | None = None
    specs: Annotated[list[Text], Field(min_length=1, max_length=MAX_SPECS)] | None = None
    command: Annotated[list[Text], Field(min_length=1, max_length=MAX_SPECS)] | None = None
    context: Context | None = None
    # Exactly one of specs/command, and language with specs: checked by the application, which
    # names the field (the CLI and the console share that check).


class TestBody(EvaluateBody):
    draft: Draft | None = None
    at: Annotated[str, Field(description=f"{ASKED_AT}; test against the policy as it was then")] | None = None


class EgressBody(Body):
    target: Annotated[str, Field(max_length=MAX_TEXT)]
    resolved: Annotated[list[Annotated[str, Field(max_length=100)]], Field(max_length=MAX_RESOLVED)] = []
    context: Context | None = None


HostEntries = Annotated[list[Annotated[str, Field(max_length=300)]], Field(max_length=MAX_ALLOWLIST)]


class EgressTestBody(EgressBody):
    hostname_allowlist: HostEntries | None = Field(
        None, description="required unless `at` is given; null = open egress"
    )
    at: Instant | None = Field(
        None,
        description=f"{ASKED_AT}; was the target reachable then, under the deployment's rules and the "
        "workspace's egress allowlist as recorded at that instant (without hostname_allowlist)",
    )


class EgressDraft(Body):
    allow: HostEntries | None = Field(
        description="the workspace's egress allowlist (`name` or `*.name`), narrowing the deployment's; "
        "null = no narrowing"
    )


class TokenBody(Body):
    name: Annotated[str, Field(min_length=1, max_length=MAX_LABEL)]
    role: Role


# -- query strings (strings arrive; numbers and booleans are converted) --------------------------
class Query(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class AtQuery(Query):
    at: str | None = Field(None, description=f"{ASKED_AT}; default now")


class PolicyQuery(AtQuery):
    version: Annotated[int, Field(ge=0, le=2**53)] | None = None  # the state right after that version


class PageQuery(Query):
    from_: str | None = Field(None, alias="from")
    to: str | None = None
    limit: Annotated[int, Field(ge=1, le=MAX_PAGE)] = 100
    cursor: Annotated[str, Field(max_length=MAX_FILTER)] | None = None


class DecisionsQuery(PageQuery):
    language: Language | None = None
    name: Text | None = None
    allowed: bool | None = None
    reason: Annotated[str, Field(max_length=100)] | None = None
    source: Annotated[str, Field(max_length=MAX_LABEL)] | None = None
    sandbox: Annotated[str, Field(max_length=MAX_LABEL)] | None = None
    kind: Kind | None = None
    format: Literal["json", "csv", "jsonl"] = "json"
    chain: bool = Field(
        False,
        description="format=jsonl only: each decision with its chain link, then the "
        "links up to the head (README: Audit integrity)",
    )


class PackageQuery(Query):
    at: str | None = Field(None, description=f"{ASKED_AT}; default now")
    on: str | None = Field(None, description="a date: the timeline of that day (UTC), up to now if it is today")
    from_: str | None = Field(None, alias="from")
    to: str | None = None
