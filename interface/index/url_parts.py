"""Where an upstream's URL points (`origin`), what a page's link resolves to (`resolved`) and
the name a URL ends in (`last_segment`), exactly as `urllib.parse` says, without parsing each
link afresh.

A project page is read link by link: each file's URL resolved against the page, then its host
checked. With `urljoin` and `urlsplit` (whose cache holds 128 URLs, and no two files share one)
that was most of a cold page's CPU: 256 ms for a page of 2,000 files, ~130 µs a file, where
PyPI keeps pages of tens of thousands. The shapes nearly every index writes are recognised by
one regular expression each, and for those the answer is worked out as `urllib.parse` would
work it out (the reasoning beside each); anything else goes to `urllib.parse` itself, so no
link reads differently for being unusual. `tests/interface/test_index_url_parts.py` holds the
two to the same answers, including their refusals.
"""

from __future__ import annotations

import re
from functools import lru_cache
from urllib.parse import urljoin, urlsplit

_DEFAULT_PORTS = {"http": 80, "https": 443}
# A lower-case http(s) scheme, a host of letters, digits, dots and hyphens, an optional port of
# digits, then the end or the path, query or fragment. `urlsplit` reads exactly this netloc (it
# ends at the first `/`, `?` or `#`; no `@`, brackets, `%` or non-ASCII in it to treat apart),
# and nothing it strips (leading blanks and C0 controls, tabs and newlines) can come before the
# netloc's end. `(?=[/?#]|$)`: what follows is not read for the origin.
_ORIGIN = re.compile(r"(https?)://([A-Za-z0-9.-]+)(?::([0-9]{1,5}))?(?=[/?#]|$)")
# An absolute link of a plain shape: the origin's, then a path of RFC 3986 path characters
# without `;` (urlparse's parameters), `?` or `#`. `urljoin` gives such a URL back unchanged: a
# scheme other than the base's returns it as it is, and the same scheme with a netloc returns
# `urlunparse(urlparse(url))`, which writes back the lower-case scheme, the netloc and the path.
_ABSOLUTE = re.compile(r"https?://[A-Za-z0-9.-]+(?::[0-9]{1,5})?(?:/[A-Za-z0-9._~!$&'()*+,=:@%/-]*)?")
# A relative path: segments of path characters without `:` (so no scheme), `;`, `?` or `#`, not
# starting with `/`. Its last segment, when not `.` or `..`, is taken over by `urljoin` as it
# is: the link resolves to what its directory (all before that segment) resolves to, plus it.
_RELATIVE = re.compile(r"(?:[A-Za-z0-9._~!$&'()*+,=@%-]+/)*[A-Za-z0-9._~!$&'()*+,=@%-]+")


def origin(url: str) -> tuple[str, str, int]:
    """(scheme, lower-case host, port) as `urlsplit` reads them (ValueError where it refuses)."""
    found = _ORIGIN.match(url)
    if found is not None:
        scheme, host, port = found.groups()
        if port is None:
            return scheme, host.lower(), default_port(scheme)
        number = int(port)
        if number <= 65535:  # else urlsplit's own ValueError, below
            return scheme, host.lower(), number or default_port(scheme)  # port 0 reads as none
    return _split_origin(url)


def default_port(scheme: str) -> int:
    """The port a URL of this scheme reaches when it names none (80 for a scheme the index does
    not fetch, as it has always read one)."""
    return _DEFAULT_PORTS.get(scheme, 80)


def last_segment(url: str) -> str:
    """The last segment of the URL's path, as `urlsplit(url).path` ends: for a link of the plain
    absolute shape (no query, fragment or parameters), what follows its last `/` once past the
    netloc."""
    if _ABSOLUTE.fullmatch(url):
        head, _, last = url.rpartition("/")
        return last if len(head) > url.index("//") + 1 else ""  # `https://host`: no path at all
    return urlsplit(url).path.rsplit("/", 1)[-1]


def _split_origin(url: str) -> tuple[str, str, int]:
    parts = urlsplit(url)
    return parts.scheme, (parts.hostname or "").lower(), parts.port or default_port(parts.scheme)


def resolved(url: str, base: str = "") -> str | None:
    """`url` resolved against `base`, when it is a URL the index can read (`origin`); None for a
    bracketed host left open, or a port out of range or not a number (which parse, and raise only
    when the port is read): an upstream's page is checked with this as it is read."""
    if _ABSOLUTE.fullmatch(url):
        try:
            if base:
                urlsplit(base)  # urljoin parses the base too (cached: a page's links share it)
            origin(url)
        except ValueError:
            return None
        return url
    if base and _ORIGIN.match(base) and _RELATIVE.fullmatch(url):  # against a base with a host
        directory, _, last = url.rpartition("/")
        if last not in (".", ".."):
            found = _resolved_directory(base, directory + "/" if directory else "")
            return None if found is None else found + last
    return _resolved(url, base)


@lru_cache(maxsize=1024)
def _resolved_directory(base: str, directory: str) -> str | None:
    """Where the links of one directory resolve, ending in `/` (the base's own directory when
    `directory` is empty): what `urljoin` makes of the directory's segments does not depend on
    the last segment after them."""
    if not directory:  # `urljoin(base, "")` is the base itself, not its directory
        found = _resolved("x", base)
        return None if found is None else found[:-1]
    return _resolved(directory, base)


def _resolved(url: str, base: str) -> str | None:
    try:
        found = urljoin(base, url)
        _split_origin(found)
    except ValueError:
        return None
    return found
