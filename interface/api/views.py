"""The JSON API (v1). Views are thin: parse, call the application, shape the answer."""

from __future__ import annotations

from datetime import datetime

from flask import Response

from application import not_future, optional_bound, optional_instant, parse_bound, parse_day, until_now
from domain.errors import FieldError, InvalidInputError
from domain.token import role_allows
from interface import exports, metrics
from interface.api.answers import (
    DecisionsPage,
    DecisionView,
    EgressAnswer,
    EvaluateAnswer,
    HistoryPage,
    PackageAnswer,
    PolicyView,
    Timeline,
    TokenIssued,
    TokenList,
)
from interface.api.blueprint import W, api
from interface.api.schemas import (
    DecisionsQuery,
    EgressBody,
    EgressTestBody,
    EvaluateBody,
    PackageQuery,
    PageQuery,
    PolicyChanges,
    PolicyPut,
    PolicyQuery,
    TestBody,
    TokenBody,
)
from interface.problems import HTTPProblem


@api.route(
    "GET",
    W + "/policy",
    "The policy now, exactly as it stood at `at`, or right after change `version`",
    role="auditor",
    query=PolicyQuery,
    response=PolicyView,
)
def get_policy(gov, ws, caller, query):
    if query.version is not None:
        if query.at is not None:
            raise InvalidInputError("give at or version, not both", [FieldError("version", "must not come with at")])
        return gov.policy_version(ws, query.version)
    return gov.policy(ws, not_future(optional_instant(query.at, "at"), gov.clock()))


@api.route(
    "PUT",
    W + "/policy",
    "Save the complete desired state (records only the differences)",
    role="admin",
    body=PolicyPut,
    response=PolicyView,
    errors=(409,),
)
def put_policy(gov, ws, caller, body):
    desired = body.model_dump(include={"python", "node", "known_malware"}, exclude_unset=True)
    if body.egress is not None:
        desired["egress"] = {"allow": body.egress.allow}
    return gov.save_policy(
        ws, desired, by=caller["name"], note=body.note, expected_version=body.expected_version, by_token=caller["id"]
    )


@api.route(
    "POST",
    W + "/policy/changes",
    "Apply incremental changes atomically",
    role="admin",
    body=PolicyChanges,
    response=PolicyView,
    errors=(409,),
)
def post_changes(gov, ws, caller, body):
    changes = [c.model_dump() for c in body.changes]
    return gov.change_policy(
        ws, changes, by=caller["name"], note=body.note, expected_version=body.expected_version, by_token=caller["id"]
    )


@api.route(
    "GET", W + "/history", "Every policy change, oldest first", role="auditor", query=PageQuery, response=HistoryPage
)
def get_history(gov, ws, caller, query):
    start, end = optional_bound(query.from_, "from"), optional_bound(query.to, "to")
    return gov.audit.history(ws, start, end, query.limit, query.cursor)


@api.route(
    "POST",
    W + "/evaluate",
    "Judge and record what the sandbox is about to install",
    role="sandbox",
    body=EvaluateBody,
    response=EvaluateAnswer,
    errors=(409,),
    remembered=True,
)
def post_evaluate(gov, ws, caller, body):
    context = body.context.model_dump() if body.context else {}
    # The head version came with the token (one query), or the caller was remembered; either way
    # the recording checks that the version judged is still the head (application.callers).
    remembered = caller["id"] if caller["remembered"] else None
    answer = gov.evaluation.evaluate(
        ws, body.language, body.specs, body.command, context, caller["head_version"], remembered, caller["id"]
    )
    metrics.count_decisions(answer["decisions"])
    return answer


@api.route(
    "POST",
    W + "/test",
    "Judge against a draft or a past policy; nothing is recorded",
    role="auditor",
    body=TestBody,
    response=EvaluateAnswer,
)
def post_test(gov, ws, caller, body):
    if body.draft is not None and not role_allows(caller["role"], "admin"):
        raise HTTPProblem(403, "Forbidden", "testing a draft needs the admin role or above")
    context = body.context.model_dump() if body.context else {}
    draft = body.draft.model_dump(exclude_unset=True) if body.draft else None
    at = not_future(optional_instant(body.at, "at"), gov.clock())
    return gov.evaluation.test(ws, body.language, body.specs, body.command, context, draft=draft, at=at)


