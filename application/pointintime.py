"""'Was NAME allowed at T?' and its timeline, from indexed lookups only (never a full replay).

The answer is computed by the same `judge` the live gate uses, over the rules as they stood for
this one name: the language's mode then, whether the name or a pattern matching it (and, for
Node deny lists, any spelling of either) was listed then, and whether an exception for it was in
force at that instant (and whether one in force lifted the deny entries naming it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from itertools import groupby

from application.formats import iso
from application.store.reads import NameRows, ReadModel
from domain.decision import EXCEPTION_REASON, judge
from domain.patterns import matches
from domain.policy import DEFAULT_MODE, RULE_CHANGED, LanguageRules
from domain.specs import Spec

# The exception in force for a name at an instant, and the lifting one (each None when none is).
InForce = tuple[dict | None, dict | None]


@dataclass
class NameState:
    """The part of one language's policy that can decide one name."""

    mode: str = DEFAULT_MODE
    allowed_entries: set[str] = field(default_factory=set)  # the name itself and patterns matching it
    denied_spellings: set[str] = field(default_factory=set)
    mode_row: dict | None = None
    rows: dict[tuple[str, str], dict] = field(default_factory=dict)  # (list, name) -> last change

    def apply(self, row: dict, name: str) -> None:
        if row["type"] == "mode-switched":
            self.mode, self.mode_row = row["mode"], row
            return
        present = row["type"] == "entry-added"
        if row["list"] == "deny":
            (self.denied_spellings.add if present else self.denied_spellings.discard)(row["name"])
        elif row["name"] == name or matches(row["language"], row["name"], name):
            (self.allowed_entries.add if present else self.allowed_entries.discard)(row["name"])
        else:
            return
        self.rows[(row["list"], row["name"])] = row

    def verdict(
        self, workspace: str, language: str, name: str, grants: InForce = (None, None), at: datetime | None = None
    ):
        grant, lift = grants
        rules = LanguageRules(
            language,
            self.mode,
            frozenset(self.allowed_entries),
            frozenset(self.denied_spellings),
            {name: grant["expires_at"]} if grant else {},
            at,
            {name: lift["expires_at"]} if lift else {},
        )
        return judge(rules, Spec(name, language, "registry", name), workspace)

    def because(self, reason: str) -> dict | None:
        """The change that last decided this answer, or None for the default policy."""
        rows = [r for (lst, _), r in self.rows.items() if lst == "deny" or self.mode == "allowlist"]
        if reason == "matches-the-deny-list":
            rows = [r for r in rows if r["list"] == "deny" and r["type"] == "entry-added"]
        elif self.mode_row is not None:
            rows.append(self.mode_row)
        return max(rows, key=lambda r: r["version"], default=None)


def state_at(name: str, rows: list[dict]) -> NameState:
    """The state that `ReadModel.name_at`'s rows (oldest first) leave."""
    state = NameState()
    for row in rows:
        state.apply(row, name)
    return state


def in_force(grants: list[dict], version: int, at: datetime) -> InForce:
    """The latest-granted exception in force (`grant_in_force`), and the latest-granted lifting
    one (its deny entries do not deny the name while it is)."""
    return grant_in_force(grants, version, at), grant_in_force([g for g in grants if g["lifts_deny"]], version, at)


def grant_in_force(grants: list[dict], version: int, at: datetime) -> dict | None:
    """The latest-granted exception standing at `version` and not yet expired at `at`."""
    standing = [
        g
        for g in grants
        if g["granted_version"] <= version
        and (g["revoked_version"] is None or g["revoked_version"] > version)
        and (g["expires_at"] is None or at < g["expires_at"])
    ]
    return max(standing, key=lambda g: g["granted_version"], default=None)


