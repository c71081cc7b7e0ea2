"""Judged answers (project pages, packuments, root listings): an `ETag`, and 304 to a client
that already holds the same answer.

The ETag names the policy version the answer was judged on and a digest of the answer itself, so
a new policy or a new upstream page is a new ETag. `private, no-cache`: the client may keep the
answer but must ask again each time (each time is judged, and a 304 is judged too); a shared
cache must not keep it, since it depends on who asks and on the policy now.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable

from flask import Response, request
from werkzeug.http import http_date

from application.lru import SizedLru, weigh

CACHE_CONTROL = "private, no-cache"


def judged(body: bytes | str, content_type: str, policy_version, environ: dict | None = None) -> Response:
    """The answer, 304 when the request (`environ`, default this request's) holds its ETag."""
    data = body.encode() if isinstance(body, str) else body
    return _response(data, content_type, _etag(data, policy_version), environ)


def _etag(data: bytes, policy_version) -> str:
    return f"p{policy_version}-{hashlib.sha256(data).hexdigest()[:40]}"


def _response(data: bytes, content_type: str, etag: str, environ: dict | None) -> Response:
    environ = request.environ if environ is None else environ
    response = Response(data, content_type=content_type)
    response.set_etag(etag)
    response.headers["Cache-Control"] = CACHE_CONTROL
    response.headers["Vary"] = "Accept"
    if environ.get("REQUEST_METHOD") not in ("GET", "HEAD") or not CONDITIONS.isdisjoint(environ):
        return response.make_conditional(environ)
    # All make_conditional adds to a GET or HEAD nobody made conditional, without its parsing
    # (8 % of a cached page's time): the Date header, to the second as it writes it.
    response.headers["Date"] = _date()
    return response


# The request headers make_conditional reads (a 304, 412 or 206 depends on them).
CONDITIONS = frozenset(("HTTP_IF_NONE_MATCH", "HTTP_IF_MATCH", "HTTP_IF_MODIFIED_SINCE", "HTTP_IF_RANGE", "HTTP_RANGE"))
_dated = (0, "")  # the second last formatted, and its Date header


def _date() -> str:
    global _dated
    now = int(time.time())
    dated = _dated
    if dated[0] != now:
        _dated = dated = (now, http_date(now))
    return dated[1]


class Rendered:
    """Answers already rendered, by everything they depend on (the key names the policy version
    and the upstream page's revision), least recently used out past `limit` bytes (a share of
    the worker's index memory, application.index.memory). Only for answers whose rendering
    records nothing: the request itself is judged before."""

    def __init__(self, limit: int):
        self.memory: SizedLru[tuple, tuple[bytes, str]] = SizedLru(limit, weigh)

    def answer(
        self, key: tuple, policy_version, content_type: str, render: Callable[[], bytes], environ: dict | None = None
    ) -> Response:
        found = self.memory.get(key)
        if found is None:
            data = render()
            found = (data, _etag(data, policy_version))
            self.memory.put(key, found)
        return _response(found[0], content_type, found[1], environ)
