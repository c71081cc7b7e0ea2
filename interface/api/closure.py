"""Allowlist tools: the dependency closure of some specs (POST /allowlist/closure), declared on
the shared `api` registry so it is authenticated, validated and published like every endpoint."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from domain.limits import MAX_CLOSURE_FETCHES, MAX_CLOSURE_NAMES, MAX_SPECS
from interface.api.blueprint import W, api
from interface.api.schemas import Body, Language, Text
from interface.index.closure import fetchers
from interface.index.upstream import FETCH_FAILURES

STATUSES = ("allowed", "denied", "refused", "unlisted")


class ClosureBody(Body):
    language: Language
    specs: Annotated[list[Text], Field(min_length=1, max_length=MAX_SPECS)]


class ClosureName(BaseModel):
    name: str
    status: Literal[STATUSES] = Field(
        description="allowed (by the lists or an exception), denied (the deny list), unlisted (not allowed by the "
        "mode), refused (allowed, but the index hides every version a requirement on it could take)"
    )
    reason: str = Field(description="The reason an evaluation would record; for refused, the hiding rule's")
    pattern: str | None = Field(
        None,
        description="denied by a deny pattern: the pattern (no exception lifts one, as it denies other names too: "
        "remove or narrow it to approve the name)",
    )
    versions: list[str] = Field(
        description="The versions the resolver chose (npm may install several), among those the index shows"
    )
    requested: bool = Field(description="Named by the specs themselves")
    needed_by: list[str] = Field(description="The names in the closure that depend on it")


class Unresolved(BaseModel):
    name: str
    spec: str
    why: str


class ClosureAnswer(BaseModel):
    language: Language
    policy_version: int
    names: list[ClosureName]
    unresolved: list[Unresolved] = Field(description="Parts of the tree that could not be followed, and why")


@api.route(
    "POST",
    W + "/allowlist/closure",
    f"The dependency closure of some specs, each name marked against the policy (at most {MAX_CLOSURE_NAMES} "
    f"names and {MAX_CLOSURE_FETCHES} upstream fetches); nothing is recorded",
    role="admin",
    body=ClosureBody,
    response=ClosureAnswer,
    errors=FETCH_FAILURES,
)
def post_closure(gov, ws, caller, body):
    return gov.closures.closure(ws, body.language, body.specs, fetchers())
