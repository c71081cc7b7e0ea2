"""Fetching from the configured upstream index or registry, safely.

The configured upstream is trusted by the operator (a corporate mirror on a private address is
fine). Any other host an upstream page points at (a CDN, a redirect) is fetched only if the
deployment's egress rules allow its name and every address it resolves to, and the connection
then goes to the address that was judged (no second lookup to rebind), unless the operator
vouches for that host (RUNCODE_POLICY_UPSTREAM_FILE_HOSTS). Through an upstream proxy the
addresses are still judged, but the proxy makes the connection.

TLS trusts the system's store plus the operator's bundle. Every fetch has a total deadline (a
page's, a file's), enforced on every socket operation, so an upstream that trickles a byte at a
time cannot hold a request thread past it. An upstream that cannot be reached is a 503, one that
answers nonsense or is not trusted a 502, one past its deadline a 504: never an allow. Each says
why in its detail (and in the reason phrase, which granian replaces by the standard one), and is one
line in the log. Bodies stream (httpx) so files pass through unchanged and without being held in
memory.
"""

from __future__ import annotations

import logging
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import urljoin, urlsplit

import httpcore
import httpx

from domain.egress.allowlist import host_matches
from domain.limits import MAX_LOOKUP_ADDRESSES
from interface.index.url_parts import default_port, origin
from interface.problems import HTTPProblem
from interface.settings import (
    CA_BUNDLE_VAR,
    FILE_DEADLINE_VAR,
    FILE_HOSTS_VAR,
    PAGE_DEADLINE_VAR,
    PROXY_VAR,
    UpstreamOptions,
)

CONNECT_SECONDS = 5.0
READ_SECONDS = 30.0
MAX_REDIRECTS = 5
MAX_PAGE_BYTES = 64 * 1024 * 1024  # the largest packuments are tens of MiB
_REDIRECTS = (301, 302, 303, 307, 308)

log = logging.getLogger(__name__)


# What a failed upstream fetch answers: a bad answer, an outage, too slow (the functions below).
FETCH_FAILURES = (502, 503, 504)


class UpstreamProblem(HTTPProblem):
    """The upstream failed a fetch (not a refusal of the index's own): the index records it for
    the run with its detail (interface.index.access), so the gate can print why."""


def unavailable(detail: str) -> UpstreamProblem:
    return UpstreamProblem(503, "Upstream unavailable", detail, headers={"Retry-After": "5"}, phrase=detail)


def bad_gateway(detail: str) -> UpstreamProblem:
    return UpstreamProblem(502, "Bad upstream answer", detail, phrase=detail)


def refused_by_upstream(status: int, what: str) -> UpstreamProblem:
    """Upstream's own answer `status` (not 200, not 404) for `what`, and its one line in the log:
    a 5xx is an outage (503, retry shortly), anything else a bad answer (502)."""
    detail = f"the upstream answered {status} for {what}"
    return logged(unavailable(detail) if status >= 500 else bad_gateway(detail))


def logged(problem: UpstreamProblem) -> UpstreamProblem:
    """An upstream failure, with its one line in the service's log."""
    log.warning("upstream fetch failed: %s", problem.detail)
    return problem


def too_slow(detail: str) -> UpstreamProblem:
    return UpstreamProblem(504, "Upstream too slow", detail, headers={"Retry-After": "5"}, phrase=detail)


@dataclass(frozen=True)
class Page:
    url: str  # where it was finally found (relative file URLs resolve against this)
    status: int
    content_type: str
    body: bytes
    etag: str | None = None  # upstream's validators, to revalidate a kept copy
    last_modified: str | None = None


@lru_cache(maxsize=4096)
def _joined(base: str, path: str) -> str:
    # Asked for on every page request (urljoin's parsing was 3 % of a cached page's time).
    return urljoin(base, path)


