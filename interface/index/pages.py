"""Upstream pages and packuments as the index reads them: kept on disk, fresh for a short while,
then revalidated with upstream's `ETag`/`Last-Modified`, and served stale when upstream fails.

A page is used as kept for `seconds` after it was last validated; after that upstream is asked
with the validators it gave (a 304 renews the kept copy without a transfer). When upstream
cannot be reached, times out, answers 5xx or nonsense, or is not trusted, the kept copy is used,
however old (stale-if-error), and the log says so. Nothing here judges: the callers judge every
request before they ask for a page, so a page kept from before a policy change is still refused
when the policy refuses it, and a refused name never reaches upstream.

Each kept page carries a `revision` (a digest of its body): what an answer built from it
depends on, with the policy version (the judged root listing is reused per revision).

While a page is fresh, each worker remembers what it read of it (its revision and where its body
lies, never the body): a page asked for again within its freshness is answered without touching
the disk, so a judged answer already rendered for that revision (interface.index.answers) costs
no I/O at all. Its body is read only to render a new answer.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from application.cache import DiskCache, StoredPage
from application.lru import SizedLru, weigh
from interface.index.upstream import Page, Upstream, bad_gateway, logged
from interface.problems import HTTPProblem

log = logging.getLogger(__name__)
# What Upstream raises when it fails: a bad or untrusted answer (502), unreachable (503), too slow (504).
UPSTREAM_FAILED = (502, 503, 504)
# What upstream may answer when it fails rather than when the page is gone: refusing us, or asking
# us to slow down. A 404 or 410 says the project is gone: passed on, never served stale.
FAILING = (401, 403, 429)
# What a page's reader says of a 200 (body, content type): None when it is a page of its kind,
# else what is wrong. Nonsense is a failure: never kept, the copy kept before served instead.
Readable = Callable[[bytes, str], "str | None"]


@dataclass(frozen=True)
class Fetched:
    """A page as the index uses it: upstream's answer, kept or just fetched."""

    url: str
    status: int
    content_type: str
    revision: str
    stored: StoredPage | None = None
    fetched: bytes | None = None
    again: Callable[[], Fetched] | None = None  # the page asked for anew, if its kept body is gone

    @property
    def body(self) -> bytes:
        if self.fetched is not None:
            return self.fetched
        try:
            return self.stored.body()
        except FileNotFoundError:  # evicted (or rewritten) since it was read: ask again
            if self.again is None:
                raise
            return self.again().body


class Pages:
    def __init__(self, upstream: Upstream, cache: DiskCache, seconds: int, memory: FreshPages):
        """`memory`: what the worker remembers of fresh pages (`fresh_pages`), shared by its upstreams."""
        self.upstream, self.cache, self.seconds = upstream, cache, seconds
        self.memory = memory

    def get(self, url: str, accept: str, readable: Readable) -> Fetched:
        """The page, kept if fresh, else from upstream (revalidated), else kept if upstream fails
        or answers what `readable` finds is not a page of its kind."""
        key = _key(url, accept)
        remembered = self.memory.get(key)
        if remembered is not None and time.monotonic() < remembered[0]:
            return remembered[1]
        found = self._get(key, url, accept, readable)
        if found.stored is not None:
            found = replace(found, again=self._again(key, readable))
            left = self.seconds - (time.time() - found.stored.meta["validated"])
            if left > 0:
                self._remember(key, time.monotonic() + left, replace(found, fetched=None))
        return found

    def _again(self, key: str, readable: Readable) -> Callable[[], Fetched]:
        """The page fetched whole from upstream: its kept copy went (evicted, or rewritten by
        another worker's revalidation) between reading its header and its body."""

        def again() -> Fetched:
            self.memory.pop(key)
            url, accept = _parts(key)
            return self._get(key, url, accept, readable, kept=False)

        return again

    def _remember(self, key: str, until: float, page: Fetched) -> None:
        self.memory.put(key, (until, page))

    def _get(self, key: str, url: str, accept: str, readable: Readable, kept: bool = True) -> Fetched:
        stored = self.cache.page(key) if kept else None
        if stored is not None and time.time() - stored.meta["validated"] < self.seconds:
            return _kept(stored)
        try:
            page = self.upstream.page(url, accept, _validators(stored))
        except HTTPProblem as error:
            if stored is None or error.status not in UPSTREAM_FAILED:
                raise
            log.warning("upstream unavailable (%s): serving the copy of %s kept before", error.detail, url)
            return _kept(stored)
        if page.status == 304 and stored is not None:
            try:
                body = stored.body()
            except FileNotFoundError:  # rewritten by another worker meanwhile (or evicted)
                return self._get(key, url, accept, readable, kept=False)
            return self._keep(key, page, stored.meta, body)
        wrong = readable(page.body, page.content_type) if page.status == 200 else None
        if (page.status >= 500 or page.status in FAILING or wrong) and stored is not None:
            said = f"{page.status}: {wrong}" if wrong else page.status
            log.warning("upstream answered %s: serving the copy of %s kept before", said, url)
            return _kept(stored)
        if wrong:
            raise logged(bad_gateway(wrong))
        if page.status == 200:
            return self._keep(key, page, {}, page.body)
        return Fetched(page.url, page.status, page.content_type, _revision(page.body), fetched=page.body)

    def kept(self, url: str, *accepts: str) -> Fetched | None:
        """A copy kept of this page in any of these shapes, however old; upstream is not asked."""
        for accept in accepts:
            stored = self.cache.page(_key(url, accept))
            if stored is not None:
                return _kept(stored)
        return None

    def _keep(self, key: str, page: Page, before: dict, body: bytes) -> Fetched:
        meta = {
            "url": before.get("url", page.url),
            "content_type": before.get("content_type", page.content_type),
            "etag": page.etag or before.get("etag"),
            "last_modified": page.last_modified or before.get("last_modified"),
            "revision": before.get("revision") or _revision(body),
            "validated": time.time(),
        }
        stored = self.cache.put_page(key, meta, body)  # None: larger than the cache may keep
        return Fetched(meta["url"], 200, meta["content_type"], meta["revision"], stored, body)


# A remembered page's objects that `weigh` does not look into: the Fetched, its StoredPage, the
# Path of its body and its `again` closure (with it, an entry weighs 0.8-1.0x what tracemalloc finds).
PAGE_OBJECTS_BYTES = 256


FreshPages = SizedLru[str, tuple[float, Fetched]]  # key -> (fresh until, the page without its body)


def fresh_pages(limit: int) -> FreshPages:
    return SizedLru(limit, _weight)


def _weight(key: str, remembered: tuple[float, Fetched]) -> int:
    page = remembered[1]
    meta = page.stored.meta if page.stored else None
    return PAGE_OBJECTS_BYTES + weigh(key, remembered[0], page.url, page.content_type, page.revision, meta)


def _key(url: str, accept: str) -> str:
    return f"{accept}|{url}"


def _parts(key: str) -> tuple[str, str]:
    accept, _, url = key.partition("|")
    return url, accept


def _kept(stored: StoredPage) -> Fetched:
    meta = stored.meta
    return Fetched(meta["url"], 200, meta["content_type"], meta["revision"], stored)


def _validators(stored: StoredPage | None) -> dict:
    if stored is None:
        return {}
    found = {"If-None-Match": stored.meta.get("etag"), "If-Modified-Since": stored.meta.get("last_modified")}
    return {k: v for k, v in found.items() if v}


def _revision(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()[:32]
