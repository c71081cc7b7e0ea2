"""Relaying a file from upstream: the bytes as upstream sent them, streamed, never re-encoded.

The file is asked for with `Accept-Encoding: identity` and relayed raw, so what reaches the
client is byte for byte what upstream stored: `--require-hashes`, `#sha256=` fragments and npm's
`integrity` stay true. HEAD answers with upstream's `Content-Length` (uv probes files with HEAD).
If upstream breaks off mid-file (or is cut at the file deadline), so does the client's transfer:
its body ends short of the length announced, or, with none announced, is aborted (raised into the
server), since chunks that ended would read as the whole file. The download's delivery is then
`failed`, and the reader's record says why (`upstream-failed`).

A file the index must read before it is relayed (a wheel's declared dependencies) is `spool`ed
whole to an anonymous temporary file of bounded size first, then served from there. A file
fetched whole (so, and into the cache's temporary folder) is read no further than it may be
(`whole`): its index page's `size`, the length upstream announced, MAX_INDEX_FILE_BYTES.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable

import httpx
from flask import Response

from domain.limits import MAX_INDEX_FILE_BYTES
from interface.index.delivery import Delivered, metered
from interface.index.upstream import Upstream, UpstreamProblem, bad_gateway, logged, refused_by_upstream, unavailable
from interface.problems import HTTPProblem

CHUNK = 64 * 1024
_KEPT = {k.lower(): k for k in ("Content-Type", "Content-Length", "Last-Modified", "ETag")}


def relay(
    upstream: Upstream,
    method: str,
    url: str,
    delivered: Delivered | None = None,
    broken_off: Callable[[UpstreamProblem], None] | None = None,
) -> Response:
    """`delivered`: called once when the transfer ends (interface.index.delivery); `broken_off`:
    with the upstream's failure, when it breaks the file off (interface.index.access)."""
    response, headers, content_type = open_file(upstream, method, url)
    if method == "HEAD":
        response.close()
        return Response(status=200, headers=headers, content_type=content_type)
    announced = headers.get("Content-Length", "")
    length = int(announced) if announced.isdecimal() else None
    body = metered(_chunks(upstream, response, length is not None, broken_off), delivered, length=length)
    return Response(body, status=200, headers=headers, content_type=content_type, direct_passthrough=True)


def open_file(upstream: Upstream, method: str, url: str):
    """Upstream's answer for a file, its status checked, and the headers relayed with it."""
    response = upstream.open_file("HEAD" if method == "HEAD" else "GET", url, {"Accept-Encoding": "identity"})
    if response.status_code != 200:
        response.close()
        if response.status_code == 404:
            raise HTTPProblem(404, "Not Found", "the upstream has no such file")
        raise refused_by_upstream(response.status_code, "the file")
    headers = {_KEPT[k.lower()]: v for k, v in response.headers.items() if k.lower() in _KEPT}
    content_type = headers.pop("Content-Type", "application/octet-stream")
    headers["Cache-Control"] = "no-store"  # judged per fetch: a shared cache must not answer for us
    if "content-encoding" in response.headers and response.headers["content-encoding"] != "identity":
        headers["Content-Encoding"] = response.headers["content-encoding"]  # relayed as stored
    return response, headers, content_type


class Spooled:
    """A file upstream sent, whole, in an anonymous temporary file (gone when closed)."""

    def __init__(self, file, headers: dict, content_type: str):
        self.file, self.headers, self.content_type = file, headers, content_type

    def response(self, delivered: Delivered | None = None) -> Response:
        """Serve it (the temporary file is closed once served); `delivered` as for `relay`."""
        self.file.seek(0)
        body = metered(_spooled_chunks(self.file), delivered)
        return Response(body, status=200, headers=self.headers, content_type=self.content_type)


def whole(upstream: Upstream, response, url: str, refuse, stated: int | None = None, limit: int | None = None):
    """The chunks of a file fetched whole, none past what it may be: `refuse(limit)` when it is
    longer than `limit` (MAX_INDEX_FILE_BYTES unless told); a 502 when its index page states its
    size (`stated`, PEP 700) and the length upstream announces or sends is another, stopped at the
    first byte past it (an upstream sending gigabytes for a small file fills no disk)."""
    name, limit = url.rsplit("/", 1)[-1], limit or MAX_INDEX_FILE_BYTES
    announced = response.headers.get("content-length", "")
    announced = int(announced) if announced.isdecimal() else None
    if stated is not None and announced is not None and announced != stated:
        raise _unlike_its_page(
            f"the upstream announces {announced} bytes for {name} where its index page gives {stated}"
        )
    if max(stated or 0, announced or 0) > limit:
        raise refuse(limit)
    size = 0
    for chunk in upstream.raw_chunks(response, CHUNK):
        size += len(chunk)
        if stated is not None and size > stated:
            raise _unlike_its_page(f"the upstream sent more than the {stated} bytes its index page gives for {name}")
        if size > limit:
            raise refuse(limit)
        yield chunk
    if stated is not None and size != stated:
        raise _unlike_its_page(f"the upstream sent {size} bytes for {name} where its index page gives {stated}")


def _unlike_its_page(detail: str) -> UpstreamProblem:
    return logged(bad_gateway(f"{detail}, so they are not served"))


def spool(upstream: Upstream, url: str, refuse, stated: int | None = None) -> Spooled:
    """Fetch the whole file into a temporary file, as `whole` reads it."""
    response, headers, content_type = open_file(upstream, "GET", url)
    file = tempfile.TemporaryFile()
    try:
        try:
            size = 0
            for chunk in whole(upstream, response, url, refuse, stated):
                size += len(chunk)
                file.write(chunk)
        except httpx.HTTPError as error:
            raise unavailable(f"the upstream stopped sending the file: {type(error).__name__}") from None
    except BaseException:
        file.close()
        raise
    finally:
        response.close()
    headers["Content-Length"] = str(size)
    return Spooled(file, headers, content_type)


def _spooled_chunks(file):
    try:
        while chunk := file.read(CHUNK):
            yield chunk
    finally:
        file.close()


def _chunks(upstream: Upstream, response, announced: bool, broken_off):
    try:
        yield from upstream.raw_chunks(response, CHUNK)
    except UpstreamProblem as problem:  # broken off, or past the deadline
        if broken_off is not None:
            broken_off(problem)
        if not announced:
            raise  # the server aborts the connection: ending the chunks would announce the file whole
    finally:
        response.close()