def package_at(found: NameRows, grants: list[dict], workspace: str, language: str, name: str, at: datetime) -> dict:
    """`found`: `ReadModel.name_at` at `at`; `grants`: every exception ever granted for this name
    (see `exceptions_for_name`)."""
    version, state = found.version, state_at(name, found.changes)
    standing = in_force(grants, version, at)
    verdict = state.verdict(workspace, language, name, standing, at)
    grant = standing[1] if verdict.reason == EXCEPTION_REASON and standing[1] is not None else standing[0]
    because = (
        describe_grant(grant)
        if verdict.reason == EXCEPTION_REASON and grant is not None
        else describe_change(state.because(verdict.reason))
    )
    return {
        "language": language,
        "name": name,
        "at": iso(at),
        "allowed": verdict.allowed,
        "reason": verdict.reason,
        "mode": state.mode,
        "policy_version": version,
        "because": because,
    }


def timeline(
    q: ReadModel,
    found: NameRows,
    grants: list[dict],
    workspace: str,
    language: str,
    name: str,
    start: datetime,
    end: datetime,
    created: datetime,
) -> dict:
    """`found`: `ReadModel.name_at` at the later of `start` and `created` (when the workspace was
    made: its intervals begin then, and a period that ends before it has none); `grants` as for
    `package_at`."""
    answer = {"language": language, "name": name, "from": iso(start), "to": iso(end), "intervals": []}
    answer["decisions"] = q.decision_counts(workspace, language, name, start, end)
    if created >= end:
        return answer
    start = max(start, created)
    version, state = found.version, state_at(name, found.changes)
    intervals = answer["intervals"] = [
        _interval(state.verdict(workspace, language, name, in_force(grants, version, start), start), start, version)
    ]
    rows = q.changes_for_name(workspace, language, name, version, end)
    moments = {at: list(together) for at, together in groupby(rows, key=lambda r: r["at"])}
    for grant in grants:  # an exception starts, ends or is revoked: the answer may change then
        for moment in (grant["granted_at"], grant["expires_at"], grant["revoked_at"]):
            if moment is not None and start < moment < end:
                moments.setdefault(moment, [])
    for at in sorted(moments):  # one atomic save is one instant
        for row in moments[at]:
            state.apply(row, name)
        now_version = q.version_at(workspace, at)
        verdict = state.verdict(workspace, language, name, in_force(grants, now_version, at), at)
        current = intervals[-1]
        if (verdict.allowed, verdict.reason) != (current["allowed"], current["reason"]):
            current["to"] = iso(at)
            intervals.append(_interval(verdict, at, now_version))
    intervals[-1]["to"] = iso(end)
    return answer


def _interval(verdict, start: datetime, version: int) -> dict:
    return {
        "from": iso(start),
        "to": None,
        "allowed": verdict.allowed,
        "reason": verdict.reason,
        "policy_version": version,
    }


def describe_change(row: dict | None) -> dict | None:
    """A change row as the API shows it (history entries and `because`)."""
    if row is None:
        return None
    out = {
        "version": row["version"],
        "at": iso(row["at"]),
        "by": row["by_actor"],
        **({"by_token": row["by_token"]} if "by_token" in row else {}),
        "note": row["note"],
        "type": row["type"],
        "language": row["language"],
    }
    if row["type"] == "mode-switched":
        out["mode"] = row["mode"]
    elif row["type"] == RULE_CHANGED:
        out |= {"rule": row["name"], "action": row["mode"]}
    else:
        out |= {"list": row["list"], "name": row["name"]}
    return out


def describe_grant(grant: dict) -> dict:
    """`because` when an exception decided: its grant (the approval), and the request it answered."""
    return {
        "version": grant["granted_version"],
        "at": iso(grant["granted_at"]),
        "by": grant["granted_by"],
        "note": grant["note"],
        "type": "exception-granted",
        "language": grant["language"],
        "name": grant["name"],
        "exception": {"id": grant["id"], "expires_at": iso(grant["expires_at"])},
        "request": {"id": grant["request_id"]} if grant["request_id"] else None,
    }


__all__ = ["package_at", "timeline", "describe_change", "describe_grant", "state_at", "grant_in_force", "in_force"]
