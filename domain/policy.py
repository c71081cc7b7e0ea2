"""The Policy aggregate (one per workspace) and the read-only rules it is judged by.

Each language has a mode and two independent lists. Commands arrive here already validated and
canonical (see `domain.edits`); the event bodies only assign, so replay never re-parses names,
reads the clock or depends on a library version.
"""

from __future__ import annotations

import bisect
import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from uuid import NAMESPACE_URL, UUID, uuid5

from eventsourcing.domain import Aggregate, event

from domain.egress.workspace import EGRESS, EgressRules, default_egress
from domain.events import Attributed
from domain.patterns import is_pattern, patterns_for, shadowed
from domain.rules import ENFORCE, VersionRules
from domain.specs import LANGUAGES, deny_key

MODES = ("allowlist", "denylist")
LISTS = ("allow", "deny")
DEFAULT_MODE = "denylist"
# Exceptions are policy changes too (see `domain.access`): versioned, in the history, judged.
EXCEPTION_CHANGES = ("exception-granted", "exception-revoked")
# A rule beyond names (`domain.rules`) set, changed or turned off: `name` is the rule.
RULE_CHANGED = "rule-changed"
CHANGE_TYPES = ("mode-switched", "entry-added", "entry-removed", *EXCEPTION_CHANGES, RULE_CHANGED)
# Changes of the workspace's egress allowlist carry `language` EGRESS and the same three types.
CHANGE_LANGUAGES = (*LANGUAGES, EGRESS)
# The workspace's known-malware action (enforce or monitor) is switched like a mode, under this
# language of its own: it is one setting for every language.
KNOWN_MALWARE = "known-malware"

_NAMESPACE = uuid5(NAMESPACE_URL, "https://runcode-policy/workspaces")


def policy_id(workspace: str) -> UUID:
    """The Policy's id derives from the workspace slug, so a slug is unique for free."""
    return uuid5(_NAMESPACE, f"policy:{workspace}")


@dataclass(frozen=True)
class Change:
    """One policy change as commands plan it and read models record it."""

    type: str  # one of CHANGE_TYPES
    language: str  # one of CHANGE_LANGUAGES, or KNOWN_MALWARE
    list: str | None = None  # for entry changes
    name: str | None = None  # canonical entry name; for rule changes, the rule
    mode: str | None = None  # for mode switches (KNOWN_MALWARE: enforce or monitor)
    # For exception changes: exception_id (+ expires_at, request_id, lifts_deny)
    exception: dict[str, Any] | None = None
    rule: dict[str, Any] | None = None  # for rule changes: the rule as `VersionRules.to_json` shows it (None: off)


@dataclass(frozen=True)
class LanguageRules:
    """One language's rules, frozen for judging (a cache entry, a draft, or a past state).

    Deny keys are worked out once here, not per judged spec: the hot path checks a set."""

    language: str
    mode: str = DEFAULT_MODE
    allow: frozenset[str] = field(default_factory=frozenset)
    deny: frozenset[str] = field(default_factory=frozenset)
    # Exceptions: name -> when the latest one ends (None: never), judged at `at`, the instant
    # these rules are bound to (see `at_instant`); unbound rules grant no exception.
    exceptions: Mapping[str, datetime | None] = field(default_factory=dict)
    at: datetime | None = None
    # Lifting exceptions (granted with `lift_deny`): name -> when the latest one ends (None:
    # never). While one is in force at `at`, the deny entries naming exactly that name (every
    # spelling, for Node) do not deny it; deny patterns always do. Unbound rules lift nothing.
    lifted: Mapping[str, datetime | None] = field(default_factory=dict)
    # Rules beyond names (`domain.rules`): which versions of an allowed name are shown.
    version_rules: VersionRules = VersionRules()
    # The workspace's word on imported known-malware advisories (the same for every language):
    # `enforce` denies affected versions, `monitor` serves them and records it.
    known_malware: str = ENFORCE
    deny_keys: frozenset[str] = field(init=False, repr=False)
    # Each deny pattern's key -> the entry as listed: a decision names the entry, not the asked
    # name's spelling of it (`@EVIL/*` for `@evil/*`).
    deny_patterns: dict[str, str] = field(init=False, repr=False, compare=False)
    # Whether either list holds a pattern: without one, judging never works out a name's patterns.
    patterned: tuple[bool, bool] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "deny_keys", frozenset(deny_key(self.language, n) for n in self.deny))
        listed = {deny_key(self.language, n): n for n in sorted(self.deny) if is_pattern(n)}
        object.__setattr__(self, "deny_patterns", listed)
        object.__setattr__(self, "patterned", (any(map(is_pattern, self.allow)), any(map(is_pattern, self.deny))))

    def denies(self, name: str) -> bool:
        """Deny lists match on the deny key (Node: case-insensitive, to fail closed), the name's
        own (unless a lifting exception for the name is in force) or that of a pattern matching it."""
        named = deny_key(self.language, name) in self.deny_keys and not (self.lifted and self._lifts(name))
        return named or (self.patterned[1] and self.deny_pattern(name) is not None)

    def deny_pattern(self, name: str) -> str | None:
        """The deny pattern matching `name`, if one does: no exception can let the name in then."""
        if not self.patterned[1]:
            return None
        listed = self.deny_patterns
        keys = (deny_key(self.language, p) for p in patterns_for(self.language, name))
        return next((listed[k] for k in keys if k in listed), None)

    def lifts(self, name: str) -> bool:
        """A deny entry naming exactly this name is on the list, and a lifting exception for the
        name, in force at the rules' instant, keeps it from denying the name."""
        return bool(self.lifted) and self._lifts(name) and deny_key(self.language, name) in self.deny_keys

    def _lifts(self, name: str) -> bool:
        return self.at is not None and name in self.lifted and _in_force(self.lifted[name], self.at)

    def allows(self, name: str) -> bool:
        """The allow list holds exactly this name, or a pattern matching it."""
        return name in self.allow or (
            self.patterned[0] and any(p in self.allow for p in patterns_for(self.language, name))
        )

    def excepts(self, name: str) -> bool:
        """An exception for exactly this name is in force at the rules' instant."""
        return self.at is not None and name in self.exceptions and _in_force(self.exceptions[name], self.at)

    def at_instant(self, at: datetime) -> LanguageRules:
        """The same rules judged at `at` (a shallow copy: the deny keys are not worked out again;
        copied by hand, as copy.copy would, at a fraction of its cost: every judgement binds)."""
        bound = object.__new__(type(self))
        bound.__dict__.update(self.__dict__)
        object.__setattr__(bound, "at", at)
        return bound


