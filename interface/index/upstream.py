"""Fetching from the configured upstream index or registry, safely.

The configured upstream is trusted by the operator (a corporate mirror on a private address is
fine). Any other host an upstream page points at (a CDN, a redirect) is fetched only if the
deployment's egress rules allow its name and every address it resolves to, and the connection
then goes to the address that was judged (no second lookup to rebind). Timeouts are explicit;
an upstream that cannot be reached is a 503, one that answers nonsense a 502: never an allow.
Bodies stream (httpx) so files pass through unchanged and without being held in memory.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

import httpx

from interface.problems import HTTPProblem

CONNECT_SECONDS = 5.0
READ_SECONDS = 30.0
MAX_REDIRECTS = 5
MAX_PAGE_BYTES = 64 * 1024 * 1024  # the largest packuments are tens of MiB
_REDIRECTS = (301, 302, 303, 307, 308)

log = logging.getLogger(__name__)


def unavailable(detail: str) -> HTTPProblem:
    return HTTPProblem(503, "Upstream unavailable", detail, headers={"Retry-After": "5"})


def bad_gateway(detail: str) -> HTTPProblem:
    return HTTPProblem(502, "Bad upstream answer", detail)


def origin(url: str) -> tuple[str, str, int]:
    parts = urlsplit(url)
    return parts.scheme, (parts.hostname or "").lower(), parts.port or (443 if parts.scheme == "https" else 80)


@dataclass(frozen=True)
class Page:
    url: str  # where it was finally found (relative file URLs resolve against this)
    status: int
    content_type: str
    body: bytes
    etag: str | None = None  # upstream's validators, to revalidate a kept copy
    last_modified: str | None = None


class Upstream:
    """One upstream base URL; `judge_egress(url, resolved)` -> the deployment's verdict dict."""

    def __init__(self, base: str, judge_egress: Callable[[str, list[str]], dict]):
        self.base = base if base.endswith("/") else base + "/"
        self._origin = origin(self.base)
        self._judge = judge_egress
        timeout = httpx.Timeout(READ_SECONDS, connect=CONNECT_SECONDS)
        self._client = httpx.Client(
            timeout=timeout,
            follow_redirects=False,
            trust_env=False,
            limits=httpx.Limits(max_connections=64, max_keepalive_connections=16),
        )

    def close(self) -> None:
        self._client.close()

    def url(self, path: str) -> str:
        return urljoin(self.base, path)

    def allows_host(self, url: str) -> bool:
        """Without resolving: may a file at this URL be offered at all? (checked again on fetch)"""
        return origin(url) == self._origin or bool(self._judge(url, [])["allowed"])

    # -- pages ------------------------------------------------------------------------------
    def page(self, url: str, accept: str, validators: dict | None = None) -> Page:
        """GET a page into memory (bounded); `validators` (If-None-Match, If-Modified-Since) may
        get a 304 with no body. Kept by the caller (interface.index.pages), not here."""
        response = self.open("GET", url, {"Accept": accept, **(validators or {})})
        try:
            body = bytearray()
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > MAX_PAGE_BYTES:
                    raise bad_gateway(f"the upstream page at {url} is larger than {MAX_PAGE_BYTES} bytes")
        except httpx.HTTPError as error:
            raise unavailable(f"the upstream stopped answering: {type(error).__name__}") from None
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

    # -- streaming --------------------------------------------------------------------------
    def open(self, method: str, url: str, headers: dict | None = None) -> httpx.Response:
        """Send and return the streaming response (the caller closes it); redirects followed,
        each hop judged. Raises 503 when the upstream cannot be reached, 502 on a bad answer."""
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
        except httpx.TimeoutException:
            raise unavailable(f"the upstream did not answer in time ({urlsplit(url).hostname})") from None
        except httpx.HTTPError as error:
            log.warning("upstream %s unreachable: %r", urlsplit(url).hostname, error)
            raise unavailable(f"the upstream cannot be reached ({urlsplit(url).hostname})") from None

    def _request(self, method: str, url: str, headers: dict) -> httpx.Request:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise bad_gateway(f"the upstream pointed at {url!r}, which is not an http(s) URL")
        if origin(url) == self._origin:
            return self._client.build_request(method, url, headers=headers)
        address = self._judged_address(url, parts)
        host = f"[{address}]" if ":" in address else address
        netloc = f"{host}:{parts.port}" if parts.port else host
        pinned = parts._replace(netloc=netloc).geturl()
        headers = {**headers, "Host": parts.netloc.rpartition("@")[2]}
        return self._client.build_request(method, pinned, headers=headers, extensions={"sni_hostname": parts.hostname})

    def _judged_address(self, url: str, parts) -> str:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        try:
            found = socket.getaddrinfo(parts.hostname, port, type=socket.SOCK_STREAM)
        except OSError:
            raise unavailable(f"the file host {parts.hostname} does not resolve") from None
        addresses = list(dict.fromkeys(info[4][0] for info in found))
        verdict = self._judge(url, addresses)
        if not verdict["allowed"]:
            raise HTTPProblem(
                403,
                "File host refused",
                f"the upstream keeps this file on {parts.hostname}, which the egress rules "
                f"refuse ({verdict['reason']})",
            )
        return addresses[0]
