"""The HTTP side the fixture upstreams share: threaded servers on loopback, a request log, an
outage switch. A subclass answers `respond(path, accept) -> (status, media, body)`. Answers carry
an `ETag` (a digest of the body), and a request whose `If-None-Match` names it gets a 304.

`OTHER_HOST` is a second loopback address: a fixture can keep some files there, which the
egress rules refuse unless a test's hatch lets exactly that address through.
"""

from __future__ import annotations

import hashlib
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.support.background import serve_in_background

OTHER_HOST = "127.0.0.2"
CUT = "cut"  # a fault: the upstream dies mid-file
CUT_CHUNKED = "cut-chunked"  # the same, sending the file in chunks (HTTP/1.1, no length announced)
UNANNOUNCED = "unannounced"  # the whole body, its length not announced (HTTP/1.0: it ends as the connection does)


class _Server(ThreadingHTTPServer):
    # The standard library listens with a backlog of 5: sixteen clients connecting at once (the
    # bench's load) lost SYNs and waited out the kernel's one-second retransmission.
    request_queue_size = 128

    def handle_error(self, request, client_address):
        # A client hanging up mid-answer (wrk closing its connections at the end of a load, a
        # download given up) is how clients behave, not a failure: no traceback for it.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class FixtureServer:
    def __init__(self, other_host: bool = False):
        self.requests: list[tuple[str, str, dict]] = []
        self.outage = False  # when set, every request is answered 503
        # Path ending -> what a request whose path ends so gets instead: a status (403, 503), or
        # CUT (the whole length announced, half the body sent, then the connection closed), or
        # CUT_CHUNKED (half the body sent as a chunk, then the connection closed, with no last chunk),
        # or UNANNOUNCED (the whole body without a Content-Length, then the connection closed).
        self.faults: dict[str, int | str] = {}
        self._servers = [_Server(("127.0.0.1", 0), self._handler())]
        if other_host:
            self._servers.append(_Server((OTHER_HOST, 0), self._handler()))
        self.port, self.other_port = self._servers[0].server_port, self._servers[-1].server_port
        self.url = f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        for server in self._servers:
            server.daemon_threads = True
            serve_in_background(server)

    def close(self) -> None:
        for server in self._servers:
            server.shutdown()
            server.server_close()

    def hits(self, path_part: str) -> int:
        return sum(1 for _, path, _ in self.requests if path_part in path)

    def respond(self, path: str, accept: str) -> tuple[int, str, bytes]:
        raise NotImplementedError

    def _handler(self):
        fixture = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def do_HEAD(self):
                self.do_GET(head=True)

            def do_GET(self, head=False):
                fixture.requests.append((self.command, self.path, dict(self.headers)))
                if fixture.outage:
                    return self._send(503, "text/plain", b"down for maintenance", head)
                path = self.path.split("?")[0]
                fault = next((f for ending, f in fixture.faults.items() if path.endswith(ending)), None)
                if isinstance(fault, int):
                    return self._send(fault, "text/plain", b"refused by the test", head)
                self._send(*fixture.respond(self.path, self.headers.get("Accept", "")), head, cut=fault)

            def _send(self, status, media, body, head, cut=None):
                etag = f'"{hashlib.sha256(body).hexdigest()[:32]}"'
                if status == 200 and self.headers.get("If-None-Match") == etag:
                    status, body = 304, b""
                if cut == CUT_CHUNKED:
                    self.protocol_version = "HTTP/1.1"  # chunks are HTTP/1.1's
                self.send_response(status)
                if status in (200, 304):
                    self.send_header("ETag", etag)
                self.send_header("Content-Type", media)
                if cut == CUT_CHUNKED:
                    self.send_header("Transfer-Encoding", "chunked")
                elif cut != UNANNOUNCED:
                    self.send_header("Content-Length", str(len(body)))
                self.send_header("Vary", "Accept")
                self.end_headers()
                sent = body[: len(body) // 2] if cut in (CUT, CUT_CHUNKED) else body
                if not head:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(sent), sent) if cut == CUT_CHUNKED else sent)
                if cut:
                    self.close_connection = True

        return Handler


class FileHost(FixtureServer):
    """A plain web server holding `files` ({path: bytes}): the host a URL dependency points at."""

    def __init__(self, files: dict[str, bytes]):
        super().__init__()
        self.files = files
        self.start()

    def respond(self, path: str, accept: str) -> tuple[int, str, bytes]:
        found = self.files.get(path.split("?")[0])
        return (200, "application/octet-stream", found) if found is not None else (404, "text/plain", b"")
