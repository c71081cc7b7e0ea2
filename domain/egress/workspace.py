"""A workspace's own egress allowlist: versioned in its Policy, it narrows the deployment's.

The deployment's rules (the always-denied address classes, public package registries, and its
hostname allowlist if it sets one) are judged first and stay absolute; a workspace in mode
`allowlist` then lets through only the hosts on its list (entries as the deployment's:
`name` or `*.name`, `domain.egress.allowlist`) or holding a time-boxed host exception. Mode
`open` narrows nothing. So a workspace can only take hosts away, never add one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from domain.egress.addresses import parse_address
from domain.egress.allowlist import host_matches, normalize_allowlist, normalize_entry
from domain.errors import EgressConfigError, FieldError
from domain.text import json_words

EGRESS = "egress"  # the `language` of egress changes, exceptions, requests and decision counts
EGRESS_MODES = ("open", "allowlist")
DEFAULT_EGRESS = "open"


def default_egress() -> dict[str, Any]:
    return {"mode": DEFAULT_EGRESS, "allow": []}


@dataclass(frozen=True)
class EgressRules:
    """One workspace's egress narrowing, frozen for judging; exceptions count at `at`."""

    mode: str = DEFAULT_EGRESS
    allow: tuple[str, ...] = ()
    exceptions: Mapping[str, datetime | None] = field(default_factory=dict)  # host -> end (None: never)
    at: datetime | None = None

    def passes(self, host: str | None) -> bool:
        if self.mode == DEFAULT_EGRESS:
            return True
        return host is not None and (host_matches(host, self.allow) or self.excepts(host))

    def excepts(self, host: str) -> bool:
        if self.at is None or host not in self.exceptions:
            return False
        end = self.exceptions[host]
        return end is None or self.at < end

    def allow_view(self) -> list[str] | None:
        """As the policy shows it: None when the workspace narrows nothing."""
        return None if self.mode == DEFAULT_EGRESS else list(self.allow)


def narrowing_detail(host: str, workspace: str) -> str:
    if parse_address(host.strip("[]")) is not None:  # an address is no allowlist entry: nothing to ask for
        return (
            f"{host} is an address, and the egress allowlist of workspace {workspace} names hosts: "
            "connect to the host by its name (an admin can allow or grant a name, never an address)"
        )
    return (
        f"{host} is not on the egress allowlist of workspace {workspace}; an admin can add it, or "
        f'grant it for a while: to ask, POST /api/v1/workspaces/{workspace}/requests {{"language": "egress", '
        f'"name": "{host}"}}'
    )


def requested_host(text: str) -> str:
    """The one host a request or a host exception is about, normalised as hosts are judged."""
    entry = normalize_entry(text)  # ValueError naming the rule
    if entry.startswith("*"):
        raise ValueError("ask for one host, not a wildcard")
    return entry


def plan_egress(
    current: dict[str, Any], allow: object, field_name: str
) -> tuple[list[tuple[str, str | None]], list[FieldError]]:
    """The desired workspace allowlist (None: open) as (change type, host or mode) steps."""
    if allow is None:
        steps = [("entry-removed", h) for h in current["allow"]]
        return steps + ([("mode-switched", DEFAULT_EGRESS)] if current["mode"] != DEFAULT_EGRESS else []), []
    wanted, errors = normalised_entries(allow, field_name)
    have = set(current["allow"])
    steps = [("mode-switched", "allowlist")] if current["mode"] != "allowlist" else []
    steps += [("entry-removed", h) for h in sorted(have - set(wanted))]
    steps += [("entry-added", h) for h in wanted if h not in have]
    return steps, errors


def normalised_entries(entries: object, field_name: str) -> tuple[list[str], list[FieldError]]:
    """Entries normalised as the deployment's (`normalize_allowlist`), or one error per bad one."""
    if not isinstance(entries, list):  # a string too: one host per character
        rule = f"must be a list of hostnames such as api.github.com or *.example.org, not {json_words(entries)}"
        return [], [FieldError(field_name, rule)]
    try:
        return list(normalize_allowlist(entries, field_name) or ()), []  # a list: never None (open)
    except EgressConfigError as refused:  # each error's field ends in the entry's index: quote it
        return [], [
            FieldError(e.field, f"{json_words(entries[int(e.field.rsplit('[', 1)[1][:-1])])}: {e.message}")
            for e in refused.errors
        ]
