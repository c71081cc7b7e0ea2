"""Egress governance: the deployment's egress configuration, and judging targets against it.

The rules themselves are pure functions in `domain.egress`; this module holds what the deployment
adds (its hostname allowlist and extra deny ranges) and records each judgement as a Decision, the
same aggregate and the same group-commit writer as package decisions, so egress decisions appear
in the audit log (`kind=egress`) and its exports and are durable before anyone is answered.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network, ip_address

from application.callers import Guard
from application.decision_writer import DecisionWriter
from application.policies import Policies
from domain.decision import Decision, DecisionRecord
from domain.egress import (
    REASONS,
    EgressVerdict,
    evaluate_egress,
    normalize_allowlist,
    parse_deny_ranges,
    refused_first,
    shown_target,
)
from domain.egress.target import DEFAULT_SCHEMES, parse_each, parse_ports, parse_schemes
from domain.egress.workspace import EgressRules, narrowing_detail
from domain.errors import EgressConfigError, FieldError, InvalidInputError
from domain.limits import MAX_LOOKUP_ADDRESSES, MAX_RESOLVED
from domain.text import check_context, json_words

_INDEX = re.compile(r"\[(\d+)\]$")
NOT_ON_ALLOWLIST = "not-on-hostname-allowlist"
INVALID_TARGET = "invalid-target"
LOOPBACK = "loopback"  # also the egress proxy's refusal of a dial of itself: it would loop back to it


@dataclass(frozen=True)
class ProxyRefusal:
    """An enforcing proxy's own reason to refuse what the rules allow (its lookup failed, the
    target is the proxy itself), and the address it names, if one: the record keeps it first."""

    reason: str
    detail: str
    address: str | None = None


@dataclass(frozen=True)
class EgressConfig:
    """What a deployment adds to the fixed rules. Validated and normalised on construction.

    `hostname_allowlist`: None = open egress, () = deny every name, else entries.
    `deny_ranges`: extra CIDRs, always denied. `ports`: None = any port, else the only ports
    egress may use. `schemes`: the URL schemes a target may name (http and https unless set).
    `allow_addresses`: a TEST-ONLY hatch that lets an enforcing proxy's tests reach a loopback
    upstream; nothing reads it from the environment.
    """

    hostname_allowlist: tuple[str, ...] | None = None
    deny_ranges: tuple[IPv4Network | IPv6Network, ...] = ()
    allow_addresses: tuple[IPv4Address | IPv6Address, ...] = ()
    ports: tuple[int, ...] | None = None
    schemes: tuple[str, ...] = DEFAULT_SCHEMES

    def __post_init__(self):
        settings = {name: getattr(self, name) for name in CONFIG_FIELDS}
        for name, value in checked_config(settings).items():
            object.__setattr__(self, name, value)

    def describe(self) -> str:
        """One line for a startup log: what this deployment lets through."""
        names = (
            "open (no hostname allowlist)"
            if self.hostname_allowlist is None
            else f"{len(self.hostname_allowlist)} allowlisted name(s)"
        )
        ports = "any port" if self.ports is None else f"ports {', '.join(map(str, self.ports))}"
        extra = f"; test-only allowed addresses {list(map(str, self.allow_addresses))}" if self.allow_addresses else ""
        return (
            f"egress {names}; {len(self.deny_ranges)} extra deny range(s); {ports}; "
            f"schemes {', '.join(self.schemes)}{extra}"
        )


# Each setting: its parser (values, field) -> normalised, and its value when unset.
_PARSERS = {
    "hostname_allowlist": (normalize_allowlist, None),
    "deny_ranges": (
        lambda values, field: parse_deny_ranges([v if isinstance(v, str) else str(v) for v in values], field),
        (),
    ),
    "allow_addresses": (lambda values, field: _addresses(values, field), ()),
    "ports": (parse_ports, None),
    "schemes": (parse_schemes, DEFAULT_SCHEMES),
}
CONFIG_FIELDS = tuple(_PARSERS)


def checked_config(settings: dict, fields: dict | None = None, label: str = "invalid egress configuration") -> dict:
    """Every setting given (by CONFIG_FIELDS name; None: unset), normalised at once; one
    EgressConfigError names every bad entry of all, each under `fields[name]` (the operator's
    name for it: a variable, a file's key) or its own name."""
    errors: list[FieldError] = []
    checked = {}
    for name, value in settings.items():
        parse, unset = _PARSERS[name]
        found = _collect(errors, value, (fields or {}).get(name, name), parse)
        checked[name] = unset if found is None else found
    if errors:
        listed = "; ".join(f"{e.field}: {e.message}" for e in errors)
        raise EgressConfigError(f"{label}: {listed}", errors)
    return checked


def checked_allowlist(entries: Sequence[str] | None, field: str = "hostname_allowlist"):
    """An allowlist given with a request: normalised, or 422 naming every bad entry."""
    checked = checked_config({"hostname_allowlist": entries}, {"hostname_allowlist": field}, f"invalid {field} entries")
    return checked["hostname_allowlist"]


def _collect(errors: list[FieldError], value, field: str, parse):
    """Run one parser; on refusal keep its errors, each quoting the bad entry, and go on."""
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, Iterable):  # a string: one entry per character
        errors.append(FieldError(field, "must be a list"))
        return None
    entries = list(value)
    try:
        return parse(entries, field)
    except EgressConfigError as error:
        errors.extend(_quoted(e, entries) for e in error.errors)
        return None


