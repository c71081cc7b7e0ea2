"""The network between the service and its upstream, on loopback: a TLS front signed by a private
CA (what a TLS-inspecting proxy looks like), a forward proxy that logs what passes through it,
and an upstream that trickles or serves a large file fast."""

from __future__ import annotations

import json
import select
import socket
import ssl
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from tests.support.background import serve_in_background

BIG_FILE_BYTES = 48 * 1024 * 1024
DRIP_SHA256 = "0" * 64  # a trickling file never arrives whole, so never reaches its digest check
TRICKLE_SECONDS = 0.5  # one byte this often


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def start(self) -> str:
        serve_in_background(self)
        return f"127.0.0.1:{self.server_port}"

    def close(self) -> None:
        self.shutdown()
        self.server_close()


class TLSFront(_Server):
    """The fixture upstream's own handler behind TLS with a certificate for 127.0.0.1."""

    def __init__(self, fixture, certificate):
        super().__init__(("127.0.0.1", 0), fixture._handler())
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        certificate.configure_cert(self.context)
        self.url = "https://" + self.start()

    def get_request(self):
        connection, address = super().get_request()
        return self.context.wrap_socket(connection, server_side=True), address


class ForwardProxy(_Server):
    """An HTTP proxy: absolute-form GETs forwarded, CONNECT tunnelled; `seen` logs each."""

    def __init__(self):
        self.seen: list[str] = []
        super().__init__(("127.0.0.1", 0), self._handler())
        self.url = "http://" + self.start()

    def _handler(self):
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_CONNECT(self):
                proxy.seen.append(f"CONNECT {self.path}")
                host, _, port = self.path.rpartition(":")
                upstream = socket.create_connection((host, int(port)), timeout=10)
                self.send_response(200, "Connection established")
                self.end_headers()
                _pipe(self.connection, upstream)

            def do_GET(self):
                proxy.seen.append(f"GET {self.path}")
                parts = urlsplit(self.path)
                upstream = socket.create_connection((parts.hostname, parts.port or 80), timeout=10)
                target = parts.path + (f"?{parts.query}" if parts.query else "")
                headers = "".join(f"{k}: {v}\r\n" for k, v in self.headers.items() if k.lower() != "connection")
                upstream.sendall(f"GET {target} HTTP/1.1\r\n{headers}Connection: close\r\n\r\n".encode("latin-1"))
                self.close_connection = True
                _pipe(self.connection, upstream)

        return Handler


def _pipe(client: socket.socket, upstream: socket.socket) -> None:
    sockets = [client, upstream]
    try:
        while True:
            ready, _, _ = select.select(sockets, [], [], 30)
            if not ready:
                return
            for source in ready:
                data = source.recv(65536)
                if not data:
                    return
                (upstream if source is client else client).sendall(data)
    finally:
        upstream.close()


class SlowUpstream(_Server):
    """A simple index of any project `<name>`, with one 48 MiB sdist `<name>-1.0.tar.gz` sent as
    fast as it is read; but the page of `slow` and the files of `drip` and `hashed-drip` trickle
    one byte every TRICKLE_SECONDS (and the pages of the names a test adds to `trickled`). Pages
    give no digest, but that of `hashed-drip` (the index then fetches the file whole into its
    cache before serving a byte of it)."""

    def __init__(self):
        self.trickled = {"slow"}
        super().__init__(("127.0.0.1", 0), self._handler())
        self.url = "http://" + self.start()

    def _handler(self):
        trickled = self.trickled

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                name = self.path.strip("/").split("/")[-1]
                if self.path.startswith("/simple/"):
                    return self._page(name)
                if self.path.startswith("/files/"):
                    return self._file(name)
                self.send_error(404)

            def _page(self, project: str) -> None:
                body = json.dumps(
                    {
                        "meta": {"api-version": "1.1"},
                        "name": project,
                        "files": [
                            {
                                "filename": f"{project}-1.0.tar.gz",
                                "url": f"/files/{project}-1.0.tar.gz",
                                "hashes": {"sha256": DRIP_SHA256} if project == "hashed-drip" else {},
                            }
                        ],
                    }
                ).encode()
                self._headers("application/vnd.pypi.simple.v1+json", len(body))
                self._send(body, trickle=project in trickled)

            def _file(self, filename: str) -> None:
                self._headers("application/octet-stream", BIG_FILE_BYTES)
                chunk = b"\0" * 65536
                if filename.startswith(("drip-", "hashed-drip-")):
                    return self._send(chunk, trickle=True)
                for _ in range(BIG_FILE_BYTES // len(chunk)):
                    self._send(chunk, trickle=False)

            def _headers(self, media: str, length: int) -> None:
                self.send_response(200)
                self.send_header("Content-Type", media)
                self.send_header("Content-Length", str(length))
                self.end_headers()

            def _send(self, body: bytes, trickle: bool) -> None:
                try:
                    if not trickle:
                        self.wfile.write(body)
                        return
                    for index in range(len(body)):
                        self.wfile.write(body[index : index + 1])
                        self.wfile.flush()
                        time.sleep(TRICKLE_SECONDS)
                except OSError:
                    pass  # the service gave up on us: that is the point

        return Handler
