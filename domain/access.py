"""Access requests from agents, and the terms of the exceptions that approving them grants.

An `AccessRequest` is its own small aggregate (filed, joined, approved, rejected), so asking
never conflicts with policy changes. The exception an approval grants is an event on the Policy
(see `domain.policy`), saved in the same atomic write as the approval: judging reads it from
the policy like the lists, and its expiry is data in that event, never a clock-driven event.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from eventsourcing.domain import Aggregate, event

from domain.decision import judge
from domain.durations import MAX_DURATION, parse_duration
from domain.egress.addresses import name_finding
from domain.egress.registries import registry_finding
from domain.egress.workspace import EGRESS, requested_host
from domain.errors import ConflictError, FieldError, InvalidInputError
from domain.limits import MAX_TEXT
from domain.patterns import is_pattern, patterns_for
from domain.policy import Change, LanguageRules
from domain.specs import LANGUAGE_TITLES, check_language, deny_key, parse
from domain.text import check_text

_LANGUAGE_RULE = FieldError("language", f"must be python, node or {EGRESS} (a host)")
STATUSES = ("open", "approved", "rejected", "expired")
STATUS_FILTERS = (*STATUSES, "all")


def expiry(now: datetime, expires_at: datetime | None, duration: str | None) -> datetime | None:
    """When an exception granted `now` ends: at `expires_at`, after `duration`, or never (None)."""
    if expires_at is not None and duration is not None:
        raise InvalidInputError(
            "give expires_at or duration, not both", [FieldError("duration", "must not be given with expires_at")]
        )
    if duration is not None:
        return now + parse_duration(duration)
    if expires_at is not None and expires_at <= now:
        raise InvalidInputError("expires_at is not in the future", [FieldError("expires_at", "must be in the future")])
    if expires_at is not None and expires_at - now > MAX_DURATION:  # the longest a duration may say
        rule = f"must be at most {MAX_DURATION.days} days ahead (for a permanent exception give neither)"
        raise InvalidInputError(f"expires_at {rule}", [FieldError("expires_at", rule)])
    return expires_at


def requested_package(language: str, text: str) -> tuple[str, str]:
    """The canonical registry name a request or grant is about: any spelling, or a spec; for
    language `egress`, the one host (normalised as hosts are judged)."""
    if language == EGRESS:
        check_text(text, "name", MAX_TEXT)
        try:
            host = requested_host(text)
        except ValueError as error:
            raise InvalidInputError(
                f"{text!r} does not name one host", [FieldError("name", f"must be one hostname: {error}")]
            ) from None
        # Denied whatever any list says: an exception for it would be granted and decide nothing.
        if always := name_finding(host) or registry_finding(host):
            raise InvalidInputError(
                f"{host} is always refused ({always[0]}): no exception or request lets it through",
                [FieldError("name", f"must be a host the fixed egress rules do not refuse: {always[1]}")],
            )
        return language, host
    check_language(language, lambda title, errors: InvalidInputError(title, [_LANGUAGE_RULE]))
    check_text(text, "name", MAX_TEXT)
    spec = parse(language, text)
    if spec.kind not in ("registry", "alias") or not spec.name:
        if is_pattern(text):  # read as a spec first: `numpy==1.*` names numpy
            raise InvalidInputError(
                f"{text!r} is a pattern, and an exception or a request names one package",
                [FieldError("name", "must be one package: a pattern (@scope/*, name-*) goes on the allow list")],
            )
        raise InvalidInputError(
            f"{text!r} does not name a {LANGUAGE_TITLES[language]} registry package",
            [FieldError("name", "must be a package name or a registry spec such as pandas==2.1")],
        )
    return language, spec.name


def plan_grant(state: dict[str, Any], language: str, name: str, grant: dict[str, Any], lift_deny: bool) -> list[Change]:
    """The grant; for a name deny entries name, only when asked to lift them (`lift_deny`): the
    deny list wins over exceptions, so granting one for a denied name alone would be a lie. A
    lifting grant says so (`lifts_deny`): the entries stay on the list and deny the name again
    when the exception ends or is revoked. A name a deny pattern denies is refused, lift_deny or
    not (`PatternDenied`)."""
    named, patterns = _denied_by(state, language, name)
    if patterns:
        raise PatternDenied(language, [(name, patterns)])
    if named and not lift_deny:
        raise ConflictError(
            f"{name} is on the {LANGUAGE_TITLES[language]} deny list, which wins over exceptions: an exception "
            "for it must lift its deny entry for the exception's window",
            [FieldError("lift_deny", "must be true to grant an exception for a deny-listed name")],
        )
    # `grant`: exception_id, expires_at (RFC 3339 or None), request_id (or None).
    return [Change("exception-granted", language, name=name, exception={**grant, "lifts_deny": bool(named)})]


def _denied_by(state: dict[str, Any], language: str, name: str) -> tuple[list[str], list[str]]:
    """The deny entries that deny `name` (canonical): those naming it (every spelling, for Node),
    and the patterns matching it. Hosts have no deny list."""
    if language == EGRESS:
        return [], []
    key, pattern_keys = deny_key(language, name), {deny_key(language, p) for p in patterns_for(language, name)}
    deny = state[language]["deny"]
    return [n for n in deny if deny_key(language, n) == key], [n for n in deny if deny_key(language, n) in pattern_keys]


def check_requestable(state: dict[str, Any], language: str, name: str) -> None:
    """A name a deny pattern denies can never be approved (`lift_deny` lifts no pattern), so a
    request for it is refused when it is filed, not left open to be refused at every approval."""
    _, patterns = _denied_by(state, language, name)
    if patterns:
        raise ConflictError(
            f"{name} is denied by the {LANGUAGE_TITLES[language]} deny pattern {', '.join(patterns)}, which wins "
            "over exceptions: no request for it can be approved; an admin must remove or narrow the pattern first",
            [FieldError("name", f"{name} is denied by the deny pattern {', '.join(patterns)}")],
        )


class PatternDenied(ConflictError):
    """An exception asked for names a deny pattern denies (`names`; `patterns`, of `language`).
    A deny pattern also denies names nobody asked for, so `lift_deny` never lifts one; and an
    exception under it would be granted and decide nothing, as the deny list wins."""

    def __init__(self, language: str, denied: list[tuple[str, list[str]]]):
        self.language, self.names = language, [name for name, _ in denied]
        self.patterns = list(dict.fromkeys(p for _, found in denied for p in found))
        super().__init__(
            f"{' and '.join(self.names)} {'is' if len(self.names) == 1 else 'are'} denied by the "
            f"{LANGUAGE_TITLES[language]} deny pattern {', '.join(self.patterns)}, which wins over exceptions; "
            "lifting deny entries lifts only those naming a package, never a pattern that denies other names too: "
            "remove or narrow the pattern first",
            [FieldError("name", f"{name} is denied by the deny pattern {', '.join(found)}") for name, found in denied],
        )


def not_allowed(rules: LanguageRules, names: list[str], workspace: str) -> list[str]:
    """The names (each once, in order) the policy does not allow now: those a closure approval grants."""
    return [n for n in dict.fromkeys(names) if not judge(rules, parse(rules.language, n), workspace).allowed]


def plan_closure_grants(
    rules: LanguageRules,
    state: dict[str, Any],
    names: list[str],
    grant_for: Callable[[str], dict[str, Any]],
    lift_deny: bool,
    workspace: str,
) -> list[Change]:
    """Grants for every name of a dependency closure the policy does not allow yet (one each,
    `grant_for(name)` giving its terms). Deny-listed names are refused all at once, named, unless
    `lift_deny` (those a deny pattern denies, always): the deny list wins over exceptions, so only
    lifting their entries, for the exceptions' window, can let them in."""
    wanting = not_allowed(rules, names, workspace)
    denied = {n: _denied_by(state, rules.language, n) for n in wanting if rules.denies(n)}
    patterned = [(n, patterns) for n, (_, patterns) in denied.items() if patterns]
    if patterned:
        raise PatternDenied(rules.language, patterned)
    if denied and not lift_deny:
        raise ConflictError(
            f"the closure holds deny-listed names ({', '.join(denied)}), and the deny list wins over exceptions: "
            "exceptions for them must lift their deny entries for the exceptions' window",
            [FieldError("lift_deny", f"must be true to grant deny-listed {n}") for n in denied],
        )
    changes: list[Change] = []
    for name in wanting:
        changes += plan_grant(state, rules.language, name, grant_for(name), lift_deny)
    return changes