class Upstream:
    """One upstream base URL; `judge_egress(url, resolved)` -> the deployment's verdict dict."""

    def __init__(
        self, base: str, judge_egress: Callable[[str, list[str]], dict], options: UpstreamOptions | None = None
    ):
        self.base = base if base.endswith("/") else base + "/"
        self._origin = origin(self.base)
        self._judge = judge_egress
        self.options = options or UpstreamOptions()
        transport = httpx.HTTPTransport(
            verify=self.options.tls_context(),
            proxy=self.options.proxy,
            trust_env=False,  # the operator's settings alone say how upstream is reached
            limits=httpx.Limits(max_connections=64, max_keepalive_connections=16),
        )
        # Every socket operation of this pool honours the calling thread's deadline (httpx has
        # no total timeout: its read timeout restarts with every byte).
        transport._pool._network_backend = _DeadlineBackend(transport._pool._network_backend)
        self._client = httpx.Client(
            transport=transport,
            timeout=httpx.Timeout(READ_SECONDS, connect=CONNECT_SECONDS),
            follow_redirects=False,
            trust_env=False,
        )

    def close(self) -> None:
        self._client.close()

    def url(self, path: str) -> str:
        return _joined(self.base, path)

    def allows_host(self, url: str) -> bool:
        """Without resolving: may a file at this URL be offered at all? (checked again on fetch)"""
        return self.refused_host(url) is None

    def refused_host(self, url: str) -> str | None:
        """Without resolving: why a file at this URL is never offered (its host refused), or None."""
        if self._trusted(url):
            return None
        verdict = self._judge(url, [])
        return None if verdict["allowed"] else _host_refused(url, verdict["reason"])

    def _trusted(self, url: str) -> bool:
        """The upstream itself, or a file host the operator vouches for: fetched as configured."""
        found = origin(url)
        return found == self._origin or host_matches(found[1].rstrip("."), self.options.file_hosts)

    # -- pages ------------------------------------------------------------------------------
    def page(self, url: str, accept: str, validators: dict | None = None) -> Page:
        """GET a page into memory (bounded, within the page deadline); `validators`
        (If-None-Match, If-Modified-Since) may get a 304 with no body. Kept by the caller
        (interface.index.pages), not here."""
        with self._deadline(self.options.page_deadline, "a page", PAGE_DEADLINE_VAR, url):
            response = self.open("GET", url, {"Accept": accept, **(validators or {})})
            try:
                body = bytearray()
                for chunk in response.iter_bytes():
                    body += chunk
                    if len(body) > MAX_PAGE_BYTES:
                        raise bad_gateway(f"the upstream page at {url} is larger than {MAX_PAGE_BYTES} bytes")
            except httpx.HTTPError as error:
                raise self._failure(error, url) from None
            finally:
                response.close()
        headers = response.headers
        return Page(
            str(response.url),
            response.status_code,
            headers.get("content-type", ""),
            bytes(body),
            headers.get("etag"),
            headers.get("last-modified"),
        )

    # -- files ------------------------------------------------------------------------------
    def open_file(self, method: str, url: str, headers: dict | None = None) -> httpx.Response:
        """`open` for a file: the file deadline starts now and covers reading it (`raw_chunks`)."""
        with self._deadline(self.options.file_deadline, "a file", FILE_DEADLINE_VAR, url) as until:
            response = self.open(method, url, headers)
        response.extensions["deadline"] = until
        return response

    def raw_chunks(self, response: httpx.Response, size: int) -> Iterator[bytes]:
        """The file's bytes as sent, within the deadline `open_file` set (re-established for
        each chunk: the server may iterate a body on another thread). Errors as problems."""
        url = str(response.request.url)
        iterator = response.iter_raw(size)
        while True:
            until = response.extensions.get("deadline")
            with _within(until, self.options.file_deadline, "a file", FILE_DEADLINE_VAR, url):
                try:
                    chunk = next(iterator, None)
                except httpx.HTTPError as error:
                    raise self._failure(error, url) from None
            if chunk is None:
                return
            yield chunk

    # -- deadlines ---------------------------------------------------------------------------
    def _deadline(self, seconds: float, what: str, setting: str, url: str):
        """From now: `seconds` for the whole fetch (an enclosing deadline, if sooner, stays)."""
        enclosing = getattr(_thread_deadline, "until", None)
        until = time.monotonic() + seconds
        return _within(until if enclosing is None else min(enclosing, until), seconds, what, setting, url)

    # -- streaming --------------------------------------------------------------------------
    def open(self, method: str, url: str, headers: dict | None = None) -> httpx.Response:
        """Send and return the streaming response (the caller closes it); redirects followed,
        each hop judged. Raises 503 when the upstream cannot be reached, 502 on a bad answer or
        an untrusted certificate, 504 past the deadline of the enclosing fetch."""
        for _ in range(MAX_REDIRECTS + 1):
            response = self._send(method, url, headers or {})
            if response.status_code not in _REDIRECTS or "location" not in response.headers:
                return response
            response.close()
            url = urljoin(url, response.headers["location"])
        raise bad_gateway(f"the upstream redirected more than {MAX_REDIRECTS} times")

    def _send(self, method: str, url: str, headers: dict) -> httpx.Response:
        request = self._request(method, url, headers)
        try:
            return self._client.send(request, stream=True)
        except httpx.HTTPError as error:
            raise self._failure(error, url) from None

    def _failure(self, error: httpx.HTTPError, url: str) -> HTTPProblem:
        """The problem that says why a fetch failed, and its one line in the log."""
        if _past_deadline():
            raise DeadlinePassed from None
        host = urlsplit(url).hostname
        untrusted = _cause(error, ssl.SSLCertVerificationError)
        if untrusted is not None:
            why = untrusted.verify_message or str(untrusted)
            problem = bad_gateway(f"upstream TLS certificate not trusted: set {CA_BUNDLE_VAR} ({host}: {why})")
        elif isinstance(error, httpx.ProxyError):
            problem = bad_gateway(f"the upstream proxy refused to reach {host}: {error} (check {PROXY_VAR})")
        elif isinstance(error, httpx.TimeoutException):
            problem = unavailable(f"the upstream did not answer in time ({host})")
        elif isinstance(error, httpx.ConnectError) and self.options.proxy:
            proxy = urlsplit(self.options.proxy).hostname
            problem = unavailable(f"the upstream proxy {proxy} cannot be reached ({error}; check {PROXY_VAR})")
        elif isinstance(error, httpx.ConnectError):
            problem = unavailable(
                f"the upstream cannot be reached ({host}: {error}); if it is reached through a proxy, set {PROXY_VAR}"
            )
        else:
            problem = unavailable(f"the upstream stopped answering ({host}: {type(error).__name__})")
        return logged(problem)

    def _request(self, method: str, url: str, headers: dict) -> httpx.Request:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise bad_gateway(f"the upstream pointed at {url!r}, which is not an http(s) URL")
        if self._trusted(url):
            return self._client.build_request(method, url, headers=headers)
        address = self._judged_address(url, parts)
        if self.options.proxy:  # the proxy connects (to what it resolves): judged, not pinned
            return self._client.build_request(method, url, headers=headers)
        host = f"[{address}]" if ":" in address else address
        netloc = f"{host}:{parts.port}" if parts.port else host
        pinned = parts._replace(netloc=netloc).geturl()
        headers = {**headers, "Host": parts.netloc.rpartition("@")[2]}
        return self._client.build_request(method, pinned, headers=headers, extensions={"sni_hostname": parts.hostname})

    def _judged_address(self, url: str, parts) -> str:
        port = parts.port or default_port(parts.scheme)
        try:
            found = socket.getaddrinfo(parts.hostname, port, type=socket.SOCK_STREAM)
        except OSError:
            raise unavailable(f"the file host {parts.hostname} does not resolve") from None
        addresses = list(dict.fromkeys(info[4][0] for info in found))
        if len(addresses) > MAX_LOOKUP_ADDRESSES:  # fail closed: an answer too long to judge whole
            raise unavailable(f"the file host {parts.hostname} resolves to more than {MAX_LOOKUP_ADDRESSES} addresses")
        verdict = self._judge(url, addresses)
        if not verdict["allowed"]:
            raise UpstreamProblem(403, "File host refused", _host_refused(url, verdict["reason"]))
        return addresses[0]


