"""What a request body may cost before the app acts on it.

`ArrivingBodies`: a body arrives in the request's own thread (the server reads it as the app
asks), so twenty clients trickling a byte of theirs every few seconds held every thread of a
worker and `/healthz` stopped answering. While its body arrives a request holds one of the
worker's body slots (its request threads but RESERVED_THREADS), keyed by the client's address
(nothing is authenticated yet), and one address holds all of them but one. A body already sent
arrives at once and lets its slot go: the bounds only bite bodies that are slow to come. When
the slots or an address's share are held, a request waits up to QUEUE_SECONDS for one (quick
bodies let theirs go in microseconds), then is refused (`503`, or `429` for the address's share)
without reading its body. A client that never sends its body still holds its thread until it
hangs up: a deployment open to hostile clients puts a proxy that buffers bodies in front
(docs/deployment.md).

`BoundedBodies`: a request body sent in chunks is held to the same bound as one with a Content-Length.

werkzeug bounds a body of unknown length by reading no further than `MAX_CONTENT_LENGTH` and
stops there without a word: a chunked 2 MiB body was cut at 1 MiB and acted on (an evaluate
recorded, a policy saved) where the same body with its length was refused. In front of every
route, a chunked body is read here up to one byte past the bound: beyond it, `413` and nothing
runs; within it, the request goes on with the body in memory and its length known, as any other.
"""

from __future__ import annotations

import io
import threading
from time import monotonic

from werkzeug.exceptions import RequestEntityTooLarge

from interface.index.bounds import QUEUE_SECONDS, refusal, slots_for
from interface.problems import problem


class ArrivingBodies:
    def __init__(self, wsgi_app, threads: int | None):
        self.next = wsgi_app
        self.slots = slots_for(threads)
        self.per_address = max(1, self.slots - 1)
        self._arriving: dict[object, tuple[str, float]] = {}  # ticket -> (address, since)
        self._changed = threading.Condition()

    def __call__(self, environ, start_response):
        length = _length(environ)
        if not environ.get("HTTP_TRANSFER_ENCODING") and not length:
            return self.next(environ, start_response)
        address, ticket = environ.get("REMOTE_ADDR", ""), object()
        refused = self._admit(address, ticket)
        if refused is not None:
            return refused(environ, start_response)
        arrived = lambda: self._leave(ticket)  # noqa: E731 - said once, called twice
        environ["wsgi.input"] = _Arriving(environ["wsgi.input"], length, arrived)
        try:
            return self.next(environ, start_response)
        finally:
            arrived()  # a body the app did not read whole (refused first) lets its slot go too

    def _admit(self, address: str, ticket: object):
        """None once `ticket` holds a slot; the refusal when none came within QUEUE_SECONDS, or
        at once when every slot in the way is held by a body that has been slow to come."""
        with self._changed:
            until = monotonic() + QUEUE_SECONDS
            while True:
                mine = [since for who, since in self._arriving.values() if who == address]
                over = len(mine) >= self.per_address
                if not over and len(self._arriving) < self.slots:
                    self._arriving[ticket] = (address, monotonic())
                    return None
                held = mine if over else [since for _, since in self._arriving.values()]
                now = monotonic()
                if now >= until or now - max(held) >= QUEUE_SECONDS:
                    return _busy(over, self.per_address if over else self.slots)
                self._changed.wait(until - now)

    def _leave(self, ticket: object) -> None:
        with self._changed:
            if self._arriving.pop(ticket, None) is not None:
                self._changed.notify_all()


def _busy(over: bool, count: int):
    if over:
        detail = f"this address already has {count} request bodies arriving slowly on this worker; send them whole"
        return refusal(429, "Too Many Requests", detail, 1)
    detail = f"all {count} request slots of this worker hold bodies arriving slowly; retry shortly"
    return refusal(503, "Server busy", detail, 1)


def _length(environ) -> int | None:
    try:
        return int(environ.get("CONTENT_LENGTH") or "")
    except ValueError:
        return None


class _Arriving:
    """A request's body stream, calling `arrived` once its last byte is read (or it ends)."""

    def __init__(self, stream, length: int | None, arrived):
        self._stream, self._left, self._arrived = stream, length, arrived

    def read(self, size: int | None = -1) -> bytes:
        data = self._stream.read(size) if size is not None and size >= 0 else self._stream.read()
        self._count(data, whole=size is None or size < 0)
        return data

    def readline(self, size: int = -1) -> bytes:
        data = self._stream.readline(size)
        self._count(data, whole=False)
        return data

    def readlines(self, hint: int = -1) -> list[bytes]:
        lines = self._stream.readlines(hint)
        self._count(b"".join(lines), whole=True)
        return lines

    def __iter__(self):
        return iter(self.readline, b"")

    def _count(self, data: bytes, whole: bool) -> None:
        if self._left is not None:
            self._left -= len(data)
        if whole or not data or (self._left is not None and self._left <= 0):
            self._arrived()


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
