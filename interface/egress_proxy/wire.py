"""HTTP/1 wire pieces of the egress proxy: reading and checking a request head, rewriting it for
upstream, answering with a refusal, and relaying bytes both ways between two sockets.

Nothing here decides anything or resolves a name; `interface.egress_proxy` does that and uses
these to speak HTTP. Parsing is strict on purpose: whatever reaches upstream must mean the same
thing there as it did when it was judged here (no smuggled lines, no second Host).
"""

from __future__ import annotations

import re
import selectors
import socket
import time
from dataclasses import dataclass
from http import HTTPStatus

from domain.errors import GovernanceError
from domain.limits import MAX_LABEL

CHUNK = 64 * 1024
LINGER_SECONDS = 1.0
TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # RFC 9110 token: methods and header names
# Hop-by-hop headers (RFC 9110 7.6.1) and Host, which is rewritten from the request target.
HOP_BY_HOP = {
    "connection",
    "proxy-connection",
    "keep-alive",
    "proxy-authorization",
    "proxy-authenticate",
    "te",
    "trailer",
    "upgrade",
    "host",
}


class Refusal(Exception):
    """An answer the proxy gives instead of a connection."""

    def __init__(self, status: int, text: str, reason: str | None = None, decision: str | None = None):
        super().__init__(text)
        self.status, self.text, self.reason, self.decision = status, text, reason, decision

    def response(self) -> bytes:
        body = f"runcode-policy egress proxy: {self.text}\n".encode()
        lines = [
            f"HTTP/1.1 {self.status} {HTTPStatus(self.status).phrase}",
            "Content-Type: text/plain; charset=utf-8",
            f"Content-Length: {len(body)}",
            "Connection: close",
        ]
        if self.reason:
            lines.append(f"X-Runcode-Policy-Reason: {self.reason}")
        if self.decision:
            lines.append(f"X-Runcode-Policy-Decision: {self.decision}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


class ClientGone(Exception):
    """The client closed or went quiet before sending a whole request head."""


@dataclass(frozen=True)
class Request:
    method: str
    target: str
    version: str
    headers: list[tuple[str, str]]
    rest: bytes  # bytes after the head: a body's start, or an eager TLS ClientHello


def read_request(sock: socket.socket, limit: int, timeout: float) -> Request:
    """The request head, within `timeout` overall (a client dripping bytes cannot hold a slot)."""
    head, rest = _read_head(sock, limit, timeout).split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    method, target, version = _request_line(lines[0])
    return Request(method, target, version, [_header(line) for line in lines[1:]], rest)


def _read_head(sock: socket.socket, limit: int, timeout: float) -> bytes:
    """Bytes up to and past the blank line that ends the head, all within one deadline."""
    buffer, deadline = b"", time.monotonic() + timeout
    while b"\r\n\r\n" not in buffer[: limit + 4]:
        if len(buffer) > limit:
            raise Refusal(431, "the request head is too large")
        sock.settimeout(max(deadline - time.monotonic(), 0.001))
        try:
            chunk = sock.recv(CHUNK)
        except TimeoutError:
            raise ClientGone() from None
        if not chunk:
            raise ClientGone()
        buffer += chunk
    return buffer


def _request_line(line: str) -> tuple[str, str, str]:
    parts = line.split(" ")
    if (
        len(parts) != 3
        or not TOKEN.fullmatch(parts[0])
        or parts[2] not in ("HTTP/1.0", "HTTP/1.1")  # it is copied upstream: a bare LF in it would start a line
        or not re.fullmatch(r"[\x21-\x7e]+", parts[1])
    ):
        raise Refusal(400, "malformed request line")
    if len(parts[0]) > MAX_LABEL:  # recorded in each decision's context, where values are bounded
        raise Refusal(400, f"the request method is longer than {MAX_LABEL} characters")
    return parts[0], parts[1], parts[2]


def _header(line: str) -> tuple[str, str]:
    name, colon, value = line.partition(":")
    # A bare LF or other control byte inside a value could split it into two lines upstream.
    if not colon or not TOKEN.fullmatch(name) or re.search(r"[\x00-\x08\x0a-\x1f\x7f]", value):
        raise Refusal(400, "malformed header line")
    return name, value.strip()


def connect_authority(target: str) -> str:
    """A CONNECT's target in authority-form (`host:port`, RFC 9110 9.3.6), else 400 before it is
    judged or recorded: a URL there would put its path and query into the audit log. (Userinfo
    is judged: refused as an invalid target and recorded without it.)"""
    if any(c in target for c in "/?#\\"):
        raise Refusal(400, "CONNECT takes host:port (authority-form), not a URL")
    return target


def body_length(request: Request) -> int:
    """The length of a plain-HTTP request's body (Content-Length; none: 0). A chunked body is
    411 and a Connection header naming a framing header 400: the proxy forwards exactly one
    request's bytes, and what follows them on the connection (a pipelined request, smuggled
    bytes) never reaches upstream unjudged."""
    named = {t.strip().lower() for n, v in request.headers if n.lower() == "connection" for t in v.split(",")}
    if named & {"content-length", "transfer-encoding"}:
        raise Refusal(400, "Connection must not name Content-Length or Transfer-Encoding")
    if any(n.lower() == "transfer-encoding" for n, _ in request.headers):
        raise Refusal(411, "send a Content-Length: a chunked request body is not relayed")
    lengths = {v.strip() for n, v in request.headers if n.lower() == "content-length"}
    if not lengths:
        return 0
    length = lengths.pop()
    if lengths or not length.isascii() or not length.isdigit():
        raise Refusal(400, "Content-Length must be one whole number")
    return int(length)


def split_absolute(target: str) -> tuple[str, str]:
    """`http://host:port/p?q` -> (`http://host:port/`, `/p?q`). The decision (and so the audit
    log) holds the origin only: the policy is about where, and query strings carry secrets."""
    scheme, sep, rest = target.partition("://")
    if not sep:
        raise Refusal(
            400, "this is a forward proxy: send absolute-form requests (GET http://host/path) or CONNECT host:port"
        )
    if scheme.lower() == "https":
        raise Refusal(400, "https goes through CONNECT (set HTTPS_PROXY to this proxy)")
    authority = re.split(r"[/?#]", rest, maxsplit=1)[0]
    path = rest[len(authority) :].split("#", 1)[0]
    return f"{scheme}://{authority}/", path if path.startswith("/") else "/" + path


def host_header(answer: dict) -> str:
    """The vetted host (punycode or canonical IP), not whatever Host the client sent."""
    host = f"[{answer['host']}]" if ":" in answer["host"] else answer["host"]
    return host if answer["port"] in (None, 80) else f"{host}:{answer['port']}"


def rewrite_head(request: Request, path: str, host: str) -> bytes:
    """Origin-form request line, Host from the vetted target, hop-by-hop headers dropped, and
    `Connection: close`: one request per connection, so each request is judged on its own."""
    named = {
        token.strip().lower()
        for name, value in request.headers
        if name.lower() == "connection"
        for token in value.split(",")
    }
    kept = [f"{name}: {value}" for name, value in request.headers if name.lower() not in HOP_BY_HOP | named]
    lines = [f"{request.method} {path} {request.version}", f"Host: {host}", *kept, "Connection: close"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def relay(client: socket.socket, upstream: socket.socket, idle: float) -> None:
    """A tunnel: copy both ways until both sides finish, or idle."""
    with selectors.DefaultSelector() as selector:
        selector.register(client, selectors.EVENT_READ, upstream)
        selector.register(upstream, selectors.EVENT_READ, client)
        try:
            while selector.get_map():
                events = selector.select(idle)
                if not events:
                    return
                for key, _ in events:
                    _pump(selector, key.fileobj, key.data)
        except OSError:
            return


def relay_exchange(client: socket.socket, upstream: socket.socket, idle: float, body: int) -> int:
    """Plain HTTP, once the head is sent: the client's next `body` bytes to upstream and no more
    (whatever follows them is never read), and upstream's answer to the client until upstream is
    done. Both at once: upstream may answer `100 Continue` before the body comes, or answer and
    close without reading it (a 413), and that answer still reaches the client. Returns how much
    of the body was never read."""
    with selectors.DefaultSelector() as selector:
        selector.register(upstream, selectors.EVENT_READ)
        if body:
            selector.register(client, selectors.EVENT_READ)
        try:
            while True:
                events = selector.select(idle)
                if not events:
                    return body
                for key, _ in events:
                    if key.fileobj is upstream:
                        data = upstream.recv(CHUNK)
                        if not data:
                            return body
                        client.sendall(data)
                        continue
                    data = client.recv(min(CHUNK, body))
                    body -= len(data)
                    try:
                        upstream.sendall(data)
                    except OSError:  # upstream stopped reading: its answer is what is left
                        data = b""
                    if not data or not body:
                        selector.unregister(client)  # the body is sent (or cannot be): never read past it
        except OSError:
            return body


def linger(client: socket.socket, unread: int) -> None:
    """Read and drop what is left of a body upstream did not take, for a moment, so that closing
    with it unread does not reset the connection before the client has read its answer."""
    quietly(client.shutdown, socket.SHUT_WR)
    deadline = time.monotonic() + LINGER_SECONDS
    while unread > 0 and time.monotonic() < deadline:
        client.settimeout(max(deadline - time.monotonic(), 0.001))
        data = quietly(client.recv, min(CHUNK, unread))
        if not data:
            return
        unread -= len(data)


def _pump(selector, source: socket.socket, sink: socket.socket) -> None:
    data = source.recv(CHUNK)
    if data:
        sink.sendall(data)
        return
    selector.unregister(source)
    quietly(sink.shutdown, socket.SHUT_WR)  # pass the half-close on


def answer_refusal(sock: socket.socket, refusal: Refusal) -> None:
    sock.sendall(refusal.response())
    quietly(sock.shutdown, socket.SHUT_WR)
    sock.settimeout(0.5)
    quietly(sock.recv, CHUNK)  # let the client read the answer before our close can reset it


def quietly(call, *args):
    """Best effort: the call's result, or None if the peer, the store or the request failed."""
    try:
        return call(*args)
    except (OSError, GovernanceError, ClientGone, Refusal):
        return None