def _in_force(end: datetime | None, at: datetime) -> bool:
    return end is None or at < end


def default_state() -> dict[str, dict[str, Any]]:
    return {lang: {"mode": DEFAULT_MODE, "allow": [], "deny": []} for lang in LANGUAGES}


def rules_from_state(
    state: dict[str, dict[str, Any]], exceptions: dict[str, Any] | None = None, known_malware: str = ENFORCE
) -> dict[str, LanguageRules]:
    ends = exception_ends(exceptions or {})
    # A lift holds while no deny entry for its name was added after it (`Policy._add_entry`).
    lifting = {i: g for i, g in (exceptions or {}).items() if g.get("lifts_deny") and not g.get("denied_after")}
    lifted = exception_ends(lifting)
    return {
        lang: LanguageRules(
            lang,
            s["mode"],
            frozenset(s["allow"]),
            frozenset(s["deny"]),
            ends.get(lang, {}),
            lifted=lifted.get(lang, {}),
            version_rules=VersionRules.from_json(lang, s.get("rules")),  # states saved before rules have none
            known_malware=known_malware,
        )
        for lang, s in state.items()
    }


def shadowed_entries(rules: dict[str, LanguageRules]) -> list[dict[str, Any]]:
    """Deny patterns that override allow entries, per language (`domain.patterns.shadowed`):
    `[{"language", "pattern", "shadows": [...]}]`, what a draft shows before it is saved."""
    return [
        {"language": language, **found}
        for language, r in rules.items()
        if r.patterned[1]
        for found in shadowed(language, r.allow, r.deny)
    ]


def bind_rules(rules: dict[str, LanguageRules], at: datetime) -> dict[str, LanguageRules]:
    return {lang: r.at_instant(at) for lang, r in rules.items()}


def exception_end(grant: dict[str, Any]) -> datetime | None:
    return None if grant["expires_at"] is None else datetime.fromisoformat(grant["expires_at"])


def exception_ends(exceptions: dict[str, Any]) -> dict[str, dict[str, datetime | None]]:
    """Per language, per name, the latest end of its standing exceptions (None: permanent)."""
    ends: dict[str, dict[str, datetime | None]] = {}
    for grant in exceptions.values():
        names, end = ends.setdefault(grant["language"], {}), exception_end(grant)
        if grant["name"] not in names or end is None:
            names[grant["name"]] = end
        elif (latest := names[grant["name"]]) is not None and end > latest:
            names[grant["name"]] = end
    return ends


