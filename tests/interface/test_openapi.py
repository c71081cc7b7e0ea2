"""The published OpenAPI 3.1 document describes the running service: schemathesis generates
requests from it against a real server, and every answer must be a non-5xx whose status, media
type and body the document allows."""

from __future__ import annotations

import json
import re
import urllib.request

import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from tests.support.index_live import index_live_env  # noqa: F401 - fixture live_env

ROUTE_PARAMETER = re.compile(r"<(?:[^:<>]+:)?([^<>]+)>")

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
# `live` reads the fixture upstreams (index_live_env): the endpoints that resolve dependency
# closures fetch from them, never from a public registry.


def registered_operations(app) -> set[tuple[str, str]]:
    """(method, OpenAPI path) of every route the app answers under /api/v1, and the operations
    endpoints the document describes too; `<converter:name>` becomes `{name}`."""
    return {
        (method.lower(), ROUTE_PARAMETER.sub(r"{\1}", rule.rule))
        for rule in app.url_map.iter_rules()
        if rule.rule.startswith("/api/v1/") or rule.endpoint.startswith("operations.")
        for method in rule.methods - {"HEAD", "OPTIONS"}
    }


def documented_operations(document: dict) -> set[tuple[str, str]]:
    return {(method, path) for path, operations in document["paths"].items() for method in operations}


def test_the_document_is_openapi_3_1_and_describes_every_registered_route_and_no_other(live):
    with urllib.request.urlopen(live.url + "/api/v1/openapi.json") as reply:
        document = json.load(reply)
    assert document["openapi"] == "3.1.0"
    registered, documented = registered_operations(live.app), documented_operations(document)
    assert len(registered) > 30  # the url map was read, not an empty filter
    assert registered - documented == set(), "routes the document does not describe"
    assert documented - registered == set(), "operations the document describes that no route answers"


def test_the_live_service_conforms_to_its_document(live):
    with urllib.request.urlopen(live.url + "/api/v1/openapi.json") as reply:
        schema = schemathesis.openapi.from_dict(json.load(reply))
    headers = {"Authorization": f"Bearer {live.tokens['owner']}"}
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 12
    calls = []
    for operation in operations:

        @settings(max_examples=25, deadline=None, database=None, suppress_health_check=list(HealthCheck))
        @given(case=operation.as_strategy())
        def conforms(case):
            case.path_parameters = {**(case.path_parameters or {}), "ws": "acme"}
            case.call_and_validate(base_url=live.url, headers=headers, checks=CHECKS)
            calls.append(case.operation.label)

        conforms()
    assert len(set(calls)) == len(operations) and len(calls) > 5 * len(operations)


def test_every_refusal_a_route_answers_is_in_its_declared_responses(live):
    """schemathesis answers with a well-formed owner token and a reachable store; these refusals
    come otherwise: each must still be a status the operation declares."""
    with urllib.request.urlopen(live.url + "/api/v1/openapi.json") as reply:
        document = json.load(reply)
    # A token is checked against the store: an authenticated operation may answer 503 (a locked
    # or unreachable store, a clock out of step with it).
    authenticated = [
        (method, path, operation)
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
        if operation["security"]
    ]
    assert len(authenticated) > 30
    undeclared = [
        f"{method} {path}" for method, path, operation in authenticated if "503" not in operation["responses"]
    ]
    assert undeclared == [], "authenticated operations that do not declare 503"
    # A rated route's bucket is spent before the token is read: a bad token empties its own.
    for path in ("/api/v1/workspaces/{ws}/runs", "/api/v1/workspaces/{ws}/requests"):
        url = path.replace("{ws}", "acme")
        while (answer := live.call("POST", url, "not-a-token", {})).status == 401:
            pass
        assert answer.status == 429
        assert "429" in document["paths"][path]["post"]["responses"], path
