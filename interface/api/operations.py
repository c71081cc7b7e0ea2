"""Operations endpoints, no authentication: liveness, readiness, metrics, and the OpenAPI
document itself (which describes these too)."""

from __future__ import annotations

import logging

from flask import Blueprint, Response, jsonify
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import BaseModel

from application.clock import ClockSkewed
from interface import metrics
from interface.api.openapi import openapi_document
from interface.api.routing import Api
from interface.problems import problem

API_VERSION = "1.0.0"
log = logging.getLogger(__name__)
blueprint = Blueprint("operations", __name__)
ops = Api(blueprint, "", store=False)  # /readyz, which probes it, says so itself


class Status(BaseModel):
    status: str
    # Set when stored state did not verify against the audit chain and was not used (the service
    # rebuilt or refused it, so it stays ready): the first such finding, as logged.
    integrity: str | None = None


@ops.route("GET", "/healthz", "The process is up", role=None, response=Status)
def healthz(gov):
    return {"status": "ok"}


@ops.route("GET", "/readyz", "The store is reachable", role=None, response=Status, errors=(503,))
def readyz(gov):
    try:
        gov.readmodel.has_workspaces()  # one indexed probe of the store
        gov.chain.check_sealing()  # a few more: what stops the sealer (it may run in another process)
    except Exception:  # any store failure means "not ready"; details go to the log, not the caller
        log.exception("readiness check failed")
        return problem(503, "Store unavailable", "the store is not reachable")
    try:
        gov.clock_watch.check()
    except ClockSkewed as error:  # it records nothing: a balancer should send its traffic elsewhere
        return problem(503, error.title, error.detail)
    found = gov.integrity.first
    return {"status": "ready"} | ({"integrity": found} if found else {})


@ops.route(
    "GET",
    "/metrics",
    "Prometheus metrics of the whole service (every worker): decisions by outcome and reason, request latency",
    role=None,
    media=("text/plain",),
)
def prometheus(gov):
    return Response(generate_latest(metrics.scrape_registry()), headers={"Content-Type": CONTENT_TYPE_LATEST})


@ops.route("GET", "/api/v1/openapi.json", "This document (OpenAPI 3.1)", role=None, media=("application/json",))
def openapi(gov):
    return jsonify(document())


_document: dict = {}


def document() -> dict:
    """Built once, from every endpoint declaration (the API's and these)."""
    if not _document:
        from interface.api.blueprint import api

        _document.update(openapi_document([api, ops], "runcode-policy", API_VERSION))
    return _document
