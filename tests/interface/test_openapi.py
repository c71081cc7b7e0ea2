"""The published OpenAPI 3.1 document describes the running service: schemathesis generates
requests from it against a real server, and every answer must be a non-5xx whose status, media
type and body the document allows."""

from __future__ import annotations

import json
import urllib.request

import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


def test_the_document_is_openapi_3_1_and_covers_the_contract(live):
    with urllib.request.urlopen(live.url + "/api/v1/openapi.json") as reply:
        document = json.load(reply)
    assert document["openapi"] == "3.1.0"
    paths = set(document["paths"])
    for path in (
        "/policy",
        "/policy/changes",
        "/history",
        "/evaluate",
        "/test",
        "/decisions",
        "/decisions/{decision_id}",
        "/packages/{language}/{name}",
        "/tokens",
        "/tokens/{token_id}",
        "/runs",
        "/runs/{run_id}/decisions",
        "/allowlist/synthesis",
        "/egress/test",
    ):
        assert "/api/v1/workspaces/{ws}" + path in paths


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
