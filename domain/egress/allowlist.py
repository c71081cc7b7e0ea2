"""Hostname allowlist for egress: validating, normalising and matching entries.

An entry is `name` (exact) or `*.name` (any depth of subdomain, never the apex: smokescreen's
`HostMatchesGlob`). Entries are normalised like hosts (UTS-46, punycode, lowercase, one trailing
dot) instead of being rejected for their spelling; structure errors and IP literals are rejected.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from domain.egress.target import TargetError, ascii_name, ends_in_number, uts46
from domain.errors import EgressConfigError, FieldError

WILDCARD = "*."


def normalize_entry(entry: object) -> str:
    """One entry in normal form (`name` or `*.name`); raises ValueError naming the rule broken."""
    if not isinstance(entry, str):
        raise ValueError("must be a string")
    if entry in ("*", WILDCARD):
        raise ValueError("a bare wildcard would allow every host; write '*.example.com'")
    wildcard = entry.startswith(WILDCARD)
    base = entry[len(WILDCARD) :] if wildcard else entry
    if "*" in base:
        raise ValueError("a wildcard is allowed only once, as a leading '*.'")
    name = _normalize_base(base)
    return WILDCARD + name if wildcard else name


def _normalize_base(base: str) -> str:
    if not base:
        raise ValueError("the hostname is empty")
    if "://" in base or "/" in base:
        host = base.partition("://")[2] if "://" in base else base
        host = re.split(r"[/?#]", host, maxsplit=1)[0].rpartition("@")[2].split(":")[0] or "example.com"
        raise ValueError(f"write the host name alone ({host}), not a URL")
    host, colon, port = base.rpartition(":")
    if colon and port.isascii() and port.isdigit() and ":" not in host and "[" not in host and not ends_in_number(host):
        raise ValueError(f"write the host name alone ({host}): an entry allows the host on any port")
    if ":" in base or "[" in base:
        raise ValueError("IP literals are not allowed; addresses belong in a CIDR range setting")
    try:
        mapped = uts46(base)
        if ends_in_number(mapped):
            # WHATWG reads such a host as IPv4 (or refuses it), so it can never name a host.
            raise ValueError("IP literals are not allowed (the entry ends in a number)")
        return ascii_name(mapped)
    except TargetError as error:
        raise ValueError(f"not a valid hostname: {error.detail}") from None


def normalize_allowlist(entries: Iterable[str] | None, field: str = "hostname_allowlist") -> tuple[str, ...] | None:
    """Validate and normalise operator entries; EgressConfigError names every bad one.

    None (open egress) stays None; duplicates after normalisation are dropped, order kept.
    """
    if entries is None:
        return None
    if isinstance(entries, str):  # iterating a string would make one entry per character
        raise EgressConfigError(f"{field} must be a list", [FieldError(field, "must be a list of hostnames")])
    normalised: list[str] = []
    errors: list[FieldError] = []
    for index, entry in enumerate(entries):
        try:
            normalised.append(normalize_entry(entry))
        except ValueError as error:
            errors.append(FieldError(field=f"{field}[{index}]", message=str(error)))
    if errors:
        raise EgressConfigError(f"{len(errors)} invalid {field} entries", errors)
    return tuple(dict.fromkeys(normalised))


def host_matches(host: str, entries: Iterable[object]) -> bool:
    """Does a normalised host name match any entry? Entries that do not normalise never match."""
    for entry in entries:
        normal = _cached_normal(entry) if isinstance(entry, str) else None
        if normal is None:
            continue
        if normal.startswith(WILDCARD):
            # Suffix on "." + base: the dot boundary stops `evilexample.com`, and the apex
            # (exactly `base`) does not end with ".base", so it is not matched.
            if host.endswith(normal[1:]):
                return True
        elif host == normal:
            return True
    return False


@lru_cache(maxsize=4096)
def _cached_normal(entry: str) -> str | None:
    # Pure and deterministic, so caching is safe; allowlists are re-sent with every evaluation.
    try:
        return normalize_entry(entry)
    except ValueError:
        return None
