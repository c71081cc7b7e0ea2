"""What a Node client reads as a URL in a lockfile, and where that URL fetches from.

pnpm (Rust's `url`) and yarn 4 (`new URL`) read a URL as the WHATWG URL standard does, which
is not always how it looks: a tab or line break anywhere in it is dropped, a special scheme
(http, https, ws, wss, ftp) may be written in any case and need not be followed by `//`
(`http:host/x`, `HTTP:/host/x` and `http:\\host/x` all fetch from `host`), a default port is no
port, and `.` and `..` path segments are resolved. So a lockfile is searched for whatever such a
parser takes for an absolute URL, and each one is compared, read as the parser reads it, with
the run's registry read the same way.

Standard library only, like the whole gate.
"""

from __future__ import annotations

import re

# WHATWG's special schemes, with the port each one means when none is written; its sixth,
# `file:`, is a local source, refused as one (project.NON_REGISTRY_SOURCE).
DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443, "ftp": 21}
# What a lockfile value holds: a space, a quote, `,` `}` `]` end one (but an IPv6 host's `]`).
VALUE = r"(?:\[[0-9A-Fa-f:.]*\]|[^\s\"',}\]])"
# A URL as a client reads one: a special scheme, in any case, and whatever follows its colon,
# slashes or none; or any other scheme (from its first letter) followed by `//` (`git+ssh://`).
SPECIAL = "|".join(DEFAULT_PORTS)
URL = re.compile(rf"(?:(?i:{SPECIAL}):(?={VALUE})|(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*://){VALUE}*")
AUTHORITY_END = re.compile(r"[/\\?#]")  # a special URL's user, host and port end at the first of these
PATH_END = re.compile(r"[?#]")
HOST_PORT = re.compile(r"(.*?)(?::([0-9]*))?")  # `[::1]:8080`, `host:`, `host`


def found(text: str) -> list[tuple[str, str]]:
    """(as written, as a WHATWG parser reads it) for each URL in `text`, a line or a value of a
    lockfile, once its tabs and line breaks are dropped."""
    return [(written, parsed(written)) for written in URL.findall(dropped(text))]


def within(url: str, registry: str) -> bool:
    """Whether `url` fetches from under `registry` (its scheme, host, port and path), both read
    as a WHATWG parser reads them."""
    return parsed(url).startswith(parsed(registry))


def parsed(url: str) -> str:
    """`url` as a WHATWG parser writes it back, as far as where it fetches from goes: a special
    scheme and its host in lower case, whatever slashes follow the scheme made `//`, a default
    port dropped, `.` and `..` segments resolved. A URL of another scheme is kept as written."""
    url = dropped(url)
    scheme, _, rest = url.partition(":")
    scheme = scheme.lower()
    if scheme not in DEFAULT_PORTS:
        return url
    authority, tail = _cut(rest.lstrip("/\\"), AUTHORITY_END)  # the parser skips them all
    userinfo, at, host_port = authority.rpartition("@")
    host, port = HOST_PORT.fullmatch(host_port).groups()
    written_port = "" if not port or int(port) == DEFAULT_PORTS[scheme] else f":{int(port)}"
    path, query = _cut(tail, PATH_END)
    return f"{scheme}://{userinfo}{at}{host.lower()}{written_port}{_resolved(path)}{query}"


def dropped(text: str) -> str:
    """`text` without what a WHATWG parser removes from anywhere in a URL: tabs and line breaks."""
    return text.replace("\t", "").replace("\n", "").replace("\r", "")


def _cut(text: str, end: re.Pattern) -> tuple[str, str]:
    """`text` before the first match of `end`, and from it on."""
    found_at = end.search(text)
    return (text, "") if found_at is None else (text[: found_at.start()], text[found_at.start() :])


def _resolved(path: str) -> str:
    """A special URL's path with its `.` and `..` segments resolved, a `\\` read as `/`."""
    segments = path.replace("\\", "/").split("/")[1:]
    kept: list[str] = []
    for number, segment in enumerate(segments, 1):
        if segment not in (".", ".."):
            kept.append(segment)
            continue
        if segment == ".." and kept:
            kept.pop()
        if number == len(segments):  # `/a/..` is `/`, `/a/.` is `/a/`
            kept.append("")
    return "/" + "/".join(kept)
