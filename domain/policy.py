"""The Policy aggregate (one per workspace) and the read-only rules it is judged by.

Each language has a mode and two independent lists. Commands arrive here already validated and
canonical (see `domain.edits`); the event bodies only assign, so replay never re-parses names,
reads the clock or depends on a library version.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from datetime import timedelta
from uuid import NAMESPACE_URL, UUID, uuid5

from eventsourcing.domain import Aggregate, event

from domain.specs import LANGUAGES, deny_key

MODES = ("allowlist", "denylist")
LISTS = ("allow", "deny")
DEFAULT_MODE = "denylist"
# Entries in one list (allow or deny, per language): a Save past it is refused, naming the list.
# It bounds what one Save writes and what every evaluate's cache refresh loads.
MAX_LIST_ENTRIES = 10_000
CHANGE_TYPES = ("mode-switched", "entry-added", "entry-removed")

_NAMESPACE = uuid5(NAMESPACE_URL, "https://runcode-policy/workspaces")


def policy_id(workspace: str) -> UUID:
    """The Policy's id derives from the workspace slug, so a slug is unique for free."""
    return uuid5(_NAMESPACE, f"policy:{workspace}")


@dataclass(frozen=True)
class Change:
    """One policy change as commands plan it and read models record it."""

    type: str  # one of CHANGE_TYPES
    language: str
    list: str | None = None  # for entry changes
    name: str | None = None  # canonical entry name
    mode: str | None = None  # for mode switches


@dataclass(frozen=True)
class LanguageRules:
    """One language's rules, frozen for judging (a cache entry, a draft, or a past state).

    Deny keys are worked out once here, not per judged spec: the hot path checks a set."""

    language: str
    mode: str = DEFAULT_MODE
    allow: frozenset[str] = field(default_factory=frozenset)
    deny: frozenset[str] = field(default_factory=frozenset)
    deny_keys: frozenset[str] = field(init=False, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "deny_keys", frozenset(deny_key(self.language, n) for n in self.deny))

    def denies(self, name: str) -> bool:
        """Deny lists match on the deny key (Node: case-insensitive, to fail closed)."""
        return deny_key(self.language, name) in self.deny_keys


def default_state() -> dict[str, dict]:
    return {lang: {"mode": DEFAULT_MODE, "allow": [], "deny": []} for lang in LANGUAGES}


def rules_from_state(state: dict[str, dict]) -> dict[str, LanguageRules]:
    return {
        lang: LanguageRules(lang, s["mode"], frozenset(s["allow"]), frozenset(s["deny"])) for lang, s in state.items()
    }


class Policy(Aggregate):
    """Per-workspace package policy. `state` is plain data so snapshots serialise it as is."""

    TOPIC = "runcode_policy:Policy"

    @staticmethod
    def create_id(workspace: str) -> UUID:
        return policy_id(workspace)

    @event("Created", topic="runcode_policy:Policy.Created")
    def __init__(self, workspace: str, by: str):
        self.workspace = workspace
        self.state = default_state()
        self.changed_by: str | None = None

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

    def _event_for(self, change: Change) -> tuple[type, dict]:
        if change.type == "mode-switched":
            return self.ModeSwitched, {"language": change.language, "mode": change.mode}
        event_class = self.EntryAdded if change.type == "entry-added" else self.EntryRemoved
        return event_class, {"language": change.language, "list_name": change.list, "name": change.name}

    @event("ModeSwitched", topic="runcode_policy:Policy.ModeSwitched")
    def _switch_mode(self, language: str, mode: str, by: str, note: str, by_token: str | None = None) -> None:
        self.state[language]["mode"] = mode
        self._touch(by)

    @event("EntryAdded", topic="runcode_policy:Policy.EntryAdded")
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
        self._touch(by)

    @event("EntryRemoved", topic="runcode_policy:Policy.EntryRemoved")
    def _remove_entry(
        self, language: str, list_name: str, name: str, by: str, note: str, by_token: str | None = None
    ) -> None:
        entries = self.state[language][list_name]
        index = bisect.bisect_left(entries, name)
        if index < len(entries) and entries[index] == name:
            del entries[index]
        else:
            entries.remove(name)  # never expected: lists are kept sorted; raises like before
        self._touch(by)

    def _touch(self, by: str) -> None:
        self.changed_by = by

    @property
    def changed_at(self):
        """When the last change happened (the creation event is not a change)."""
        return self.modified_on if self.policy_version else None

    def rules(self) -> dict[str, LanguageRules]:
        return rules_from_state(self.state)
