"""Property tests: every spelling of a blocked address is blocked for the same reason.

The range tables here are written out again on purpose rather than imported from `domain.egress`, so a
row dropped from the implementation shows up as a failure instead of being agreed with.
"""

from __future__ import annotations

from ipaddress import IPv4Address, IPv6Address, ip_address, ip_network

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from domain.egress import REASONS, EgressVerdict, evaluate_egress

IPV4_BLOCKED = [
    ("127.0.0.0/8", "loopback"),
    ("0.0.0.0/8", "unspecified"),
    ("169.254.0.0/16", "link-local"),
    ("10.0.0.0/8", "private-range"),
    ("172.16.0.0/12", "private-range"),
    ("192.168.0.0/16", "private-range"),
    ("100.64.0.0/10", "private-range"),
    ("224.0.0.0/4", "multicast"),
    ("240.0.0.0/4", "reserved"),
    ("192.0.0.0/24", "reserved"),
    ("192.0.2.0/24", "reserved"),
    ("198.51.100.0/24", "reserved"),
    ("203.0.113.0/24", "reserved"),
    ("198.18.0.0/15", "reserved"),
    ("192.88.99.0/24", "reserved"),
]
IPV6_BLOCKED = [
    ("::1/128", "loopback"),
    ("::/128", "unspecified"),
    ("fe80::/10", "link-local"),
    ("fc00::/7", "private-range"),
    ("fec0::/10", "private-range"),
    ("ff00::/8", "multicast"),
    ("::/96", "ipv6-transition"),
    ("::ffff:0:0:0/96", "ipv6-transition"),
    ("64:ff9b:1::/48", "ipv6-transition"),
    ("2001::/32", "ipv6-transition"),
    ("2002::/16", "ipv6-transition"),
    ("100::/64", "reserved"),
    ("2001::/23", "reserved"),
    ("2001:db8::/32", "reserved"),
    ("3fff::/20", "reserved"),
    ("5f00::/16", "reserved"),
]
METADATA = {
    ip_address(a)
    for a in (
        "169.254.169.254",
        "169.254.170.2",
        "169.254.170.23",
        "100.100.100.200",
        "192.0.0.192",
        "168.63.129.16",
        "169.254.42.42",
        "169.254.0.23",
        "fd00:ec2::254",
        "fd00:ec2::23",
        "fd00:a9fe:a9fe::1",
        "fe80::a9fe:a9fe",
        "fd00:42::42",
        "fd20:ce::254",
    )
}
V4_ROWS = [(ip_network(cidr), reason) for cidr, reason in IPV4_BLOCKED]
V6_ROWS = [(ip_network(cidr), reason) for cidr, reason in IPV6_BLOCKED]
UNWRAPPED_V6 = [ip_network("::ffff:0:0/96"), ip_network("64:ff9b::/96")]


def _expected(address) -> str | None:
    if address in METADATA:
        return "cloud-metadata"
    rows = V4_ROWS if address.version == 4 else V6_ROWS
    return next((reason for network, reason in rows if address in network), None)


def _inside(rows):
    return st.sampled_from(rows).flatmap(
        lambda row: st.integers(int(row[0][0]), int(row[0][-1])).map(row[0][0].__class__)
    )


blocked_v4 = _inside(V4_ROWS)
# Draw the first octet outside the wholly blocked /8s so the filter rarely rejects (health check);
# 100, 169, 172, 192, 198 and 203 stay in because their public parts border blocked ranges.
_PUBLIC_FIRST_OCTETS = [o for o in range(1, 224) if o not in (10, 127)]
public_v4 = st.builds(
    lambda first, rest: IPv4Address(first << 24 | rest),
    st.sampled_from(_PUBLIC_FIRST_OCTETS),
    st.integers(0, 2**24 - 1),
).filter(lambda a: _expected(a) is None)
public_v6 = st.builds(IPv6Address, st.integers(0x2000 << 112, (0x4000 << 112) - 1)).filter(
    lambda a: _expected(a) is None
)


# --- textual encodings of one IPv4 address ---------------------------------------------------


def _parts(address: IPv4Address, count: int) -> list[int]:
    """The 1- to 4-part inet_aton split: leading bytes, then the rest as one number."""
    value, octets = int(address), address.packed
    tail_bits = 8 * (4 - (count - 1))
    return [*octets[: count - 1], value & ((1 << tail_bits) - 1)]


def _spell(number: int, style: str, padding: int) -> str:
    if style == "oct":
        return "0" + "0" * padding + format(number, "o")
    if style in ("hex", "HEX"):
        digits = "0" * padding + format(number, "x" if style == "hex" else "X")
        return ("0x" if style == "hex" else "0X") + digits
    return str(number)


def _named_encodings(address: IPv4Address) -> dict[str, str]:
    a, b, c, d = address.packed
    value = int(address)
    return {
        "dotted": str(address),
        "integer": str(value),
        "hex": f"0x{value:x}",
        "HEX": f"0X{value:08X}",
        "octal parts": ".".join(f"0{part:o}" for part in (a, b, c, d)),
        "3-part": f"{a}.{b}.{value & 0xFFFF}",
        "2-part": f"{a}.{value & 0xFFFFFF}",
        "mixed": f"0x{a:x}.0{b:o}.{(value & 0xFFFF)}",
        "trailing dot": f"{address}.",
    }


def _wrapped(address: IPv4Address) -> dict[str, str]:
    high, low = divmod(int(address), 1 << 16)
    return {
        "mapped dotted": f"[::ffff:{address}]",
        "mapped hex": f"[::ffff:{high:x}:{low:x}]",
        "nat64 dotted": f"[64:ff9b::{address}]",
        "nat64 hex": f"http://[64:ff9b::{high:x}:{low:x}]:80/",
    }


