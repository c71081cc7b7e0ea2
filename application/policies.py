"""The Policy aggregates as the other collaborators need them: loaded now or at a version, the
per-process cache of their rules, and drafts (unsaved edits) applied to a copy.

The cache is refreshed whenever the workspace's head version moves (one indexed lookup, or the
guard of a remembered caller failing: application.callers), so a Save is in force for the next
evaluate in every worker process.
"""

from __future__ import annotations

import copy
import threading
from dataclasses import replace
from datetime import datetime

from eventsourcing.application import AggregateNotFoundError

from application.clock import Clock, system_clock
from application.store.reads import ReadModel
from domain.edits import plan_desired_state
from domain.egress.workspace import EgressRules
from domain.errors import RULES_NAMED, FieldError, InvalidInputError, NotFoundError
from domain.policy import LanguageRules, Policy, bind_rules, policy_id
from domain.text import quoted


class Policies:
    def __init__(self, repository, readmodel: ReadModel, clock: Clock = system_clock):
        self.repository = repository
        self.readmodel = readmodel
        self.clock = clock
        self._entries: dict[str, tuple[int, dict[str, LanguageRules]]] = {}
        self._egress: dict[str, tuple[int, EgressRules]] = {}
        self._lock = threading.Lock()

    def require_workspace(self, workspace: str) -> None:
        if not self.readmodel.has_workspace(workspace):
            raise no_workspace(workspace)

    def load_policy(self, workspace: str, policy_version: int | None = None) -> Policy:
        try:
            version = None if policy_version is None else policy_version + 1
            return self.repository.get(policy_id(workspace), version=version)
        except AggregateNotFoundError:
            raise no_workspace(workspace) from None

    def rule_set(self, workspace: str, version: int) -> dict | None:
        """What change `version`, a rule change, set its rule to (None: turned off), as its event
        has it: the change index keeps only the rule's action."""
        found = self.repository.event_store.get(policy_id(workspace), gt=version, lte=version + 1)
        return getattr(next(iter(found), None), "value", None)

    def at(self, workspace: str, at) -> Policy:
        """The policy exactly as it stood at instant `at`: what `load_policy` at the version at
        `at` would replay (the last snapshot there, the events after it), read in one round trip
        where the workspace check, the version, the library's own reads and the snapshot's seal
        would take five."""
        aggregate = policy_id(workspace)
        snapshots = self.repository.snapshot_store.recorder.events_table_name
        stored, sealed = self.repository.check.policy_at(workspace, at, aggregate, snapshots)
        if not stored:
            raise no_workspace(workspace)
        if not sealed:  # never answered from a snapshot the chain does not seal: rebuilt from the events
            return self.repository.get(aggregate, version=stored[-1].originator_version)
        # The library's project_aggregate, without its runtime Protocol check of each event (50 µs
        # each here, more than mutating; up to 49 events follow the snapshot).
        policy = None
        for event in map(self.repository.event_store.mapper.to_domain_event, stored):
            policy = event.mutate(policy)
        return policy

    def current(
        self, workspace: str, at: datetime | None = None, head: int | None = None, cached: bool = False
    ) -> tuple[int, dict[str, LanguageRules]]:
        """The head version's rules (from the cache while the head has not moved), judged at `at`
        (default now): an exception's expiry needs no event, only the instant of judging. `head` is
        the head version if the caller read it during this request (with its token), else read here.
        `cached`: the cached version as it is, unread (its recording checks it: application.callers)."""
        entry = self._entries.get(workspace) if cached else None
        version, rules = entry if entry is not None else self._head(workspace, head)
        return version, bind_rules(rules, at or self.clock())

    def _head(self, workspace: str, head: int | None = None) -> tuple[int, dict[str, LanguageRules]]:
        if head is None:
            head = self.readmodel.head_version(workspace)
        cached = self._entries.get(workspace)
        if cached is not None and cached[0] == head:
            return cached
        policy = self.load_policy(workspace)  # NotFoundError for unknown workspaces
        entry = (policy.policy_version, policy.rules())
        with self._lock:  # two refreshes may race: never put an older version back
            known = self._entries.get(workspace)
            if known is None or known[0] < entry[0]:
                self._entries[workspace] = entry
        return entry

    def egress(self, workspace: str, at: datetime | None = None) -> tuple[int, EgressRules]:
        """The head version's egress narrowing (one indexed lookup of the head, then this
        process's copy while it stands, so a Save is in force at the next judgement), bound to
        `at` (default now) for host exceptions."""
        head = self.readmodel.head_version(workspace)
        cached = self._egress.get(workspace)
        if cached is None or cached[0] != head:
            policy = self.load_policy(workspace)
            cached = (policy.policy_version, policy.egress_rules())
            with self._lock:
                known = self._egress.get(workspace)
                if known is None or known[0] < cached[0]:
                    self._egress[workspace] = cached
        return cached[0], replace(cached[1], at=at or self.clock())

    def egress_at(self, workspace: str, at: datetime) -> tuple[int, EgressRules]:
        """The egress narrowing exactly as it stood at `at` (one statement, as `at`)."""
        past = self.at(workspace, at)
        return past.policy_version, replace(past.egress_rules(), at=at)

    def draft_rules(self, workspace: str, draft: dict, at: datetime | None = None) -> tuple[int, dict]:
        """Rules of the saved policy with unsaved edits applied, judged at `at` (default now);
        nothing is recorded."""
        policy = copy.deepcopy(self.load_policy(workspace))
        version = policy.policy_version
        try:
            changes = plan_desired_state(policy.state, draft, policy.egress, policy.known_malware())
        except InvalidInputError as refused:  # name the fields as the request spelled them
            raise type(refused)(
                f"the draft {RULES_NAMED}",
                [FieldError(f"draft.{e.field}", e.message) for e in refused.errors],
            ) from None
        policy.record(changes, "draft", "")
        return version, bind_rules(policy.rules(), at or self.clock())


def no_workspace(workspace: str) -> NotFoundError:
    return NotFoundError(f"no workspace {quoted(workspace)}")
