"""Declare an endpoint once: its route, role, body/query/response schemas. The same declaration
authenticates, validates and dispatches the request, and becomes its OpenAPI operation
(`interface.api.openapi`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import wraps

from flask import Blueprint, request
from pydantic import BaseModel

from application.formats import strict_json
from application.races import once_more_if_stale
from domain.errors import FieldError, InvalidInputError
from interface.api.auth import authenticate, authorize
from interface.api.schemas import Query
from interface.problems import HTTPProblem
from interface.services import services


@dataclass(frozen=True)
class Rate:
    """A route's own rate per token and worker, named for its refusal ("runs started"); routes
    declaring one Rate share its buckets. `at_once`: a route whose answer is a long pass over the
    store runs in one of the worker's index slots, at most this many at once (interface.index.bounds)."""

    what: str
    per_minute: int
    at_once: int | None = None
    # One workspace holds one of those at most: an owner can issue any number of tokens, and a
    # pass that holds one of the worker's few slots must leave other workspaces their turn.
    one_per_workspace: bool = False


@dataclass
class Endpoint:
    method: str
    rule: str
    summary: str
    role: str | None
    body: type[BaseModel] | None = None
    query: type[BaseModel] | None = None
    response: type[BaseModel] | None = None
    status: int = 200
    media: tuple[str, ...] = ()  # extra response media types (exports)
    errors: tuple[int, ...] = field(default_factory=tuple)
    also: tuple[int, ...] = ()  # other success statuses with the same answer (a joined request: 200)
    # The caller may come from the process's memory: the view's one effect is a recording that
    # checks it again (application.callers); when it no longer holds, the view runs once more.
    remembered: bool = False
    # The view reads or writes the store (and a token is checked against it): a store that cannot
    # answer in time, or a clock out of step with it, is 503 (interface.problems).
    store: bool = True
    rate: Rate | None = None  # a bucket of its own per token (interface.index.bounds): past it, 429


class Api:
    def __init__(self, blueprint: Blueprint, prefix: str, store: bool = True):
        self.blueprint = blueprint
        self.prefix = prefix
        self.store = store  # whether its routes read the store, unless a route says otherwise
        self.endpoints: list[Endpoint] = []

    def route(
        self,
        method: str,
        rule: str,
        summary: str,
        *,
        role: str | None,
        body=None,
        query=None,
        response=None,
        status=200,
        media=(),
        errors=(),
        also=(),
        remembered=False,
        store=None,
        rate=None,
    ):
        store = self.store if store is None else store
        endpoint = Endpoint(
            method, rule, summary, role, body, query, response, status, media, errors, also, remembered, store, rate
        )
        self.endpoints.append(endpoint)

        def decorate(view):
            def dispatch(governance, params: dict, remembered: bool):
                if role is not None:
                    params["caller"] = authenticate(governance, remembered)
                    # a deployment-wide route (no workspace in its path): the role in the token's own
                    authorize(params["caller"], params.get("ws", params["caller"]["workspace"]), role)
                if body is not None:
                    params["body"] = body.model_validate(json_body())
                # A route without a query schema takes no parameter: one it would ignore is refused
                # as a schema refuses one it lacks (`/audit/verify?foo=1` had been 200).
                checked = (query or Query).model_validate(query_args())
                if query is not None:
                    params["query"] = checked
                return view(governance, **params)

            @wraps(view)
            def handle(**params):
                governance = services().governance
                return once_more_if_stale(lambda fresh: dispatch(governance, dict(params), fresh), remembered)

            self.blueprint.add_url_rule(rule, view.__name__, handle, methods=[method])
            return handle

        return decorate


def encoded(environ) -> bool:
    """Whether a body comes compressed (a Content-Encoding other than identity), which is refused."""
    return environ.get("HTTP_CONTENT_ENCODING", "").strip().lower() not in ("", "identity")


def query_args() -> dict[str, str]:
    """The query's parameters, each given once: as with a JSON key named twice, readers differ
    on which value counts (a proxy or a log may have read the other)."""
    repeated = [key for key, values in request.args.lists() if len(values) > 1]
    if repeated:
        errors = [FieldError(key, "must be given once") for key in repeated]
        said = repeated[0] if len(repeated) == 1 else f"{len(repeated)} query parameters"  # bounded, as errors are
        raise InvalidInputError(f"{said} given more than once", errors)
    return request.args.to_dict(flat=True)


def json_body():
    if request.mimetype != "application/json" and not request.mimetype.endswith("+json"):
        raise HTTPProblem(415, "Unsupported media type", "send the body as application/json")
    if encoded(request.environ):
        coding = request.headers["Content-Encoding"]
        raise HTTPProblem(
            415,
            "Unsupported media type",
            f"the body's Content-Encoding {coding!r} is not accepted: send it uncompressed",
        )
    raw = request.get_data(cache=True)  # over MAX_CONTENT_LENGTH: werkzeug raises 413
    try:
        return strict_json(raw)  # a proxy or a log reading a key's first value saw another request
    except (ValueError, UnicodeDecodeError) as error:
        # Python's own words for a number past its digit limit name a setting of its own
        why = "a number has more digits than any field takes" if "int_max_str_digits" in str(error) else error
        raise HTTPProblem(400, "Malformed JSON", f"the body is not valid JSON: {why}") from None
    except RecursionError:
        raise HTTPProblem(400, "Malformed JSON", "the body is nested too deeply") from None
