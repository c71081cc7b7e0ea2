"""Address and name classification for egress: the ranges and names always denied.

Explicit CIDR tables rather than `ipaddress.is_private`/`is_global`: on 3.11.7 those disagree with
our policy in both directions (docs/egress.md). Embedded IPv4 in `::ffff:0:0/96` (mapped) and
`64:ff9b::/96` (NAT64 well-known prefix) is unwrapped here and classified as the IPv4 it reaches.
"""

from __future__ import annotations

from collections.abc import Iterable
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network, ip_address, ip_network

from domain.errors import EgressConfigError, FieldError

IPAddress = IPv4Address | IPv6Address
IPNetwork = IPv4Network | IPv6Network
Finding = tuple[str, str]  # (reason, detail)

METADATA_ADDRESSES = frozenset(
    ip_address(text)
    for text in (
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
)

METADATA_NAMES = frozenset(
    {
        "metadata.google.internal",
        "metadata",
        "instance-data",
        "instance-data.ec2.internal",
        "metadata.tencentyun.com",
        "metadata.platformequinix.com",
        "metadata.packet.net",
        "rancher-metadata",
        "kubernetes.default",
        "kubernetes.default.svc",
        "kubernetes.default.svc.cluster.local",
        "metadata.amazonaws.com",
    }
)

LOCALHOST_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})


def _rows(*pairs: tuple[str, str]) -> tuple[tuple[IPNetwork, str], ...]:
    return tuple((ip_network(cidr), reason) for cidr, reason in pairs)


# First matching row wins, so narrower rows that must beat a wider one come first.
IPV4_TABLE = _rows(
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
)

# Teredo (2001::/32) precedes the wider 2001::/23 reserved row: it is a transition form.
IPV6_TABLE = _rows(
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
)

# Only 2000::/3 (minus the rows above) is global unicast; everything else is refused, which also
# catches future special blocks such as 100:0:0:1::/64.
GLOBAL_UNICAST_V6 = ip_network("2000::/3")
MAPPED_V6 = ip_network("::ffff:0:0/96")
NAT64_WELL_KNOWN = ip_network("64:ff9b::/96")

PHRASES = {
    "cloud-metadata": "a cloud metadata endpoint",
    "loopback": "a loopback address",
    "unspecified": "in the unspecified ('this network') range",
    "link-local": "a link-local address",
    "private-range": "in a private range",
    "multicast": "a multicast address",
    "reserved": "in reserved or special-purpose space",
    "ipv6-transition": "an IPv6 transition form that can smuggle IPv4",
}


def parse_address(value: object) -> IPAddress | None:
    """Strict parse of a resolver answer; None when it is not one IP address.

    Resolvers return canonical text, so the permissive WHATWG forms are not accepted here. A zone
    id (getaddrinfo gives `fe80::1%eth0`) is dropped: the class does not depend on it.
    """
    if isinstance(value, IPv4Address | IPv6Address):
        return value
    if not isinstance(value, str):
        return None  # ip_address() would accept an int, which no resolver returns
    try:
        address = ip_address(value)
    except ValueError:
        return None
    if isinstance(address, IPv6Address) and address.scope_id is not None:
        return IPv6Address(int(address))
    return address


def unwrap(address: IPAddress) -> IPAddress:
    """The IPv4 address a mapped or NAT64 well-known address actually reaches, else itself."""
    if isinstance(address, IPv6Address) and (address in MAPPED_V6 or address in NAT64_WELL_KNOWN):
        return IPv4Address(int(address) & 0xFFFFFFFF)
    return address


def metadata_finding(address: IPAddress, context: str = "", shown: str | None = None) -> Finding | None:
    """`cloud-metadata` when the address (or what it embeds) is a metadata endpoint. `shown`: the
    address as its detail names it (a resolver's answer as resolved: as the record keeps it)."""
    inner = unwrap(address)
    if inner in METADATA_ADDRESSES or address in METADATA_ADDRESSES:
        return "cloud-metadata", f"{_describe(address, inner, context, shown)} is {PHRASES['cloud-metadata']}"
    return None


def table_finding(address: IPAddress, context: str = "", shown: str | None = None) -> Finding | None:
    """The first CIDR row matching the unwrapped address, metadata excluded."""
    inner = unwrap(address)
    table = IPV4_TABLE if isinstance(inner, IPv4Address) else IPV6_TABLE
    for network, reason in table:
        if inner in network:
            return reason, f"{_describe(address, inner, context, shown)} is {PHRASES[reason]} ({network})"
    if isinstance(inner, IPv6Address) and inner not in GLOBAL_UNICAST_V6:
        return "reserved", f"{_describe(address, inner, context, shown)} is outside global unicast 2000::/3"
    return None


def deny_range_finding(
    address: IPAddress, deny_ranges: Iterable[IPNetwork], context: str = "", shown: str | None = None
) -> Finding | None:
    """Operator deny ranges, reported as `reserved` (no new reason: the set is closed)."""
    inner = unwrap(address)
    for network in deny_ranges:
        if address in network or inner in network:  # a v4/v6 mismatch is simply not contained
            return "reserved", f"{_describe(address, inner, context, shown)} is in operator deny range {network}"
    return None


def name_finding(host: str) -> Finding | None:
    """Name rules: metadata names and localhost names, on an already normalised host."""
    if host in METADATA_NAMES:
        return "cloud-metadata", f"{host} is a cloud metadata hostname"
    if host in LOCALHOST_NAMES or host.endswith(".localhost"):
        return "loopback", f"{host} is a localhost name"
    return None


def classify_address(address: str | IPv4Address | IPv6Address) -> str | None:
    """The denial reason for one address, or None when it is public and passes.

    Text that is not an IP address gives `invalid-target` rather than raising: a gate that meets
    input it cannot read fails closed.
    """
    parsed = parse_address(address)
    if parsed is None:
        return "invalid-target"
    finding = metadata_finding(parsed) or table_finding(parsed)
    return finding[0] if finding else None


def parse_deny_ranges(entries: Iterable[str], field: str = "deny_ranges") -> tuple[IPNetwork, ...]:
    """CIDR strings to networks; host bits set are refused (a typo there usually means a mistake)."""
    networks: list[IPNetwork] = []
    errors: list[FieldError] = []
    for index, entry in enumerate(entries):
        try:
            if not isinstance(entry, str) or "/" not in entry:
                raise ValueError("must be a CIDR string such as 10.0.0.0/8")
            networks.append(ip_network(entry.strip()))
        except ValueError as error:
            errors.append(FieldError(field=f"{field}[{index}]", message=str(error)))
    if errors:
        raise EgressConfigError(f"{len(errors)} invalid {field} entries", errors)
    return tuple(networks)


def _describe(address: IPAddress, inner: IPAddress, context: str, shown: str | None) -> str:
    # e.g. "::ffff:a9fe:a9fe (resolved for x.example, embedding 169.254.169.254)"
    notes = [note for note in (context, f"embedding {inner}" if inner != address else "") if note]
    named = str(address) if shown is None else shown
    return f"{named} ({', '.join(notes)})" if notes else named