@api.route(
    "GET",
    W + "/decisions",
    "Recorded decisions, newest first (or the whole set as CSV/JSONL)",
    role="auditor",
    query=DecisionsQuery,
    response=DecisionsPage,
    media=("text/csv", "application/x-ndjson"),
    errors=(429,),  # an export holds a slot while it streams, a token at most its share (interface.index.bounds)
)
def get_decisions(gov, ws, caller, query):
    filters = {k: getattr(query, k) for k in ("language", "name", "allowed", "reason", "source", "sandbox", "kind")}
    start, end = optional_bound(query.from_, "from"), optional_bound(query.to, "to")
    if query.chain and query.format != "jsonl":
        raise InvalidInputError("chain links come with format=jsonl only", [FieldError("chain", "needs format=jsonl")])
    if query.format == "json":
        return gov.audit.decisions(ws, filters, start, end, query.limit, query.cursor)
    rows = gov.audit.export_decisions(ws, filters, start, end)
    if query.chain:
        rows = gov.chain.with_links(ws, rows)
    return exports.stream(rows, query.format, f"decisions-{ws}")


@api.route("GET", W + "/decisions/<decision_id>", "One recorded decision", role="auditor", response=DecisionView)
def get_decision(gov, ws, caller, decision_id):
    return gov.audit.decision(ws, decision_id)


@api.route(
    "GET",
    W + "/packages/<language>/<path:name>",
    "Was this package allowed at `at` (default now)? Or its timeline `on` a day / `from`-`to`",
    role="auditor",
    query=PackageQuery,
    response=(PackageAnswer, Timeline),
)
def get_package(gov, ws, caller, language, name, query):
    now = gov.clock()
    period = _period(query, now)
    if period is None:
        return gov.audit.package_at(ws, language, name, not_future(optional_instant(query.at, "at"), now) or now)
    return Timeline.model_validate(gov.audit.package_timeline(ws, language, name, *period)).model_dump(by_alias=True)


def _period(query, now: datetime) -> tuple[datetime, datetime] | None:
    """The timeline's period, if one is asked for, up to `now` (`until_now`)."""
    if query.on is None and query.from_ is None and query.to is None:
        return None
    if query.at is not None or (query.on is not None and (query.from_ or query.to)):
        raise InvalidInputError("give at, on, or from and to", [FieldError("at", "use one of at, on, from/to")])
    if query.on is not None:
        return until_now(*parse_day(query.on, "on"), now, "on")
    if query.from_ is None or query.to is None:
        missing = "from" if query.from_ is None else "to"
        raise InvalidInputError(
            f"{missing} is required for a period", [FieldError(missing, "is required with from/to")]
        )
    return until_now(parse_bound(query.from_, "from"), parse_bound(query.to, "to", end=True), now, "from")


@api.route(
    "POST",
    W + "/tokens",
    "Issue a token (its secret is shown once)",
    role="owner",
    body=TokenBody,
    response=TokenIssued,
    status=201,
    errors=(409,),
)
def post_token(gov, ws, caller, body):
    return gov.issue_token(ws, body.name, body.role, by=caller["name"]), 201


@api.route("GET", W + "/tokens", "The workspace's tokens, without secrets", role="owner", response=TokenList)
def get_tokens(gov, ws, caller):
    return {"tokens": gov.list_tokens(ws)}


@api.route(
    "DELETE",
    W + "/tokens/<token_id>",
    "Revoke a token at once (not the last owner token)",
    role="owner",
    status=204,
    errors=(409,),
)
def delete_token(gov, ws, caller, token_id):
    gov.revoke_token(ws, token_id, by=caller["name"])
    response = Response(status=204)
    del response.headers["Content-Type"]  # no body, so no media type
    return response


# Egress (docs/egress.md): evaluate is recorded under the deployment allowlist; test takes an
# explicit allowlist and records nothing.
@api.route(
    "POST",
    W + "/egress/evaluate",
    "Judge and record a network destination the sandbox is about to reach (advisory: "
    "the enforcing egress proxy makes the same judgement on every connection)",
    role="sandbox",
    body=EgressBody,
    response=EgressAnswer,
)
def post_egress_evaluate(gov, ws, caller, body):
    context = body.context.model_dump() if body.context else {}
    answer = gov.egress.evaluate_egress(ws, body.target, body.resolved, context, token=caller["id"])
    metrics.count_decisions([{"kind": "egress", **answer}])
    return answer


@api.route(
    "POST",
    W + "/egress/test",
    "Judge a destination against an explicit hostname allowlist (null = open), or as it would have been "
    "judged at `at` from the record; nothing is recorded",
    role="admin",
    body=EgressTestBody,
    response=EgressAnswer,
)
def post_egress_test(gov, ws, caller, body):
    at = not_future(optional_instant(body.at, "at"), gov.clock())
    given = "hostname_allowlist" in body.model_fields_set
    if (at is None) != given:
        raise InvalidInputError(
            "give hostname_allowlist (null = open) or at, one of them",
            [FieldError("hostname_allowlist", "is required unless at is given, and must not come with at")],
        )
    context = body.context.model_dump() if body.context else {}
    return gov.egress.test_egress(ws, body.target, body.resolved, body.hostname_allowlist, at, context)
