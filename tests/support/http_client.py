"""A real HTTP server on loopback for tests, and a small stdlib client for it."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass

from werkzeug.serving import make_server

from tests.support.background import serve_in_background


@dataclass
class Reply:
    status: int
    headers: dict
    body: bytes

    @property
    def json(self):
        return json.loads(self.body)

    @property
    def media(self) -> str:
        return self.headers.get("content-type", "").split(";")[0]


class LiveServer:
    def __init__(self, wsgi_app):
        # A threaded HTTP server on a real loopback socket; shuts down cleanly between tests.
        self.app = wsgi_app
        self._server = make_server("127.0.0.1", 0, wsgi_app, threaded=True)
        self.url = f"http://127.0.0.1:{self._server.server_port}"
        self._thread = serve_in_background(self._server)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)
        for close in getattr(self.app, "extensions", {}).get("on_close", ()):
            close()

    def call(
        self,
        method: str,
        path: str,
        token: str | None = None,
        body=None,
        raw: bytes | None = None,
        headers: dict | None = None,
    ) -> Reply:
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        request = urllib.request.Request(self.url + path, data=data, method=method)
        if data is not None and not (headers and "Content-Type" in headers):
            request.add_header("Content-Type", "application/json")
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        for key, value in (headers or {}).items():
            request.add_header(key, value)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return Reply(response.status, {k.lower(): v for k, v in response.headers.items()}, response.read())
        except urllib.error.HTTPError as error:
            return Reply(error.code, {k.lower(): v for k, v in error.headers.items()}, error.read())
