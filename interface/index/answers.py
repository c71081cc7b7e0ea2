"""Judged answers (project pages, packuments, root listings): an `ETag`, and 304 to a client
that already holds the same answer.

The ETag names the policy version the answer was judged on and a digest of the answer itself, so
a new policy or a new upstream page is a new ETag. `private, no-cache`: the client may keep the
answer but must ask again each time (each time is judged, and a 304 is judged too); a shared
cache must not keep it, since it depends on who asks and on the policy now.
"""

from __future__ import annotations

import hashlib

from flask import Response, request

CACHE_CONTROL = "private, no-cache"


def judged(body: bytes | str, content_type: str, policy_version) -> Response:
    data = body.encode() if isinstance(body, str) else body
    response = Response(data, content_type=content_type)
    response.set_etag(f"p{policy_version}-{hashlib.sha256(data).hexdigest()[:40]}")
    response.headers["Cache-Control"] = CACHE_CONTROL
    response.headers["Vary"] = "Accept"
    return response.make_conditional(request.environ)
