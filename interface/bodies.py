"""A request body sent in chunks is held to the same bound as one with a Content-Length.

werkzeug bounds a body of unknown length by reading no further than `MAX_CONTENT_LENGTH` and
stops there without a word: a chunked 2 MiB body was cut at 1 MiB and acted on (an evaluate
recorded, a policy saved) where the same body with its length was refused. In front of every
route, a chunked body is read here up to one byte past the bound: beyond it, `413` and nothing
runs; within it, the request goes on with the body in memory and its length known, as any other.
"""

from __future__ import annotations

import io

from werkzeug.exceptions import RequestEntityTooLarge

from interface.problems import problem


class BoundedBodies:
    def __init__(self, wsgi_app, max_bytes: int):
        self.next, self.max_bytes = wsgi_app, max_bytes

    def __call__(self, environ, start_response):
        if not environ.get("HTTP_TRANSFER_ENCODING") or environ.get("CONTENT_LENGTH"):
            return self.next(environ, start_response)
        body = _read_at_most(environ["wsgi.input"], self.max_bytes + 1)
        if len(body) > self.max_bytes:
            refused = RequestEntityTooLarge(f"the body is larger than {self.max_bytes} bytes; nothing was done")
            answer = problem(refused.code, refused.name, refused.description, headers={"Connection": "close"})
            return answer(environ, start_response)
        environ["wsgi.input"], environ["CONTENT_LENGTH"] = io.BytesIO(body), str(len(body))
        del environ["HTTP_TRANSFER_ENCODING"]  # decoded by the server; now a body of known length
        return self.next(environ, start_response)


def _read_at_most(stream, size: int) -> bytes:
    """Up to `size` bytes: a server's decoded chunked stream may return less than asked per read."""
    parts, got = [], 0
    while got < size:
        part = stream.read(size - got)
        if not part:
            break
        parts.append(part)
        got += len(part)
    return b"".join(parts)
