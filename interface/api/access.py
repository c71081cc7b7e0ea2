"""Requests, exceptions and impact (docs/requests.md), declared on the
shared `api` registry so they are authenticated, validated and published like every endpoint."""

from __future__ import annotations

from flask import Response

from application.formats import not_future, optional_instant
from domain.limits import REQUESTS_FILED_PER_MINUTE
from domain.token import ANY_ROLE
from interface.api.access_models import (
    ApproveBody,
    ExceptionBody,
    ExceptionList,
    ImpactAnswer,
    ImpactBody,
    RejectBody,
    RequestBody,
    RequestList,
    RequestsQuery,
    RequestView,
)
from interface.api.answers import ExceptionView
from interface.api.blueprint import W, api
from interface.api.routing import Rate
from interface.api.schemas import AtQuery
from interface.index.closure import request_closure
from interface.index.upstream import FETCH_FAILURES

R = W + "/requests"


def _own(caller: dict) -> str | None:
    """A sandbox token reads only the requests it asked for; other roles read them all."""
    return caller["id"] if caller["role"] == "sandbox" else None


@api.route(
    "POST",
    R,
    "Ask for a package (an open request for it is joined: 200)",
    role="sandbox",
    body=RequestBody,
    response=RequestView,
    status=201,
    also=(200,),
    rate=Rate("requests filed", REQUESTS_FILED_PER_MINUTE),
)
def post_request(gov, ws, caller, body):
    context = body.context.model_dump() if body.context else {}
    filed = gov.access.file_request(
        ws,
        body.language,
        body.name,
        body.justification,
        context,
        by=caller["name"],
        token_id=caller["id"],
        only_own=_own(caller) is not None,
    )
    return filed, 200 if filed["joined"] else 201


@api.route(
    "GET",
    R,
    "Requests by status, open first (a sandbox token: its own)",
    role=ANY_ROLE,
    query=RequestsQuery,
    response=RequestList,
)
def get_requests(gov, ws, caller, query):
    return gov.access.requests(ws, query.status, token_id=_own(caller), limit=query.limit, cursor=query.cursor)


@api.route(
    "GET", R + "/<request_id>", "One request (a sandbox token: only its own)", role=ANY_ROLE, response=RequestView
)
def get_request(gov, ws, caller, request_id):
    return gov.access.request(ws, request_id, token_id=_own(caller))


@api.route(
    "POST",
    R + "/<request_id>/approve",
    "Approve: grant an exception until expires_at, for duration, or permanently (with_dependencies: for its "
    "dependency closure too, in one save; expected_version and expected_names: only as the approver saw it)",
    role="admin",
    body=ApproveBody,
    response=RequestView,
    errors=(409, *FETCH_FAILURES),  # with_dependencies reads the closure from upstream
)
def approve_request(gov, ws, caller, request_id, body):
    return gov.access.approve_request(
        ws,
        request_id,
        by=caller["name"],
        expires_at=optional_instant(body.expires_at, "expires_at"),
        duration=body.duration,
        note=body.note,
        lift_deny=body.lift_deny,
        dependencies=closure_names(gov, ws, request_id) if body.with_dependencies else None,
        by_token=caller["id"],
        expected_version=body.expected_version,
        expected_names=body.expected_names,
    )


def closure_names(gov, ws: str, request_id: str) -> list[str]:
    return [n["name"] for n in request_closure(gov, ws, request_id)["names"]]


@api.route(
    "POST",
    R + "/<request_id>/reject",
    "Reject a request, with a note",
    role="admin",
    body=RejectBody,
    response=RequestView,
    errors=(409,),
)
def reject_request(gov, ws, caller, request_id, body):
    return gov.access.reject_request(ws, request_id, by=caller["name"], note=body.note)


@api.route(
    "GET",
    W + "/exceptions",
    "Exceptions in force now, or at `at`",
    role="auditor",
    query=AtQuery,
    response=ExceptionList,
)
def get_exceptions(gov, ws, caller, query):
    return gov.access.exceptions(ws, not_future(optional_instant(query.at, "at"), gov.clock()))


@api.route(
    "POST",
    W + "/exceptions",
    "Grant an exception without a request",
    role="admin",
    body=ExceptionBody,
    response=ExceptionView,
    status=201,
    errors=(409,),
)
def post_exception(gov, ws, caller, body):
    granted = gov.access.grant_exception(
        ws,
        body.language,
        body.name,
        by=caller["name"],
        expires_at=optional_instant(body.expires_at, "expires_at"),
        duration=body.duration,
        note=body.note,
        lift_deny=body.lift_deny,
        by_token=caller["id"],
    )
    return granted, 201


@api.route(
    "DELETE", W + "/exceptions/<exception_id>", "Revoke an exception at once", role="admin", status=204, errors=(409,)
)
def delete_exception(gov, ws, caller, exception_id):
    gov.access.revoke_exception(ws, exception_id, by=caller["name"], by_token=caller["id"])
    response = Response(status=204)
    del response.headers["Content-Type"]  # no body, so no media type
    return response


@api.route(
    "POST",
    W + "/impact",
    "How many recorded installs a draft would change, by package",
    role="admin",
    body=ImpactBody,
    response=ImpactAnswer,
)
def post_impact(gov, ws, caller, body):
    draft = body.draft.model_dump(exclude_unset=True)
    return ImpactAnswer.model_validate(gov.impacts.impact(ws, draft, body.days)).model_dump(by_alias=True)
