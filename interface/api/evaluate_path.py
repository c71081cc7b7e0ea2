"""A lean WSGI path for `POST /api/v1/workspaces/{ws}/evaluate`, in front of Flask.

Evaluate is the hot path, and Flask's per-request machinery (its contexts, routing, hooks,
response building) was a large share of the CPU a decision costs. This path answers the
evaluates that succeed through the route's own declaration (`api.route`: role, body schema),
its own view, the app's JSON and the same latency metric. Everything else goes to Flask
unchanged: other routes and methods, and every refusal that comes before anything is recorded
(media type, size, malformed JSON, schema, token, role, bad specs, a store that cannot be
read), handed over with the body this path read, so Flask answers it exactly as it would
have. The one refusal after recording began, a store that could not record (503), and an
unexpected failure (500) are answered here with the same problem+json, never sent to Flask
(the decisions must not be judged and recorded twice).
"""

from __future__ import annotations

import io
import logging
import re
import time

import orjson
from eventsourcing.persistence import InterfaceError, OperationalError
from flask import Flask
from pydantic import ValidationError
from werkzeug.exceptions import InternalServerError
from werkzeug.wrappers import Response

from application import StoreUnavailableError
from application.formats import strict_json
from application.races import once_more_if_stale
from domain.errors import GovernanceError
from interface import metrics
from interface.api.auth import authorize, bearer_caller
from interface.api.blueprint import W, api
from interface.api.routing import encoded
from interface.api.views import post_evaluate
from interface.problems import governance_problem, problem
from interface.services import services

log = logging.getLogger(__name__)
RULE = api.prefix + W + "/evaluate"


class _ToFlask(Exception):
    """Refused before anything was recorded: Flask answers (and counts) it."""


class EvaluatePath:
    def __init__(self, app: Flask, wsgi_app):
        self.app, self.next = app, wsgi_app
        self.endpoint = next(e for e in api.endpoints if e.method == "POST" and api.prefix + e.rule == RULE)
        self.view = post_evaluate.__wrapped__  # the view itself, under its Flask dispatch
        self.path = re.compile("^" + re.escape(RULE).replace("<ws>", "(?P<ws>[^/]+)") + "$")
        self.mimetype = app.json.mimetype

    def __call__(self, environ, start_response):
        found = environ.get("REQUEST_METHOD") == "POST" and self.path.match(environ.get("PATH_INFO", ""))
        size = self._size(environ) if found else None
        if size is None:
            return self.next(environ, start_response)
        started = time.perf_counter()
        body = environ["wsgi.input"].read(size)
        try:
            if len(body) != size:
                raise _ToFlask
            answer = self._answer(found.group("ws"), environ, body)
        except _ToFlask:
            environ["wsgi.input"] = io.BytesIO(body)
            return self.next(environ, start_response)
        # Answered with the status and headers werkzeug's response would send, without building
        # one, and as a list, which granian writes at once (any other iterable it streams, back in
        # Python for each chunk): under load, each half of a tenth of the server's CPU a decision.
        if isinstance(answer, bytes):
            status, reply = "200", [answer]
            start_response("200 OK", [("Content-Type", self.mimetype), ("Content-Length", str(len(answer)))])
        else:  # a problem, answered as Flask answers it
            status, reply = str(answer.status_code), answer(environ, start_response)
        metrics.LATENCY.labels("POST", RULE, status).observe(time.perf_counter() - started)
        return reply

    def _size(self, environ) -> int | None:
        """The body's length when this path can read it as Flask would; None: Flask's to read."""
        mimetype = environ.get("CONTENT_TYPE", "").split(";", 1)[0].strip().lower()
        if mimetype != "application/json" and not mimetype.endswith("+json"):
            return None
        if environ.get("HTTP_TRANSFER_ENCODING") or encoded(environ):
            return None
        try:
            size = int(environ.get("CONTENT_LENGTH") or "")
        except ValueError:
            return None
        return size if 0 < size <= self.app.config["MAX_CONTENT_LENGTH"] else None

    def _answer(self, workspace: str, environ, body: bytes) -> bytes | Response:
        """The answer's JSON, or a problem's response (503, 500)."""
        try:
            payload = self.endpoint.body.model_validate(strict_json(body))
        except (ValueError, UnicodeDecodeError, RecursionError, ValidationError):
            raise _ToFlask from None
        governance = services(self.app).governance
        try:
            answer = once_more_if_stale(
                lambda fresh: self._judge(governance, workspace, environ, payload, fresh), self.endpoint.remembered
            )
        except _ToFlask:
            raise
        except StoreUnavailableError as error:  # the recording itself failed: nothing recorded
            return governance_problem(error)
        except GovernanceError:  # refused before recording (the writer raises only the above)
            raise _ToFlask from None
        except (OperationalError, InterfaceError):  # reading the store, before any recording
            raise _ToFlask from None
        except Exception:
            log.exception("evaluate failed in %s", workspace)
            error = InternalServerError()
            return problem(500, error.name, error.description)
        return json_answer(self.app, answer)

    def _judge(self, governance, workspace: str, environ, payload, remembered: bool) -> dict:
        caller = bearer_caller(governance, environ.get("HTTP_AUTHORIZATION", ""), remembered)
        if caller is None:
            raise _ToFlask
        try:
            authorize(caller, workspace, self.endpoint.role)
        except GovernanceError:
            raise _ToFlask from None
        return self.view(governance, ws=workspace, caller=caller, body=payload)


def json_answer(app: Flask, answer: dict) -> bytes:
    """The body of `app.json.response(answer)`, byte for byte (compact, non-ASCII and DEL escaped,
    a closing newline), made by orjson in a fifth of the time where its bytes are the same: an
    answer holds only text, whole numbers, booleans and null (no float, whose digits the two may
    write differently). orjson writes non-ASCII and DEL raw (every refusal's message has a `›`):
    they are escaped afterwards as the app escapes them (outside strings, JSON has neither)."""
    try:
        body = orjson.dumps(answer, option=orjson.OPT_APPEND_NEWLINE | _LIKE_FLASK, default=_not_plain)
    except TypeError:
        return app.json.response(answer).get_data()
    if not body.isascii() or b"\x7f" in body:
        body = _UNESCAPED.sub(_escaped, body.decode()).encode()
    return body


# What orjson would write its own way (an instant, a dataclass) goes to `default`, which refuses it.
_LIKE_FLASK = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
# What the standard library's JSON (the app's, ensure_ascii) escapes that orjson writes raw.
_UNESCAPED = re.compile("[\x7f-\U0010ffff]")


def _escaped(found: re.Match) -> str:
    """As json's ensure_ascii writes it: \\u and four hex digits, a surrogate pair past U+FFFF."""
    code = ord(found.group())
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 | code >> 10:04x}\\u{0xDC00 | code & 0x3FF:04x}"


def _not_plain(value):
    raise TypeError(f"{type(value).__name__} is the app's JSON to write")


def install(app: Flask) -> None:
    app.wsgi_app = EvaluatePath(app, app.wsgi_app)
