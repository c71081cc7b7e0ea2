"""The egress endpoints of API.md: evaluate (recorded, deployment allowlist) and test (explicit
allowlist, not recorded). Declared on the shared `api` registry, so they are authenticated,
validated and published in the OpenAPI document like every other endpoint."""

from __future__ import annotations

from interface import metrics
from interface.api.answers import EgressAnswer
from interface.api.views import W, api
from interface.api.schemas import EgressBody, EgressTestBody


@api.route("POST", W + "/egress/evaluate",
           "Judge and record a network destination the sandbox is about to reach (advisory: "
           "the enforcing egress proxy makes the same judgement on every connection)",
           role="sandbox", body=EgressBody, response=EgressAnswer, errors=(503,))
def post_egress_evaluate(gov, ws, caller, body):
    context = body.context.model_dump() if body.context else {}
    answer = gov.evaluate_egress(ws, body.target, body.resolved, context)
    metrics.count_decisions([{"kind": "egress", **answer}])
    return answer


@api.route("POST", W + "/egress/test",
           "Judge a destination against an explicit hostname allowlist (null = open); nothing is "
           "recorded", role="admin", body=EgressTestBody, response=EgressAnswer)
def post_egress_test(gov, ws, caller, body):
    return gov.test_egress(ws, body.target, body.resolved, body.hostname_allowlist)