def _host_refused(url: str, reason: str) -> str:
    return (
        f"the upstream keeps files on {urlsplit(url).hostname}, which the egress rules refuse ({reason}); "
        f"to fetch them as the upstream itself, set {FILE_HOSTS_VAR}"
    )


# -- the deadline every socket operation honours -------------------------------------------------
class DeadlinePassed(Exception):
    """The calling thread's upstream deadline passed during a socket operation."""


_thread_deadline = threading.local()  # .until: a time.monotonic() instant, or None


@contextmanager
def _within(until: float | None, seconds: float, what: str, setting: str, url: str):
    """Run the block under the deadline `until`; past it, the 504 that names the limit."""
    previous = getattr(_thread_deadline, "until", None)
    _thread_deadline.until = until
    try:
        yield until
    except DeadlinePassed:
        host = urlsplit(url).hostname
        log.warning("upstream fetch failed: %s took longer than %g s (%s)", what, seconds, host)
        raise too_slow(
            f"the upstream took longer than {seconds:g} s to send {what} ({host}); the limit is {setting}"
        ) from None
    finally:
        _thread_deadline.until = previous


def _past_deadline() -> bool:
    until = getattr(_thread_deadline, "until", None)
    return until is not None and time.monotonic() >= until


def _clamped(timeout: float | None) -> float | None:
    """The operation's own timeout, cut to what is left of the thread's deadline."""
    until = getattr(_thread_deadline, "until", None)
    if until is None:
        return timeout
    left = until - time.monotonic()
    if left <= 0:
        raise DeadlinePassed
    return left if timeout is None else min(timeout, left)


def _cause(error: BaseException, kind: type) -> BaseException | None:
    seen = 0
    while error is not None and seen < 10:
        if isinstance(error, kind):
            return error
        error, seen = error.__cause__ or error.__context__, seen + 1
    return None


class _DeadlineStream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream):
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _clamped(timeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _clamped(timeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context, server_hostname=None, timeout=None) -> httpcore.NetworkStream:
        return _DeadlineStream(self._inner.start_tls(ssl_context, server_hostname, _clamped(timeout)))

    def get_extra_info(self, info: str):
        return self._inner.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    def __init__(self, inner: httpcore.NetworkBackend):
        self._inner = inner

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        stream = self._inner.connect_tcp(host, port, _clamped(timeout), local_address, socket_options)
        return _DeadlineStream(stream)

    def connect_unix_socket(self, path, timeout=None, socket_options=None):
        return _DeadlineStream(self._inner.connect_unix_socket(path, _clamped(timeout), socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)
