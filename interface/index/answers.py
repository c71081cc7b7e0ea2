"""Judged answers (project pages, packuments, root listings): an `ETag`, and 304 to a client
that already holds the same answer.

The ETag names the policy version the answer was judged on and a digest of the answer itself, so
a new policy or a new upstream page is a new ETag. `private, no-cache`: the client may keep the
answer but must ask again each time (each time is judged, and a 304 is judged too); a shared
cache must not keep it, since it depends on who asks and on the policy now.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable

from flask import Response, request

CACHE_CONTROL = "private, no-cache"
RENDERED_BYTES = 8 * 1024 * 1024  # answers kept rendered, per worker process (~1,000 typical pages)


def judged(body: bytes | str, content_type: str, policy_version, environ: dict | None = None) -> Response:
    """The answer, 304 when the request (`environ`, default this request's) holds its ETag."""
    data = body.encode() if isinstance(body, str) else body
    return _response(data, content_type, _etag(data, policy_version), environ)


def _etag(data: bytes, policy_version) -> str:
    return f"p{policy_version}-{hashlib.sha256(data).hexdigest()[:40]}"


def _response(data: bytes, content_type: str, etag: str, environ: dict | None) -> Response:
    response = Response(data, content_type=content_type)
    response.set_etag(etag)
    response.headers["Cache-Control"] = CACHE_CONTROL
    response.headers["Vary"] = "Accept"
    return response.make_conditional(request.environ if environ is None else environ)


class Rendered:
    """Answers already rendered, by everything they depend on (the key names the policy version
    and the upstream page's revision), least recently used out past `RENDERED_BYTES`. Only for
    answers whose rendering records nothing: the request itself is judged before."""

    def __init__(self, limit: int = RENDERED_BYTES):
        self._kept: OrderedDict[tuple, tuple[bytes, str]] = OrderedDict()
        self._bytes, self._limit = 0, limit
        self._lock = threading.Lock()

    def answer(
        self, key: tuple, policy_version, content_type: str, render: Callable[[], bytes], environ: dict | None = None
    ) -> Response:
        with self._lock:
            found = self._kept.get(key)
            if found is not None:
                self._kept.move_to_end(key)
        if found is None:
            data = render()
            found = (data, _etag(data, policy_version))
            with self._lock:
                if key not in self._kept and len(data) <= self._limit:
                    self._kept[key] = found
                    self._bytes += len(data)
                    while self._bytes > self._limit:
                        self._bytes -= len(self._kept.popitem(last=False)[1][0])
        return _response(found[0], content_type, found[1], environ)