class AccessRequest(Aggregate):
    """One open question "may this package be installed here?", and how it was decided."""

    TOPIC = "runcode_policy:AccessRequest"

    class Created(Aggregate.Created):
        # Unused base "created" class; the library requires an explicit topic on it too.
        TOPIC = "runcode_policy:AccessRequest.Created"

    @event("Filed", topic="runcode_policy:AccessRequest.Filed")
    def __init__(self, workspace: str, language: str, name: str, asked: dict[str, Any]):
        # `asked`: who asked and why ({"by", "token_id", "justification", "context"}), checked.
        self.workspace = workspace
        self.language = language
        self.name = name
        self.status = "open"
        self.askers = [asked]
        self.decision: dict[str, Any] | None = None

    def join(self, asked: dict[str, Any]) -> None:
        self._check_open()
        self._join(asked)

    @event("Joined", topic="runcode_policy:AccessRequest.Joined")
    def _join(self, asked: dict[str, Any]) -> None:
        self.askers.append(asked)

    def approve(self, by: str, note: str, exception_id: str, expires_at: str | None, lift_deny: bool) -> None:
        self._check_open()
        self._approve(by, note, exception_id, expires_at, lift_deny)

    @event("Approved", topic="runcode_policy:AccessRequest.Approved")
    def _approve(self, by: str, note: str, exception_id: str, expires_at: str | None, lift_deny: bool) -> None:
        self.status = "approved"
        self.decision = {
            "by": by,
            "note": note,
            "exception_id": exception_id,
            "expires_at": expires_at,
            "lift_deny": lift_deny,
        }

    def reject(self, by: str, note: str) -> None:
        self._check_open()
        self._reject(by, note)

    @event("Rejected", topic="runcode_policy:AccessRequest.Rejected")
    def _reject(self, by: str, note: str) -> None:
        self.status = "rejected"
        self.decision = {"by": by, "note": note}

    def _check_open(self) -> None:
        if self.status != "open":
            raise already_decided(self.status)


def already_decided(status: str) -> ConflictError:
    """The 409 for deciding a request again, naming the status it is shown with (an approval
    whose exception ended is shown `expired`: asking again is a new request)."""
    again = "; its exception has ended: a new request asks again" if status == "expired" else ""
    return ConflictError(
        f"this request was already {status}; it cannot be decided again{again}",
        [FieldError("request_id", f"must be an open request (it is {status})")],
    )
