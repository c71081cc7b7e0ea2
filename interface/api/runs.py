"""Runs (docs/index-runs.md): one install through the index, with its own index-only token.

`POST /runs` may be called by the roles that may evaluate (sandbox, admin, owner; never an
auditor, whose token never adds to the record); `GET /runs/{id}/decisions` by auditor+, and by a
sandbox token for the runs it started; `DELETE /runs/{id}` (the gate calls it when the install is
over) by the token that started the run, and by admin+.
"""

from __future__ import annotations

from typing import Annotated

from flask import Response, url_for
from pydantic import BaseModel, Field

from application.index import DEFAULT_RUN_SECONDS, MAX_RUN_SECONDS
from domain.limits import MAX_RUN_DECISIONS, RUN_STARTS_PER_MINUTE
from domain.token import ANY_ROLE
from interface.api.answers import DecisionView
from interface.api.blueprint import W, api
from interface.api.routing import Rate
from interface.api.schemas import Body, Context, Instant, Query


class RunBody(Body):
    context: Context | None = None
    ttl_seconds: Annotated[int, Field(ge=60, le=MAX_RUN_SECONDS)] | None = Field(
        None, description=f"how long the run's token works (default {DEFAULT_RUN_SECONDS} s)"
    )


class RunStarted(BaseModel):
    id: str
    token: str = Field(description="the run's secret, shown once: it may only read the package index")
    expires_at: Instant
    pypi: str = Field(description="the simple-index URL for pip (`--index-url`) and uv (`--default-index`)")
    npm: str = Field(description="the registry URL for npm and pnpm (`--registry`)")


class RunView(BaseModel):
    id: str
    started_at: Instant
    expires_at: Instant
    started_by: str
    context: dict


class RunDecisionsQuery(Query):
    limit: Annotated[int, Field(ge=1, le=MAX_RUN_DECISIONS)] = MAX_RUN_DECISIONS


class RunDecisions(BaseModel):
    run: RunView
    allowed: bool = Field(description="true when the run has no denied decision")
    decisions: list[DecisionView] = Field(
        description="its project denials first, then its other refusals, then its allows, each in the order made"
    )
    truncated: bool = Field(
        description=f"true when the run has more decisions than listed (`limit`, default {MAX_RUN_DECISIONS})"
    )


@api.route(
    "POST",
    W + "/runs",
    "Start a run: a short-lived token that may only read the package index",
    role="sandbox",
    body=RunBody,
    response=RunStarted,
    status=201,
    rate=Rate("runs started", RUN_STARTS_PER_MINUTE),
)
def post_run(gov, ws, caller, body):
    context = body.context.model_dump(exclude_none=True) if body.context else {}
    run = gov.index.runs.start(ws, caller, context, body.ttl_seconds)
    run["pypi"] = url_for("pypi_index.root", ws=ws, _external=True)
    run["npm"] = url_for("npm_index.package", ws=ws, _external=True)
    return run, 201


@api.route(
    "DELETE",
    W + "/runs/<run_id>",
    "End a run at once: its token reads the package index no more (ending is final)",
    role="sandbox",
    status=204,
)
def delete_run(gov, ws, caller, run_id):
    gov.index.runs.end(ws, run_id, caller)  # a sandbox token: only the runs it started
    response = Response(status=204)
    del response.headers["Content-Type"]  # no body, so no media type
    return response


@api.route(
    "GET",
    W + "/runs/<run_id>/decisions",
    "One run's decisions, project denials first",
    role=ANY_ROLE,
    query=RunDecisionsQuery,
    response=RunDecisions,
)
def get_run_decisions(gov, ws, caller, run_id, query):
    return gov.index.runs.decisions(ws, run_id, caller, query.limit)  # a sandbox token: only the runs it started
