"""Egress evaluation facade (docs/egress.md): one target in, one verdict with one reason out.

Order: syntax, scheme, host parse; then denial reasons from the name rules, the literal IP and
every resolved address, the most severe winning; then the port policy, if the deployment sets
one; then the hostname allowlist; else allowed. The
always-deny reasons therefore win over the allowlist, and allowlisting a metadata name (or a
public package registry) unlocks nothing. The parsing, address tables, allowlist and registry
names live in the modules beside this one.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network, ip_network
from typing import Any

from domain.egress.addresses import (
    Finding,
    classify_address,
    deny_range_finding,
    metadata_finding,
    name_finding,
    parse_address,
    parse_deny_ranges,
    table_finding,
)
from domain.egress.allowlist import host_matches, normalize_allowlist
from domain.egress.registries import REGISTRY_HOSTS, registry_finding
from domain.egress.target import DEFAULT_SCHEMES, Target, TargetError, parse_target, shown_target

__all__ = [
    "REASONS",
    "shown_target",
    "SEVERITY",
    "EgressVerdict",
    "evaluate_egress",
    "refused_first",
    "classify_address",
    "normalize_allowlist",
    "parse_deny_ranges",
    "REGISTRY_HOSTS",
]

REASONS = (
    "allowed",
    "invalid-target",
    "unsupported-scheme",
    "cloud-metadata",
    "loopback",
    "unspecified",
    "link-local",
    "private-range",
    "multicast",
    "reserved",
    "ipv6-transition",
    "not-on-hostname-allowlist",
    "package-registry",
    "port-not-allowed",
)
# Most severe first: when several reasons apply, the first of these is the one reported.
SEVERITY = (
    "cloud-metadata",
    "loopback",
    "unspecified",
    "link-local",
    "private-range",
    "multicast",
    "reserved",
    "ipv6-transition",
    "package-registry",
)


@dataclass(frozen=True)
class EgressVerdict:
    """The answer: `host` is None when the target could not be parsed; `detail` explains denials."""

    allowed: bool
    reason: str
    host: str | None
    port: int | None
    detail: str | None = None


@dataclass(frozen=True)
class _Rules:
    deny_ranges: tuple[IPv4Network | IPv6Network, ...]
    allow_addresses: frozenset[IPv4Address | IPv6Address]
    schemes: tuple[str, ...]
    ports: frozenset[int] | None
    refuse_registries: bool


def evaluate_egress(
    target: str,
    resolved: Sequence[str] = (),
    hostname_allowlist: Sequence[str] | None = None,
    *,
    deny_ranges: Sequence[IPv4Network | IPv6Network] = (),
    allow_addresses: Sequence[IPv4Address | IPv6Address] = (),
    schemes: Sequence[str] = DEFAULT_SCHEMES,
    ports: Sequence[int] | None = None,
    refuse_registries: bool = True,
) -> EgressVerdict:
    """Judge one egress target; never raises.

    `deny_ranges` are operator-configured extra ranges. A hit is reported as `reserved`: the
    reason set is closed, and "space this deployment treats as off-limits" is what `reserved`
    means; the detail names the operator range. `allow_addresses` is a test-only hatch for an
    enforcing proxy's own tests: an exact listed address skips the built-in address tables, but
    never the metadata rules, the name rules or the operator's deny ranges.
    `ports`: the deployment's port policy (None: any port); a target on another port, or naming
    none (`host` alone), is `port-not-allowed`, ranked below every address and name reason.
    `refuse_registries` (on: the sandbox's egress) denies public package registries by name
    (`package-registry`): sandboxes install through the service's index. Only the service's own
    upstream fetching, which is not sandbox egress, turns it off.
    """
    try:
        rules = _rules(deny_ranges, allow_addresses, schemes, ports, refuse_registries)
        return _evaluate(target, resolved, hostname_allowlist, rules)
    except Exception as error:  # noqa: BLE001 - a gate fails closed instead of crashing its caller
        return EgressVerdict(False, "invalid-target", None, None, f"could not evaluate: {error!r}")


def refused_first(
    resolved: Sequence[str],
    *,
    deny_ranges: Sequence[IPv4Network | IPv6Network] = (),
    allow_addresses: Sequence[IPv4Address | IPv6Address] = (),
    named: Collection[str] = (),
) -> list[str]:
    """The resolved addresses, those `evaluate_egress` refuses first (unreadable ones, then by
    SEVERITY), then those the caller refuses for its own reason (`named`: an enforcing proxy's
    own address), then the rest as they came: a record that keeps only the first of them keeps
    the address its verdict names, and every address that denied it as far as there is room."""
    rules = _rules(deny_ranges, allow_addresses, DEFAULT_SCHEMES, None, False)

    def rank(answer: str) -> int:
        address = parse_address(answer)
        if address is None:
            return -1  # what the verdict reports first: invalid-target
        finding = _address_finding(address, rules, "")
        if finding:
            return SEVERITY.index(finding[0])
        return len(SEVERITY) + (answer not in named)  # passed by the rules: the caller's refusals next

    return sorted(resolved, key=rank)  # stable: among equals, the order they came in


def _rules(
    deny_ranges: Sequence[IPv4Network | IPv6Network | str],
    allow_addresses: Sequence[IPv4Address | IPv6Address | str],
    schemes: Sequence[str],
    ports: Sequence[int] | None,
    refuse_registries: bool,
) -> _Rules:
    return _Rules(
        deny_ranges=tuple(ip_network(r) if isinstance(r, str) else r for r in deny_ranges),
        allow_addresses=frozenset(filter(None, map(parse_address, allow_addresses))),
        schemes=tuple(schemes),
        ports=None if ports is None else frozenset(ports),
        refuse_registries=refuse_registries,
    )


def _evaluate(
    target: str, resolved: Iterable[object] | None, allowlist: Iterable[str] | None, rules: _Rules
) -> EgressVerdict:
    try:
        parsed = parse_target(target, rules.schemes)
    except TargetError as error:
        return EgressVerdict(False, error.reason, None, None, error.detail)
    answers = list(resolved or ())
    addresses = [parse_address(answer) for answer in answers]
    if None in addresses:
        # A resolver answer we cannot read is unparsable input: fail closed before judging.
        bad = answers[addresses.index(None)]
        detail = f"resolved entry {bad!r} for {parsed.host} is not an IP address"
        return _deny(parsed, "invalid-target", detail)
    findings = _findings(parsed, list(zip(answers, addresses, strict=True)), rules)
    if findings:
        reason, detail = min(findings, key=lambda finding: SEVERITY.index(finding[0]))
        return _deny(parsed, reason, detail)
    if rules.ports is not None and parsed.port not in rules.ports:
        listed = ", ".join(map(str, sorted(rules.ports)))
        what = f"port {parsed.port} is" if parsed.port is not None else "a target without a port is"
        return _deny(parsed, "port-not-allowed", f"{what} not allowed: egress goes through ports {listed} only")
    if allowlist is not None and not _on_allowlist(parsed, allowlist):
        what = f"IP literal {parsed.host} never matches" if parsed.ip else f"{parsed.host} is not on"
        return _deny(parsed, "not-on-hostname-allowlist", f"{what} the hostname allowlist")
    return EgressVerdict(True, "allowed", parsed.host, parsed.port)


def _findings(parsed: Target, addresses: list[tuple[Any, Any]], rules: _Rules) -> list[Finding]:
    """The name's and the addresses' refusals; `addresses`: each answer and its address."""
    if parsed.ip is None:
        found = [name_finding(parsed.host), registry_finding(parsed.host) if rules.refuse_registries else None]
    else:
        found = [_address_finding(parsed.ip, rules, "")]
    context = f"resolved for {parsed.host}"  # each named as resolved: as the record's `resolved` keeps it
    found += [_address_finding(address, rules, context, str(answer)) for answer, address in addresses]
    return [finding for finding in found if finding]


def _address_finding(
    address: IPv4Address | IPv6Address, rules: _Rules, context: str, shown: str | None = None
) -> Finding | None:
    # Metadata first: it must beat its containing range, and the test hatch never unlocks it.
    finding = metadata_finding(address, context, shown)
    if finding is None and address not in rules.allow_addresses:
        finding = table_finding(address, context, shown)
    return finding or deny_range_finding(address, rules.deny_ranges, context, shown)


def _on_allowlist(parsed: Target, allowlist: Iterable[str]) -> bool:
    # Allowlists name hosts; an IP literal never matches (addresses belong in CIDR settings).
    return parsed.ip is None and host_matches(parsed.host, allowlist)


def _deny(parsed: Target, reason: str, detail: str) -> EgressVerdict:
    return EgressVerdict(False, reason, parsed.host, parsed.port, detail)
