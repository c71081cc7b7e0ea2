"""Files the index serves from its cache: verified, then served with `ETag`, 304, `Range` (206).

A file whose index page gives a digest (PyPI `hashes`, npm `integrity`/`shasum`) is fetched from
upstream whole into the cache's temporary directory, checked against every digest given, kept
under the strongest one, and only then served: bytes that do not match are never sent (502).
Once kept, it is served without upstream (upstream may be down), after being checked again
against the page's digests: a kept file altered on disk is dropped and fetched again.

The bytes behind a digest never change, so files are `immutable` with a long `max-age`, and
the `ETag` is the digest. They are `private`, though: the policy is judged before every serve
(a project denied since is refused), and a shared cache in front of the index (a CDN, a caching
proxy) would answer for the index without asking it. `private` lets the client's own cache
(pip's, npm's) keep the file, and forbids shared caches to.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from flask import Response, request
from werkzeug.http import parse_etags, parse_range_header
from werkzeug.wsgi import ClosingIterator, wrap_file

from application.cache import Digests, DiskCache
from application.index.deliveries import Delivered
from domain.delivery import CACHED, SERVED
from interface.index.delivery import metered
from interface.index.streaming import CHUNK, open_file, relay, whole
from interface.index.upstream import Upstream, bad_gateway, logged

log = logging.getLogger(__name__)
IMMUTABLE_SECONDS = 365 * 24 * 60 * 60
CACHE_CONTROL = f"private, max-age={IMMUTABLE_SECONDS}, immutable"
MEDIA = "application/octet-stream"


@dataclass
class Verified:
    """A file whose bytes matched the page's digests, open at its start."""

    file: object
    size: int
    digests: Digests
    cached: bool  # served from the cache (else fetched for this request)
    temporary: bool = False  # not kept (larger than the cache may hold): removed once served

    def close(self) -> None:
        if self.temporary:
            DiskCache.forget(self.file)
        else:
            self.file.close()


def cached(cache: DiskCache, digests: Digests) -> Verified | None:
    """The kept file, checked; None when there is none or it no longer matches (then dropped)."""
    file = cache.open_file(digests)
    if file is None:
        return None
    if digests.check(file):
        file.seek(0, 2)
        size = file.tell()
        file.seek(0)
        return Verified(file, size, digests, cached=True)
    file.close()
    cache.discard_file(digests)
    log.warning("dropped a kept file that no longer matches its %s digest %s", digests.algorithm, digests.hex)
    return None


def obtain(
    upstream: Upstream,
    cache: DiskCache,
    url: str,
    digests: Digests,
    stated: int | None = None,
    limit: int | None = None,
    refuse=None,
):
    """The file, verified: kept, else fetched whole (`streaming.whole`: no longer than `stated`,
    the page's `size`, nor than `limit`), checked and kept. 502 when upstream's bytes do not
    match; `refuse(limit)` (default a 502) past `limit`."""
    found = cached(cache, digests)
    if found is not None:
        return found
    refuse = refuse or _too_large
    response, _, _ = open_file(upstream, "GET", url)
    temporary = cache.temporary()
    try:
        hashers, size = digests.hashers(), 0
        # within the file deadline; a broken transfer is the upstream's failure, logged (raw_chunks)
        for chunk in whole(upstream, response, url, refuse, stated, limit):
            size += len(chunk)
            temporary.write(chunk)
            for hasher in hashers.values():
                hasher.update(chunk)
        if not digests.matches(hashers):
            raise logged(
                bad_gateway(
                    f"the upstream's bytes for {url.rsplit('/', 1)[-1]} do not match the {digests.algorithm} "
                    "digest its index page gives, so they are not served"
                )
            )
        kept = cache.keep(temporary, digests)
    except BaseException:
        DiskCache.forget(temporary)
        raise
    finally:
        response.close()
    temporary.seek(0)
    return Verified(temporary, size, digests, cached=False, temporary=not kept)


def _too_large(limit: int):
    return logged(bad_gateway(f"the upstream file is larger than {limit} bytes, the most the index fetches"))


def serve(verified: Verified, delivered: Delivered | None = None) -> Response:
    """The verified file, whole (200), a range of it (206) or not modified (304); what was sent is
    reported to `delivered` (interface.index.delivery), `cached` when the bytes were kept before.
    A 304 sends nothing and reports nothing: the client holds these very bytes already."""
    verified.file.seek(0)
    response = Response(wrap_file(request.environ, verified.file, CHUNK), mimetype=MEDIA, direct_passthrough=True)
    response.content_length = verified.size
    response.set_etag(verified.digests.hex)
    response.headers["Cache-Control"] = CACHE_CONTROL
    environ = conditional_environ(request.environ, verified.digests.hex, verified.size)
    try:
        response = response.make_conditional(environ, accept_ranges=True, complete_length=verified.size)
    except BaseException:  # a range it cannot satisfy (416): this body is never sent
        verified.close()
        raise
    if response.status_code == 304:
        delivered = None
    # A direct-passthrough body is what the server closes (not the response): closing it closes
    # the file, and removes it when it was not kept.
    response.response = ClosingIterator(
        metered(response.response, delivered, CACHED if verified.cached else SERVED), verified.close
    )
    return response


def head(upstream: Upstream, cache: DiskCache, url: str, digests: Digests) -> Response:
    """A HEAD of a file whose page gives a digest: the kept copy's, else upstream's HEAD relayed
    (no byte fetched) with the headers its GET would carry once verified: the digest as `ETag`,
    ranges, the cache's lifetime."""
    verified = cached(cache, digests)
    if verified is not None:
        return serve(verified)
    relayed = relay(upstream, "HEAD", url)
    relayed.headers.pop("Last-Modified", None)
    relayed.set_etag(digests.hex)
    relayed.headers["Cache-Control"] = CACHE_CONTROL
    relayed.headers["Accept-Ranges"] = "bytes"
    relayed.mimetype = MEDIA
    return relayed


def conditional_environ(environ: dict, etag: str, length: int) -> dict:
    """The request as the conditional answer should read it (RFC 9110), where werkzeug would
    answer 416 for no good reason: a `Range` that does not parse, of a unit other than bytes, or of
    several ranges (werkzeug answers one only) is ignored, the whole file sent (§14.2: a server may
    ignore any); a suffix longer than the file asks for all of it (§14.1.3), a 206 of every byte;
    and a matching `If-None-Match` is a 304 whatever range is asked (§13.2.2: it is evaluated
    before `Range`). A range that starts past the end is still 416, as it must be."""
    if "HTTP_RANGE" not in environ:
        return environ
    asked = parse_range_header(environ["HTTP_RANGE"])
    not_modified = parse_etags(environ.get("HTTP_IF_NONE_MATCH")).contains_weak(etag)
    if asked is None or asked.units != "bytes" or len(asked.ranges) != 1 or not_modified:
        return {k: v for k, v in environ.items() if k != "HTTP_RANGE"}
    start, _ = asked.ranges[0]
    if start < -length:  # bytes=-N, N past the length: the whole representation
        return {**environ, "HTTP_RANGE": "bytes=0-"}
    return environ
