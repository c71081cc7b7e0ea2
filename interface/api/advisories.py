"""Known-malware advisories and names the upstream does not have (see docs/advisories.md).

`POST /workspaces/{ws}/advisories` takes OSV records for the whole deployment: every workspace
refuses the versions they affect. The API's tokens all belong to a workspace, so the route names
one: any workspace's owner may import.
"""

from __future__ import annotations

from typing import Annotated, Any

from flask import request
from pydantic import BaseModel, Field, RootModel

from application import optional_bound
from application.advisories import MAX_RECORDS, MAX_UNKNOWN_DAYS
from interface.api.blueprint import W, api
from interface.api.schemas import Instant, Query, read_by_domain

REVISION_HEADER = "X-Feed-Revision"


class OsvRecords(
    RootModel[Annotated[Any, read_by_domain(Annotated[list[dict], Field(min_length=1, max_length=MAX_RECORDS)] | dict)]]
):
    """One OSV record (a JSON object), or a list of them."""


class Imported(BaseModel):
    revision: str = Field(description="the feed's revision: the one given, or sha256 of the records sent")
    records: int
    packages: int = Field(description="affected PyPI and npm packages the records name")


class Exposure(BaseModel):
    name: str
    version: str
    run: str | None
    sandbox: str | None
    decision: str
    at: Instant


class ExposureAnswer(BaseModel):
    advisory: str
    exposures: list[Exposure]
    truncated: bool


class UnknownName(BaseModel):
    name: str
    language: str
    first_asked: Instant
    count: int
    sandboxes: list[str]
    now_exists: bool = Field(
        description="the index has served the name since it was last not found (the upstream is not asked here)"
    )


class UnknownNames(BaseModel):
    names: list[UnknownName]
    truncated: bool


class PeriodQuery(Query):
    from_: str | None = Field(None, alias="from")
    to: str | None = None


class DaysQuery(Query):
    days: Annotated[int, Field(ge=1, le=MAX_UNKNOWN_DAYS)] = 30


@api.route(
    "POST",
    W + "/advisories",
    "Import OSV records (one, or a list) for every workspace; the feed's revision in X-Feed-Revision",
    role="owner",
    body=OsvRecords,
    response=Imported,
    status=201,
)
def post_advisories(gov, ws, caller, body):
    return _imported(gov, caller, body)


@api.route(
    "POST",
    "/advisories",
    "The same import at the deployment's own path (advisories apply to every workspace): an owner token of any",
    role="owner",
    body=OsvRecords,
    response=Imported,
    status=201,
)
def post_deployment_advisories(gov, caller, body):
    return _imported(gov, caller, body)


def _imported(gov, caller, body):
    records = body.root if isinstance(body.root, list) else [body.root]
    revision = request.headers.get(REVISION_HEADER)
    return gov.advisories.import_records(records, by=caller["name"], revision=revision), 201


@api.route(
    "GET",
    W + "/advisories/<advisory>/exposure",
    "Every recorded fetch of a version the advisory affects, in the period",
    role="auditor",
    query=PeriodQuery,
    response=ExposureAnswer,
)
def get_exposure(gov, ws, caller, advisory, query):
    start, end = optional_bound(query.from_, "from"), optional_bound(query.to, "to")
    return gov.advisory_exposure(ws, advisory, start, end)


@api.route(
    "GET",
    W + "/unknown-names",
    "Names clients asked the index for that its upstream does not have",
    role="auditor",
    query=DaysQuery,
    response=UnknownNames,
)
def get_unknown_names(gov, ws, caller, query):
    return gov.unknown_names(ws, query.days)
