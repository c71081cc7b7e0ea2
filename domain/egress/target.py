"""Target parsing for egress checks: URL or `host[:port]` to host, port, IP.

Stricter than WHATWG wherever parsers disagree (userinfo, backslash, whitespace, percent-encoding,
zone ids): we refuse rather than guess which reading the client will use. Where the thing that
connects is permissive (`inet_aton` reads `0x7f.1` as 127.0.0.1), we parse at least as permissively,
so a host never slips past as "not an IP, must be a name".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv6Address
from typing import Any, cast

import idna

from domain.errors import EgressConfigError, FieldError, InvalidInputError
from domain.limits import MAX_TEXT
from domain.text import noun_for

DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}
SCHEMES = tuple(DEFAULT_PORTS)  # what a deployment may let through (`schemes`)
DEFAULT_SCHEMES = ("http", "https")  # ws and wss off unless the deployment lets them through

_FORBIDDEN = re.compile(r"[\x00-\x20\x7f\\]")  # C0 controls, ASCII whitespace, DEL, backslash
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*")
_PORT = re.compile(r"0*[0-9]{1,5}")  # decimal: leading zeros change nothing (`0443` is 443)
_LABEL = re.compile(r"[a-z0-9_-]{1,63}")
_NUMBER_LABEL = re.compile(r"[0-9]+|0[xX][0-9a-fA-F]*")
_DIGITS = {10: re.compile(r"[0-9]+"), 8: re.compile(r"[0-7]+"), 16: re.compile(r"[0-9a-fA-F]+")}
MAX_NAME_LENGTH = 253


class TargetError(InvalidInputError):
    """The target is refused before any address rule runs; `reason` is the verdict reason."""

    title = "Invalid egress target"

    def __init__(self, reason: str, detail: str):
        super().__init__(detail)
        self.reason = reason


@dataclass(frozen=True)
class Target:
    """A parsed target: `host` is a punycode lowercase name or canonical IP text (no brackets)."""

    scheme: str | None
    host: str
    port: int | None
    ip: IPv4Address | IPv6Address | None


def parse_target(target: object, schemes: Iterable[str] = ("http", "https")) -> Target:
    """Parse a URL or `host[:port]`; raises TargetError with the verdict reason on refusal."""
    if not isinstance(target, str) or not target:
        raise _invalid("the target is empty or not text")
    if len(target) > MAX_TEXT:  # the API's own bound; no host or URL worth judging is longer
        raise _invalid(f"the target is {len(target):,} characters long; at most {MAX_TEXT} are judged")
    if _FORBIDDEN.search(target):
        raise _invalid("the target contains whitespace, a control character or a backslash")
    scheme, authority = _split_scheme(target, schemes)
    host_text, port = _split_port(authority, bare=scheme is None)
    host, ip = parse_host(host_text)
    return Target(scheme, host, port if port is not None else DEFAULT_PORTS.get(scheme or ""), ip)


def shown_target(target: str) -> str:
    """The target as it may be recorded and logged: a userinfo part (often a password) is `***`,
    and what is past MAX_TEXT characters is cut (the proxy reads targets of up to its head's size;
    such a target is refused, and the refusal is recorded). Cut after the userinfo is hidden: a
    cut inside it would keep the password."""
    scheme, sep, rest = target.partition("://") if "://" in target else ("", "", target)
    authority = re.split(r"[/?#]", rest, maxsplit=1)[0]
    if "@" in authority:
        target = f"{scheme}{sep}***@{authority.rpartition('@')[2]}{rest[len(authority) :]}"
    return target[:MAX_TEXT]


def _split_scheme(target: str, schemes: Iterable[str]) -> tuple[str | None, str]:
    if "://" not in target:
        if any(char in target for char in "/?#"):
            raise _invalid("a host[:port] target cannot contain '/', '?' or '#'")
        return None, target
    scheme, _, rest = target.partition("://")
    # A malformed scheme is a syntax error (invalid-target); only a well-formed one is judged.
    if not _SCHEME.fullmatch(scheme):
        raise _invalid(f"{scheme!r} is not a URL scheme")
    scheme = scheme.lower()
    allowed = sorted({str(name).lower() for name in schemes})
    if scheme not in allowed:
        raise TargetError("unsupported-scheme", f"scheme {scheme!r} is not allowed ({', '.join(allowed)})")
    return scheme, re.split(r"[/?#]", rest, maxsplit=1)[0]


def _split_port(authority: str, bare: bool) -> tuple[str, int | None]:
    if not authority:
        raise _invalid("the authority is empty")
    if "@" in authority:
        raise _invalid("userinfo ('@') is refused: parsers disagree about which '@' ends it")
    if authority.startswith("["):
        close = authority.find("]")
        if close < 0:
            raise _invalid("unterminated '[' in the host")
        host, rest = authority[: close + 1], authority[close + 1 :]
        if rest and not rest.startswith(":"):
            raise _invalid(f"unexpected {rest!r} after the IPv6 literal")
        return host, _port(rest[1:]) if rest else None
    if authority.count(":") > 1:
        if not bare:
            raise _invalid("an IPv6 literal in a URL must be in brackets")
        return authority, None  # bare IPv6 literal; it cannot carry a port
    host, colon, port = authority.partition(":")
    return host, _port(port) if colon else None


def _port(text: str) -> int:
    if not _PORT.fullmatch(text) or not 1 <= int(text) <= 65535:
        raise _invalid(f"port {text!r} is not a decimal number from 1 to 65535")
    return int(text)


def parse_host(text: str) -> tuple[str, IPv4Address | IPv6Address | None]:
    """Normalised host text and its IP (None for a name); raises TargetError when invalid."""
    if not text:
        raise _invalid("the host is empty")
    if "%" in text:  # percent-encoding or an IPv6 zone id: we never decode either
        raise _invalid("'%' in the host is refused (no percent-decoding, no zone ids)")
    if text.startswith("["):
        return _ipv6(text[1:-1], bracketed=True)
    if ":" in text:
        return _ipv6(text, bracketed=False)
    mapped = uts46(text)  # before the IPv4 test: fullwidth digits and '。' become ASCII
    if ends_in_number(mapped):
        address = parse_ipv4(mapped)
        if address is None:
            raise _invalid(f"{text!r} ends in a number but is not a valid IPv4 address")
        return str(address), address
    return ascii_name(mapped), None


def _ipv6(text: str, bracketed: bool) -> tuple[str, IPv6Address]:
    if bracketed and ":" not in text:
        raise _invalid(f"[{text}]: only IPv6 literals go in brackets")
    try:
        address = IPv6Address(text)  # strict: ASCII hex only; '%' was refused above
    except ValueError:
        raise _invalid(f"{text!r} is not a valid IPv6 address") from None
    return str(address), address


def uts46(text: str) -> str:
    """UTS-46 mapping, non-transitional, STD3 off (so `_` survives, as in smokescreen)."""
    try:
        return idna.uts46_remap(text, std3_rules=False, transitional=False)
    except UnicodeError as error:  # idna.IDNAError is a UnicodeError
        raise _invalid(f"{text!r} cannot be mapped with UTS-46: {error}") from None


def ends_in_number(mapped: str) -> bool:
    """The WHATWG test: is the last label (one empty trailing label dropped) a number?"""
    labels = mapped.split(".")
    if labels[-1] == "" and len(labels) > 1:
        labels.pop()
    return bool(_NUMBER_LABEL.fullmatch(labels[-1]))


def parse_ipv4(text: str) -> IPv4Address | None:
    """The WHATWG IPv4 parser (inet_aton forms); None on failure. Never truncates or wraps."""
    parts = text.split(".")
    if parts[-1] == "" and len(parts) > 1:
        parts.pop()
    if len(parts) > 4:
        return None
    numbers = [_ipv4_number(part) for part in parts]
    if any(number is None for number in numbers):
        return None
    *head, last = cast(list[int], numbers)
    if any(number > 255 for number in head) or last >= 256 ** (5 - len(numbers)):
        return None
    return IPv4Address(sum(number << (8 * (3 - index)) for index, number in enumerate(head)) + last)


def _ipv4_number(part: str) -> int | None:
    if part[:2] in ("0x", "0X"):
        digits, base = part[2:], 16
        if not digits:
            return 0  # WHATWG reads a bare "0x" as zero
    elif len(part) > 1 and part.startswith("0"):
        digits, base = part[1:], 8
    else:
        digits, base = part, 10
    if not _DIGITS[base].fullmatch(digits):
        return None
    try:
        return int(digits, base)
    except ValueError:  # beyond int()'s digit limit: certainly too large
        return None


def ascii_name(mapped: str) -> str:
    """A UTS-46-mapped name to punycode, lowercase, one trailing dot stripped; else TargetError."""
    labels = mapped.split(".")
    if len(labels) > 1 and labels[-1] == "":
        labels.pop()
    if "" in labels:
        raise _invalid(f"{mapped!r} has an empty label (or more than one trailing dot)")
    name = ".".join(_ascii_label(label) for label in labels)
    if len(name) > MAX_NAME_LENGTH:
        raise _invalid(f"the name is longer than {MAX_NAME_LENGTH} characters")
    return name


def _ascii_label(label: str) -> str:
    try:
        if not label.isascii():
            label = idna.alabel(label).decode("ascii")
        elif label.lower().startswith("xn--"):
            idna.ulabel(label)  # only validates: a broken A-label is not a name
    except UnicodeError as error:
        raise _invalid(f"label {label!r} is not a valid IDN label: {error}") from None
    label = label.lower()
    if not _LABEL.fullmatch(label):
        raise _invalid(f"label {label!r} is not 1-63 characters of [a-z0-9_-]")
    return label


def _invalid(detail: str) -> TargetError:
    return TargetError("invalid-target", detail)


def parse_each(
    entries: Iterable[object], field: str, read: Callable[[object], Any], rule: str, at_least: str | None = None
) -> list[Any]:
    """Each entry of a deployment setting as `read` makes it (None: not one), or an
    EgressConfigError naming every bad entry (`field[i]`: `rule`), and the setting itself with
    `at_least` when it names none."""
    found, errors = [], []
    for index, entry in enumerate(entries):
        value = read(entry)
        if value is None:
            errors.append(FieldError(f"{field}[{index}]", rule))
        else:
            found.append(value)
    if at_least is not None and not found and not errors:
        errors.append(FieldError(field, at_least))
    if errors:
        raise EgressConfigError(f"{len(errors)} invalid {field} {noun_for(len(errors), 'entry', 'entries')}", errors)
    return found


def parse_schemes(entries: Iterable[object], field: str = "schemes") -> tuple[str, ...]:
    """A deployment's URL schemes: some of SCHEMES (any case), at least one."""
    listed = ", ".join(SCHEMES)
    found = parse_each(
        entries,
        field,
        lambda entry: entry.strip().lower() if isinstance(entry, str) and entry.strip().lower() in SCHEMES else None,
        f"must be one of {listed}",
        f"must name at least one of {listed} (unset it for http, https)",
    )
    return tuple(dict.fromkeys(found))


def parse_ports(entries: Iterable[object], field: str = "ports") -> tuple[int, ...]:
    """A deployment's egress ports: decimal numbers 1-65535, at least one."""
    found = parse_each(
        entries,
        field,
        _port_number,
        "must be a port number from 1 to 65535",
        "must name at least one port (unset it for any port)",
    )
    return tuple(sorted(set(found)))


def _port_number(entry: object) -> int | None:
    text = entry.strip() if isinstance(entry, str) else entry
    if isinstance(text, str) and _PORT.fullmatch(text):  # written as a target's port is
        text = int(text)
    return text if isinstance(text, int) and not isinstance(text, bool) and 1 <= text <= 65535 else None
