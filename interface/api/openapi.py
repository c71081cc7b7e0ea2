"""The OpenAPI 3.1 document, built from the endpoint declarations (`routing.Api`) and pydantic."""

from __future__ import annotations

import re

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from interface.api.answers import Problem
from interface.api.routing import Api, Endpoint

_PARAM = re.compile(r"<(?:[a-z]+:)?([a-z_]+)>")


def openapi_document(apis: list[Api], title: str, version: str) -> dict:
    """An OpenAPI 3.1 document from the endpoint declarations (schemas from pydantic)."""
    endpoints = [(api.prefix, e) for api in apis for e in api.endpoints]
    models = {m for _, e in endpoints for m in (e.body, *_responses_of(e)) if m is not None}
    models.add(Problem)
    keyed = [(m, "validation") for m in sorted(models, key=lambda m: m.__name__)]
    _, defs = models_json_schema(keyed, ref_template="#/components/schemas/{model}", by_alias=True)
    paths: dict = {}
    for prefix, e in endpoints:
        path = prefix + _PARAM.sub(r"{\1}", e.rule)
        paths.setdefault(path, {})[e.method.lower()] = _operation(e)
    return {
        "openapi": "3.1.0",
        "info": {"title": title, "version": version},
        "paths": paths,
        "components": {
            "schemas": defs.get("$defs", {}),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }


def _operation(e: Endpoint) -> dict:
    plain = _PARAM.sub(lambda m: m.group(1), e.rule).strip("/").replace("/", "_").replace("-", "_")
    op: dict = {"summary": e.summary, "operationId": f"{e.method.lower()}_{plain}"}
    params = [
        {"name": n, "in": "path", "required": True, "schema": {"type": "string", "minLength": 1}}
        for n in _PARAM.findall(e.rule)
    ]
    if e.query is not None:
        params += _query_parameters(e.query)
    if params:
        op["parameters"] = params
    if e.body is not None:
        op["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{e.body.__name__}"}}},
        }
    op["responses"] = _responses(e)
    op["security"] = [{"bearer": []}] if e.role else []
    return op


def _responses_of(e: Endpoint) -> tuple:
    return e.response if isinstance(e.response, tuple) else (e.response,) if e.response else ()


def _query_parameters(model: type[BaseModel]) -> list[dict]:
    schema = model.model_json_schema(by_alias=True)
    return [
        {"name": name, "in": "query", "required": False, "schema": prop}
        for name, prop in schema.get("properties", {}).items()
    ]


def _responses(e: Endpoint) -> dict:
    problem = {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}
    ok: dict = {"description": "OK"}
    content = {}
    refs = [{"$ref": f"#/components/schemas/{m.__name__}"} for m in _responses_of(e)]
    if refs:
        content["application/json"] = {"schema": refs[0] if len(refs) == 1 else {"oneOf": refs}}
    for media in e.media:
        content[media] = {"schema": {"type": "object" if media == "application/json" else "string"}}
    if content:
        ok["content"] = content
    responses = {str(code): ok for code in (e.status, *e.also)}
    codes = set(e.errors) | ({401, 403, 404} if e.role else set())
    if e.store:
        codes.add(503)
    if e.rate is not None:
        codes.add(429)
    if e.body is not None:
        codes |= {400, 413, 415, 422}
    codes.add(422)  # a query parameter the route does not take, on every route (`routing`)
    for code in sorted(codes):
        responses[str(code)] = {"description": "Problem", "content": problem}
    return responses