class Policy(Aggregate):
    """Per-workspace package policy. `state` is plain data so snapshots serialise it as is."""

    TOPIC = "runcode_policy:Policy"
    # Of its snapshots: version 1 was taken before egress and exceptions existed, version 2
    # before the workspace's known-malware action.
    class_version = 3

    @staticmethod
    def upcast_v1_v2(state: dict[str, Any]) -> None:
        state.setdefault("egress", default_egress())
        state.setdefault("exceptions", {})

    @staticmethod
    def upcast_v2_v3(state: dict[str, Any]) -> None:
        state.setdefault("malware_action", ENFORCE)

    @staticmethod
    def create_id(workspace: str) -> UUID:
        return policy_id(workspace)

    @event("Created", topic="runcode_policy:Policy.Created")
    def __init__(self, workspace: str, by: str):
        self.workspace = workspace
        self.state = default_state()
        self.egress = default_egress()
        self.changed_by: str | None = None
        self.exceptions: dict[str, dict[str, Any]] = {}  # standing exceptions by id (expired ones too)
        self.malware_action = ENFORCE  # what imported known-malware advisories do here

    @property
    def policy_version(self) -> int:
        """The API's version: the number of changes (the creation event is not one)."""
        return self.version - 1

    def record(self, changes: list[Change], by: str, note: str, by_token: str | None = None) -> None:
        """Trigger one event per planned change; the caller saves them in one atomic write.

        All events of one save carry one timestamp: the save is atomic, so no instant may show
        it half applied (a point-in-time read between two of its events would otherwise see a
        state that was never in force). Timestamps also rise with versions even when writers'
        clocks disagree, so "the latest change at or before T" means the same by time or version."""
        at = max(self.Event.create_timestamp(), self.modified_on + timedelta(microseconds=1))
        for change in changes:
            event_class, fields = self._event_for(change)
            self.trigger_event(event_class, timestamp=at, by=by, by_token=by_token, note=note, **fields)

    def _event_for(self, change: Change) -> tuple[type, dict[str, Any]]:
        if change.type in EXCEPTION_CHANGES:  # host exceptions (language EGRESS) too
            event_class: type = self.ExceptionGranted if change.type == "exception-granted" else self.ExceptionRevoked
            return event_class, {"language": change.language, "name": change.name, **(change.exception or {})}
        if change.language == EGRESS:
            egress_changed = self.EgressChanged  # type: ignore[attr-defined]  # made by @event
            return egress_changed, {"change": change.type, "host": change.name, "mode": change.mode}
        if change.language == KNOWN_MALWARE:
            malware_set = self.KnownMalwareSet  # type: ignore[attr-defined]  # made by @event
            return malware_set, {"action": change.mode}
        if change.type == RULE_CHANGED:
            rule_changed = self.RuleChanged  # type: ignore[attr-defined]  # made by @event
            return rule_changed, {"language": change.language, "rule": change.name, "value": change.rule}
        if change.type == "mode-switched":
            return self.ModeSwitched, {"language": change.language, "mode": change.mode}
        event_class = self.EntryAdded if change.type == "entry-added" else self.EntryRemoved
        return event_class, {"language": change.language, "list_name": change.list, "name": change.name}

    class ModeSwitched(Attributed, Aggregate.Event):
        TOPIC = "runcode_policy:Policy.ModeSwitched"
        language: str
        mode: str

    @event(ModeSwitched)
    def _switch_mode(self, language: str, mode: str, by: str, note: str, by_token: str | None = None) -> None:
        self.state[language]["mode"] = mode
        self._touch(by)

    class EntryAdded(Attributed, Aggregate.Event):
        TOPIC = "runcode_policy:Policy.EntryAdded"
        language: str
        list_name: str
        name: str

    @event(EntryAdded)
    def _add_entry(
        self, language: str, list_name: str, name: str, by: str, note: str, by_token: str | None = None
    ) -> None:
        # Lists stay sorted by binary search, not a re-sort per entry (which made a Save of n
        # entries cost n² comparisons); names planned in order append at the end.
        entries = self.state[language][list_name]
        if entries and name < entries[-1]:
            bisect.insort(entries, name)
        else:
            entries.append(name)
        if list_name == "deny":  # denied anew: a lift covers the entries it was granted over, not this one
            for grant in self._lifts_of(language, name):
                grant.setdefault("denied_after", []).append(name)
        self._touch(by)

    def _lifts_of(self, language: str, name: str) -> list[dict[str, Any]]:
        """The standing lifting grants for the name a deny entry `name` names (every spelling)."""
        key = deny_key(language, name)
        return [
            g
            for g in self.exceptions.values()
            if g.get("lifts_deny") and g["language"] == language and deny_key(language, g["name"]) == key
        ]

    class EntryRemoved(Attributed, Aggregate.Event):
        TOPIC = "runcode_policy:Policy.EntryRemoved"
        language: str
        list_name: str
        name: str

    @event(EntryRemoved)
    def _remove_entry(
        self, language: str, list_name: str, name: str, by: str, note: str, by_token: str | None = None
    ) -> None:
        entries = self.state[language][list_name]
        index = bisect.bisect_left(entries, name)
        if index < len(entries) and entries[index] == name:
            del entries[index]
        else:
            entries.remove(name)  # never expected: lists are kept sorted; raises like before
        if list_name == "deny":  # an entry added after a lift no longer holds it off
            for grant in self._lifts_of(language, name):
                if name in grant.get("denied_after", ()):
                    grant["denied_after"].remove(name)
                    if not grant["denied_after"]:
                        del grant["denied_after"]
        self._touch(by)

    class ExceptionGranted(Attributed, Aggregate.Event):
        """Version 3: `lifts_deny`, whether the grant keeps the deny entries naming its name from
        denying it while it is in force (grants before it lift nothing: a `lift_deny` then
        removed the entries, by an `EntryRemoved` of its own)."""

        TOPIC = "runcode_policy:Policy.ExceptionGranted"
        class_version = 3
        language: str
        name: str
        exception_id: str
        expires_at: str | None
        request_id: str | None
        lifts_deny: bool = False

        @staticmethod
        def upcast_v2_v3(state: dict[str, Any]) -> None:
            state.setdefault("lifts_deny", False)

    @event(ExceptionGranted)
    def _grant_exception(
        self,
        language: str,
        name: str,
        exception_id: str,
        expires_at: str | None,
        request_id: str | None,
        by: str,
        note: str,
        by_token: str | None = None,
        lifts_deny: bool = False,
    ) -> None:
        # `version`: the policy version this grant makes (the aggregate's is bumped after). Only
        # a lifting grant says so: the others keep the shape (and snapshots) they always had.
        grant = self.exceptions[exception_id] = {
            "id": exception_id,
            "language": language,
            "name": name,
            "expires_at": expires_at,
            "request_id": request_id,
            "by": by,
            "note": note,
            "version": self.version,
        }
        if lifts_deny:
            grant["lifts_deny"] = True
        self._touch(by)

    class ExceptionRevoked(Attributed, Aggregate.Event):
        TOPIC = "runcode_policy:Policy.ExceptionRevoked"
        language: str
        name: str
        exception_id: str

    @event(ExceptionRevoked)
    def _revoke_exception(
        self, language: str, name: str, exception_id: str, by: str, note: str, by_token: str | None = None
    ) -> None:
        self.exceptions.pop(exception_id, None)
        self._touch(by)

    @event("RuleChanged", topic="runcode_policy:Policy.RuleChanged")
    def _change_rule(
        self, language: str, rule: str, value: dict[str, Any] | None, by: str, note: str, by_token: str | None = None
    ) -> None:
        # The rule as read when it was saved: replay assigns it, never reads it again.
        rules = self.state[language].setdefault("rules", {})  # states saved before rules have none
        if value is None:
            rules.pop(rule, None)
        else:
            rules[rule] = copy.deepcopy(value)
        self._touch(by)

    @event("KnownMalwareSet", topic="runcode_policy:Policy.KnownMalwareSet")
    def _set_known_malware(self, action: str, by: str, note: str, by_token: str | None = None) -> None:
        self.malware_action = action
        self._touch(by)

    def known_malware(self) -> str:
        """What imported known-malware advisories do in this workspace."""
        return self.malware_action

    @event("EgressChanged", topic="runcode_policy:Policy.EgressChanged")
    def _change_egress(
        self, change: str, host: str | None, mode: str | None, by: str, note: str, by_token: str | None = None
    ) -> None:
        egress = self.egress
        if change == "mode-switched":
            egress["mode"] = mode
        elif change == "entry-added":
            bisect.insort(egress["allow"], host)
        else:
            egress["allow"].remove(host)
        self._touch(by)

    def egress_rules(self) -> EgressRules:
        """Unbound, like `rules`: `dataclasses.replace(..., at=...)` binds host exceptions."""
        egress = self.egress
        ends = exception_ends(self.exceptions).get(EGRESS, {})
        return EgressRules(egress["mode"], tuple(egress["allow"]), ends)

    def _touch(self, by: str) -> None:
        self.changed_by = by

    @property
    def changed_at(self) -> datetime | None:
        """When the last change happened (the creation event is not a change)."""
        return self.modified_on if self.policy_version else None

    def rules(self) -> dict[str, LanguageRules]:
        """Unbound: bind them to an instant (`bind_rules`) for exceptions to count."""
        return rules_from_state(self.state, self.exceptions, self.known_malware())
