"""Relaying a file from upstream: the bytes as upstream sent them, streamed, never re-encoded.

The file is asked for with `Accept-Encoding: identity` and relayed raw, so what reaches the
client is byte for byte what upstream stored: `--require-hashes`, `#sha256=` fragments and npm's
`integrity` stay true. HEAD answers with upstream's `Content-Length` (uv probes files with HEAD).
If upstream breaks off mid-file, the client gets a short body, which its hash check refuses.
"""

from __future__ import annotations

from flask import Response

from interface.index.upstream import Upstream, bad_gateway, unavailable
from interface.problems import HTTPProblem

CHUNK = 64 * 1024
_KEPT = {k.lower(): k for k in ("Content-Type", "Content-Length", "Last-Modified", "ETag")}


def relay(upstream: Upstream, method: str, url: str) -> Response:
    response = upstream.open("HEAD" if method == "HEAD" else "GET", url, {"Accept-Encoding": "identity"})
    if response.status_code != 200:
        response.close()
        if response.status_code == 404:
            raise HTTPProblem(404, "Not Found", "the upstream has no such file")
        if response.status_code >= 500:
            raise unavailable(f"the upstream answered {response.status_code} for the file")
        raise bad_gateway(f"the upstream answered {response.status_code} for the file")
    headers = {_KEPT[k.lower()]: v for k, v in response.headers.items() if k.lower() in _KEPT}
    content_type = headers.pop("Content-Type", "application/octet-stream")
    headers["Cache-Control"] = "no-store"  # judged per fetch: a shared cache must not answer for us
    if "content-encoding" in response.headers and response.headers["content-encoding"] != "identity":
        headers["Content-Encoding"] = response.headers["content-encoding"]  # relayed as stored
    if method == "HEAD":
        response.close()
        return Response(status=200, headers=headers, content_type=content_type)
    return Response(_chunks(response), status=200, headers=headers, content_type=content_type, direct_passthrough=True)


def _chunks(response):
    try:
        yield from response.iter_raw(CHUNK)
    finally:
        response.close()