def _all_targets(address: IPv4Address) -> dict[str, str]:
    targets = {}
    for name, text in _named_encodings(address).items():
        targets[name] = text
        targets[f"{name} in a URL"] = f"http://{text}:80/"
    return targets | _wrapped(address)


mixed_encoding = st.tuples(
    st.integers(1, 4),
    st.lists(st.sampled_from(["dec", "oct", "hex", "HEX"]), min_size=4, max_size=4),
    st.lists(st.integers(0, 3), min_size=4, max_size=4),
    st.booleans(),
)


def _mixed(address: IPv4Address, encoding) -> str:
    count, styles, paddings, trailing_dot = encoding
    text = ".".join(_spell(n, s, p) for n, s, p in zip(_parts(address, count), styles, paddings, strict=False))
    return text + "." if trailing_dot else text


# --- properties ---------------------------------------------------------------------------------


@given(blocked_v4)
def test_every_encoding_of_a_blocked_ipv4_is_denied_for_the_same_reason_as_dotted(address):
    dotted = evaluate_egress(str(address))
    assert dotted.reason == _expected(address) and not dotted.allowed
    for name, target in _all_targets(address).items():
        verdict = evaluate_egress(target)
        assert (verdict.allowed, verdict.reason) == (False, dotted.reason), (name, target, verdict)


@given(blocked_v4, mixed_encoding)
def test_random_mixed_radix_short_forms_of_a_blocked_ipv4_are_denied_like_dotted(address, encoding):
    text = _mixed(address, encoding)
    expected = _expected(address)
    for target in (text, f"http://{text}:80/", f"https://{text}/x"):
        verdict = evaluate_egress(target)
        assert (verdict.allowed, verdict.reason, verdict.host) == (False, expected, str(address)), target


@given(blocked_v4)
def test_a_blocked_ipv4_resolved_for_a_public_looking_name_is_denied_for_the_same_reason(address):
    expected = _expected(address)
    for answer in (str(address), f"::ffff:{address}", f"64:ff9b::{address}"):
        verdict = evaluate_egress("https://cdn.public-looking.example/", ["93.184.215.14", answer])
        assert (verdict.allowed, verdict.reason) == (False, expected), answer


@given(public_v4, mixed_encoding)
def test_public_ipv4_addresses_are_allowed_in_every_encoding_with_open_egress(address, encoding):
    targets = [*_all_targets(address).values(), _mixed(address, encoding)]
    for target in targets:
        verdict = evaluate_egress(target)
        assert verdict.allowed and verdict.reason == "allowed", (target, verdict)
    assert evaluate_egress("https://public.example/", [str(address), f"::ffff:{address}"]).allowed


@given(_inside(V6_ROWS))
def test_every_spelling_of_an_address_in_a_blocked_ipv6_row_is_denied_for_that_row(address):
    assume(not any(address in network for network in UNWRAPPED_V6))
    expected = _expected(address)
    for text in (address.compressed, address.exploded, address.exploded.upper()):
        for target in (f"[{text}]", f"http://[{text}]:443/", text):
            verdict = evaluate_egress(target)
            assert (verdict.allowed, verdict.reason) == (False, expected), target
        assert evaluate_egress("https://v6.example/", [text]).reason == expected


@given(public_v6)
def test_global_unicast_ipv6_outside_the_tables_is_allowed(address):
    assert evaluate_egress(f"https://[{address.exploded}]/").allowed
    assert evaluate_egress("https://v6.example/", [str(address)]).allowed


@given(st.integers(0, 2**128 - 1).map(IPv6Address))
def test_ipv6_outside_2000_3_is_never_allowed_unless_it_unwraps_to_a_public_ipv4(address):
    assume(address not in ip_network("2000::/3"))
    verdict = evaluate_egress(f"[{address}]")
    unwraps = any(address in network for network in UNWRAPPED_V6)
    if not unwraps:
        assert not verdict.allowed and verdict.reason in REASONS[3:11]
    else:
        assert verdict.allowed == (_expected(IPv4Address(int(address) & 0xFFFFFFFF)) is None)


target_text = st.one_of(
    st.text(),
    st.text(alphabet="0123456789abcdefxX.:[]%@/?#\\ \t①。ｆﬀ-_*", max_size=40),
    st.builds(
        lambda s, h: f"{s}://{h}",
        st.sampled_from(["http", "https", "HTTP", "gopher", "1x", ""]),
        st.text(alphabet="0123456789abcdefx.:[]%@/?#", max_size=30),
    ),
)


@settings(max_examples=300)
@given(target_text, st.lists(st.text(max_size=45), max_size=3), st.none() | st.lists(st.text(max_size=20), max_size=3))
def test_evaluate_egress_never_raises_on_arbitrary_text(target, resolved, allowlist):
    verdict = evaluate_egress(target, resolved, allowlist)
    assert isinstance(verdict, EgressVerdict)
    assert verdict.reason in REASONS
    assert verdict.allowed is (verdict.reason == "allowed")
    assert verdict.allowed or verdict.detail


host_like = st.builds(
    lambda labels, dot, scheme: f"{scheme}{'.'.join(labels)}{dot}",
    st.lists(st.text(alphabet="abcXYZ09_-ßüÄｆ①", min_size=1, max_size=8), min_size=1, max_size=4),
    st.sampled_from(["", "."]),
    st.sampled_from(["", "http://", "HTTPS://"]),
)


@given(st.one_of(host_like, public_v4.map(str), public_v6.map(lambda a: f"[{a.exploded.upper()}]")))
def test_an_allowed_host_is_already_in_normal_form(target):
    verdict = evaluate_egress(target)
    assume(verdict.allowed)
    again = evaluate_egress(verdict.host)
    assert (again.allowed, again.host) == (True, verdict.host)