def _quoted(error: FieldError, entries: list) -> FieldError:
    found = _INDEX.search(error.field)
    if found is None or int(found.group(1)) >= len(entries):
        return error
    return FieldError(error.field, f"{json_words(entries[int(found.group(1))])}: {error.message}")


def _addresses(values: Iterable, field: str) -> tuple[IPv4Address | IPv6Address, ...]:
    return tuple(parse_each(values, field, _address, "must be one IP address"))


def _address(value) -> IPv4Address | IPv6Address | None:
    if isinstance(value, IPv4Address | IPv6Address):
        return value
    try:
        return ip_address(value)
    except ValueError:
        return None


class EgressJudge:
    """Judges network destinations with the deployment's egress configuration."""

    def __init__(self, egress_config: EgressConfig, writer: DecisionWriter, policies: Policies):
        self.egress_config = egress_config
        self.writer = writer
        self.policies = policies
        self.require_workspace = policies.require_workspace

    def evaluate_egress(
        self,
        workspace: str,
        target: str,
        resolved: Sequence[str] = (),
        context: dict | None = None,
        token: str | None = None,
    ) -> dict:
        """Judge with the deployment's configuration, then the workspace's egress allowlist as it
        stands now, and record the decision before answering. `token`: the caller's token id,
        when there is one: the recording checks it is still active and the version judged still
        the head (StaleCaller otherwise, nothing recorded: judge again).

        Raises StoreUnavailableError (503) when it cannot be recorded: the caller must deny.
        """
        resolved = _checked_resolved(resolved)
        verdict, version = self._narrowed(self._deployment_verdict(target, resolved), workspace)
        return self._recorded(workspace, target, verdict, resolved, context, version, token)

    def evaluate_lookup(
        self,
        workspace: str,
        target: str,
        found: Sequence[str] = (),
        context: dict | None = None,
        denied: ProxyRefusal | None = None,
    ) -> tuple[dict, tuple[str, ...]]:
        """An enforcing proxy's decision, recorded as `evaluate_egress` records one: the target and
        every address its own lookup `found` (at most MAX_LOOKUP_ADDRESSES) judged. The decision
        keeps MAX_RESOLVED of them: of a longer answer, those the rules refuse first, then the
        rest as found; a denial's detail says how many there were. Returns the answer and the
        addresses kept: of an allowed answer, the only ones the proxy may dial, so that whatever
        it reaches is in the record. `denied`: the proxy's own reason to refuse what the rules
        allowed (its lookup failed, the target is the proxy itself): nothing was reached, and the
        lookup, which left the machine (a name's labels can carry data out), is in the record;
        the address it names is kept next after those the rules refuse (of its verdict: first).
        """
        found = _checked_resolved(found, MAX_LOOKUP_ADDRESSES)
        verdict, version = self._narrowed(self._deployment_verdict(target, found), workspace)
        if denied is not None and verdict.allowed:
            if denied.reason not in REASONS:
                raise ValueError(f"{denied.reason!r} is not an egress reason")
            verdict = replace(verdict, allowed=False, reason=denied.reason, detail=denied.detail)
        kept = found
        if len(found) > MAX_RESOLVED:
            config = self.egress_config
            named = () if denied is None or denied.address is None else (denied.address,)
            ranked = refused_first(
                found, deny_ranges=config.deny_ranges, allow_addresses=config.allow_addresses, named=named
            )
            kept = tuple(ranked[:MAX_RESOLVED])
            if not verdict.allowed:
                cut = f"{len(found)} addresses found; the decision keeps {MAX_RESOLVED}, the refused ones first"
                verdict = replace(verdict, detail=f"{verdict.detail} ({cut})")
        return self._recorded(workspace, target, verdict, kept, context, version, None), kept

    def _deployment_verdict(self, target: str, resolved: Sequence[str]) -> EgressVerdict:
        return self._egress_verdict(target, resolved, self.egress_config.hostname_allowlist)

    def _recorded(
        self,
        workspace: str,
        target: str,
        verdict: EgressVerdict,
        resolved: Sequence[str],
        context: dict | None,
        version: int | None,
        token: str | None,
    ) -> dict:
        shown = shown_target(target)  # a password in a URL is not kept in the audit log
        record = DecisionRecord.for_egress(shown, verdict, resolved, check_context(context), version).to_dict()
        decision = Decision.recorded(workspace, record)
        guard = Guard(token, workspace, version) if token is not None and version is not None else None
        self.writer.record_events(decision, guard=guard)
        return egress_answer(verdict, str(decision.originator_id))

    def judge_egress(self, target: str, resolved: Sequence[str] = (), workspace: str | None = None) -> dict:
        """The deployment's verdict (narrowed by `workspace`'s egress allowlist now, if given),
        not recorded: lets a proxy refuse a name before resolving it."""
        verdict = self._deployment_verdict(target, _checked_resolved(resolved))
        if workspace is not None:
            verdict, _ = self._narrowed(verdict, workspace)
        return egress_answer(verdict, None)

    def test_egress(
        self,
        workspace: str,
        target: str,
        resolved: Sequence[str] = (),
        hostname_allowlist: Sequence[str] | None = None,
        at: datetime | None = None,
        context: dict | None = None,
    ) -> dict:
        """The same judgement with an explicit allowlist (None = open), or, with `at`, "was this
        host reachable then": the deployment's rules and the workspace's egress allowlist as it
        stood at `at`, read from the record. Nothing is recorded; the context is checked as
        `evaluate_egress` checks it, so a test answers what the recording would."""
        check_context(context)
        resolved = _checked_resolved(resolved)
        if at is None:
            allowlist = checked_allowlist(hostname_allowlist)
            self.require_workspace(workspace)
            return egress_answer(self._egress_verdict(target, resolved, allowlist), None)
        version, narrowing = self.policies.egress_at(workspace, at)
        verdict = self._deployment_verdict(target, resolved)
        return {**egress_answer(_narrow(verdict, narrowing, workspace), None), "policy_version": version}

    def _narrowed(self, verdict: EgressVerdict, workspace: str) -> tuple[EgressVerdict, int | None]:
        """The deployment's verdict narrowed by the workspace's egress allowlist as it stands now,
        and the policy version that judged it. A deployment denial needs no policy (None): the
        workspace's list can only take hosts away."""
        if not verdict.allowed:
            return verdict, None
        version, narrowing = self.policies.egress(workspace)
        return _narrow(verdict, narrowing, workspace), version

    def judge_upstream_egress(self, target: str, resolved: Sequence[str] = ()) -> dict:
        """The service's own fetch of a file an upstream page links to: the sandbox's rules but
        for public package registries, which are what an upstream links to (files.pythonhosted.org)."""
        verdict = self._egress_verdict(
            target,
            _checked_resolved(resolved, MAX_LOOKUP_ADDRESSES),  # the service's own lookup: judged whole
            self.egress_config.hostname_allowlist,
            refuse_registries=False,
        )
        return egress_answer(verdict, None)

    def _egress_verdict(
        self, target: str, resolved: Sequence[str], allowlist, *, refuse_registries: bool = True
    ) -> EgressVerdict:
        config, sandbox = self.egress_config, refuse_registries
        return evaluate_egress(
            target,
            resolved,
            allowlist,
            deny_ranges=config.deny_ranges,
            allow_addresses=config.allow_addresses,
            # the port and scheme policy speak of the sandbox's egress, not the operator's upstream
            schemes=config.schemes if sandbox else DEFAULT_SCHEMES,
            ports=config.ports if sandbox else None,
            refuse_registries=refuse_registries,
        )


