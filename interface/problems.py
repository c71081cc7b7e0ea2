"""One mapping from refusals to RFC 9457 problem+json: domain errors, HTTP errors, bad bodies."""

from __future__ import annotations

import logging

from eventsourcing.persistence import InterfaceError, OperationalError
from flask import Flask, Response, json
from pydantic import ValidationError
from werkzeug.exceptions import HTTPException

from application import StoreUnavailableError
from domain.edits import ACTIONS
from domain.errors import (
    RULES_NAMED,
    ConflictError,
    FieldError,
    GovernanceError,
    InvalidInputError,
    NotFoundError,
    named,
)
from domain.limits import MAX_ERRORS

PROBLEM_TYPE = "https://runcode-policy.dev/problems/"
_STATUS = ((StoreUnavailableError, 503), (InvalidInputError, 422), (ConflictError, 409), (NotFoundError, 404))
# Union members pydantic names in a location: the plain types, and each change's action (its tag).
_UNION_TAGS = {"str", "int", "bool", "list[str]", *ACTIONS, "import"}


class HTTPProblem(GovernanceError):
    """A refusal that only HTTP knows: authentication, authorisation, media type."""

    def __init__(self, status: int, title: str, detail: str, errors=(), headers=None, phrase: str | None = None):
        super().__init__(detail, errors)
        self.status, self.title, self.headers = status, title, headers or {}
        self.phrase = phrase  # the status line's reason phrase, for clients that print only that


RETRY_STORE = {"Retry-After": "1"}  # a 503 of the store (or of the clock): a second is a fair wait


def problem(status: int, title: str, detail: str, errors=(), headers=None, phrase: str | None = None) -> Response:
    body = {
        "type": PROBLEM_TYPE + title.lower().replace(" ", "-"),
        "title": title,
        "status": status,
        "detail": detail,
        "errors": [{"field": e.field, "message": e.message} for e in errors],
    }
    line = f"{status} {status_line_text(phrase)}" if phrase else status
    return Response(json.dumps(body), status=line, mimetype="application/problem+json", headers=headers)


def status_line_text(text: str) -> str:
    """Text a status line (or a header) can carry: Latin-1 at most, here ASCII, on one line."""
    text = " ".join(text.replace("\u2014", "-").replace("\u203a", ">").split())
    return text.encode("ascii", "replace").decode("ascii")


def status_of(error: GovernanceError) -> int:
    if isinstance(error, HTTPProblem):
        return error.status
    return next((code for cls, code in _STATUS if isinstance(error, cls)), 400)


def field_errors(error: ValidationError) -> tuple[FieldError, ...]:
    """Pydantic locations as JSON paths (`python.allow[3]`), union member tags left out; only as
    many as a refusal names (`domain.errors.named`: a context of 50,000 unknown keys was answered
    with 50,000 errors, 3.7 MB)."""
    found = []
    for item in error.errors(include_url=False, include_context=False, include_input=False)[: MAX_ERRORS + 1]:
        path = ""
        for part in item["loc"]:
            if isinstance(part, int):
                path += f"[{part}]"
            elif part not in _UNION_TAGS and not part.startswith(("function-", "list[", "literal[")):
                path += f".{part}" if path else part
        found.append(FieldError(path or "body", item["msg"]))
    return named(found)


def governance_problem(error: GovernanceError) -> Response:
    headers, phrase, status = getattr(error, "headers", None), getattr(error, "phrase", None), status_of(error)
    if status == 503 and not headers:  # the store or the clock: worth asking again in a moment
        headers = RETRY_STORE
    return problem(status, error.title, error.detail, error.errors, headers, phrase)


def http_problem(error: HTTPException) -> Response:
    # Keep the exception's own headers (e.g. `Allow` on a 405), not its HTML content type.
    headers = {k: v for k, v in error.get_headers() if k.lower() != "content-type"}
    return problem(error.code or 500, error.name, error.description or error.name, headers=headers)


def install(app: Flask) -> None:
    app.errorhandler(GovernanceError)(governance_problem)

    @app.errorhandler(ValidationError)
    def _validation(error: ValidationError):
        errors = field_errors(error)
        return problem(422, "Invalid input", f"the request {RULES_NAMED}", errors)

    app.errorhandler(HTTPException)(http_problem)

    @app.errorhandler(OperationalError)
    @app.errorhandler(InterfaceError)
    def _store_down(error: Exception):
        # The store cannot be reached: say so (and fail closed), rather than a bare 500. Its
        # message names hosts and users: it goes to the log, not to the caller.
        logging.getLogger(__name__).error("store unavailable: %s", error)
        return problem(503, "Store unavailable", "the store is not reachable", headers=RETRY_STORE)