def _narrow(verdict: EgressVerdict, narrowing: EgressRules, workspace: str) -> EgressVerdict:
    """The deployment's verdict, unless it allowed a host the workspace's allowlist leaves out."""
    if not verdict.allowed or narrowing.passes(verdict.host):
        return verdict
    return replace(verdict, allowed=False, reason=NOT_ON_ALLOWLIST, detail=narrowing_detail(verdict.host, workspace))


def egress_answer(verdict: EgressVerdict, decision_id: str | None) -> dict:
    return {
        "allowed": verdict.allowed,
        "reason": verdict.reason,
        "host": verdict.host,
        "port": verdict.port,
        "id": decision_id,
        "detail": verdict.detail,
    }


def _checked_resolved(resolved, most: int = MAX_RESOLVED) -> tuple[str, ...]:
    # Unreadable answers are the classifier's business (it denies them as invalid-target); the
    # shape and size are ours, so a decision record stays small and JSON-serialisable.
    if resolved is None:
        return ()
    if isinstance(resolved, str) or not all(isinstance(r, str) for r in resolved):
        raise InvalidInputError(
            "resolved must be a list of IP address strings", [FieldError("resolved", "must be a list of strings")]
        )
    if len(resolved) > most:
        raise InvalidInputError("too many resolved addresses", [FieldError("resolved", f"at most {most} addresses")])
    return tuple(resolved)
