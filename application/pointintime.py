"""'Was NAME allowed at T?' and its timeline, from indexed lookups only (never a full replay).

The answer is computed by the same `judge` the live gate uses, over the rules as they stood for
this one name: the language's mode then, whether the name or a pattern matching it (and, for
Node deny lists, any spelling of either) was listed then, and whether an exception for it was in
force at that instant (and whether one in force lifted the deny entries naming it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from itertools import groupby

from application.formats import iso
from application.store.reads import NameRows, ReadModel
from domain.decision import EXCEPTION_REASON, judge
from domain.patterns import matches
from domain.policy import DEFAULT_MODE, RULE_CHANGED, LanguageRules
from domain.specs import Spec, deny_key

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

    def apply(self, row: dict, name: str) -> bool:
        """Applies one change; whether it concerns this name (an allow entry of another spelling
        under the same key does not)."""
        if row["type"] == "mode-switched":
            self.mode, self.mode_row = row["mode"], row
            return True
        present = row["type"] == "entry-added"
        if row["list"] == "deny":
            (self.denied_spellings.add if present else self.denied_spellings.discard)(row["name"])
        elif row["name"] == name or matches(row["language"], row["name"], name):
            (self.allowed_entries.add if present else self.allowed_entries.discard)(row["name"])
        else:
            return False
        self.rows[(row["list"], row["name"])] = row
        return True

    def verdict(
        self, workspace: str, language: str, name: str, grants: InForce = (None, None), at: datetime | None = None
    ):
        grant, lift = grants
        if lift is not None and self.denied_since(language, name, lift["granted_version"]):
            lift = None  # denied anew after the grant: a lift covers the entries it was granted over
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

    def denied_since(self, language: str, name: str, version: int) -> bool:
        """Whether a deny entry naming the name (any spelling), listed now, was added after
        `version`: as the Policy aggregate holds a lift off (`Policy._add_entry`)."""
        key = deny_key(language, name)
        return any(
            listed == "deny" and row["type"] == "entry-added" and row["version"] > version
            for (listed, spelled), row in self.rows.items()
            if deny_key(language, spelled) == key
        )

    def because(self, reason: str) -> dict | None:
        """The latest change that could have produced `reason` (see `CAUSES`), or None for the
        default policy. Each entry's row is its last change, so an added one is still listed and a
        removed one still absent; the mode row is the switch to the mode in force."""
        causes = CAUSES.get(reason)
        rows = [
            r
            for (lst, _), r in self.rows.items()
            if causes is None or (lst, r["type"]) in causes  # a reason judged otherwise: any of them
        ]
        if self.mode_row is not None and (causes is None or "mode-switched" in causes):
            rows.append(self.mode_row)
        return max(rows, key=lambda r: r["version"], default=None)


# What can produce each reason: the switch to the mode in force, and (list, change type) of the
# name's entries (the name, the patterns matching it, and for deny lists every spelling of either).
# A deny-list removal never puts a name off the allow list, nor an allow entry on the deny list.
CAUSES: dict[str, set] = {
    "matches-the-deny-list": {("deny", "entry-added")},
    "not-on-the-deny-list": {"mode-switched", ("deny", "entry-removed")},
    "matches-the-allow-list": {"mode-switched", ("allow", "entry-added"), ("deny", "entry-removed")},
    "not-on-the-allow-list": {"mode-switched", ("allow", "entry-removed")},
}


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


def deciding(standing: InForce, reason: str) -> dict | None:
    """The exception that decided an answer of `reason`: the lifting one when a lift let the name
    in, else the latest in force (`because` names it when an exception decided)."""
    exception, lift = standing
    return lift if reason == EXCEPTION_REASON and lift is not None else exception


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


def package_at(
    found: NameRows,
    grants: list[dict],
    workspace: str,
    language: str,
    name: str,
    at: datetime,
    change: Callable[[int], dict | None],
) -> dict:
    """`found`: `ReadModel.name_at` at `at`; `grants`: every exception ever granted for this name
    (see `exceptions_for_name`); `change`: a version's change row (`ReadModel.change`), read only
    when an exception's revocation decided the answer."""
    version, state = found.version, state_at(name, found.changes)
    standing = in_force(grants, version, at)
    verdict = state.verdict(workspace, language, name, standing, at)
    grant = deciding(standing, verdict.reason)
    return {
        "language": language,
        "name": name,
        "at": iso(at),
        "allowed": verdict.allowed,
        "reason": verdict.reason,
        "mode": state.mode,
        "policy_version": version,
        "because": describe(cause(state, verdict.reason, grant, grants, version, at), change),
    }


# What decided an answer or opened an interval: ("change", a change row), or an exception (a
# grants row) that was "granted", "revoked" or "expired" then.
Source = tuple[str, dict]


def cause(state: NameState, reason: str, grant: dict | None, grants: list[dict], version: int, at: datetime):
    """The latest change that could have produced `reason` at version `version`, instant `at`:
    the exception in force when it decided; for a name off the allow list (or on the deny list),
    the exception for it (lifting that list's entry) that ended last (revoked by `version` or
    expired by `at`) when it ended after what `NameState.because` finds; else that."""
    if reason == EXCEPTION_REASON and grant is not None:
        return ("granted", grant)
    row = state.because(reason)
    # An exception that let the name in ended: it denies again by the rule it had stood in for
    # (off the allow list, or on the deny list when it lifted the entry).
    ending = {"not-on-the-allow-list": grants, "matches-the-deny-list": [g for g in grants if g["lifts_deny"]]}
    if reason in ending:
        ended = last_ended(ending[reason], version, at)
        if ended is not None and (row is None or _when(ended) > (row["at"], row["version"])):
            return ended
    return None if row is None else ("change", row)


def last_ended(grants: list[dict], version: int, at: datetime) -> Source | None:
    """The exception that ended last by `version` and `at`: revoked, or expired (an expiry is no
    change: it has the instant and no version of its own)."""
    ended: list[Source] = []
    for g in grants:
        if g["revoked_version"] is not None and g["revoked_version"] <= version:
            ended.append(("revoked", g))
        elif g["granted_version"] <= version and g["expires_at"] is not None and g["expires_at"] <= at:
            ended.append(("expired", g))
    return max(ended, key=_when, default=None)


def _when(source: Source) -> tuple[datetime, int]:
    """When a source happened, in the order of the changes (a same-instant expiry first)."""
    kind, row = source
    if kind == "change":
        return row["at"], row["version"]
    if kind == "granted":
        return row["granted_at"], row["granted_version"]
    if kind == "revoked":
        return row["revoked_at"], row["revoked_version"]
    return row["expires_at"], -1


def describe(source: Source | None, change: Callable[[int], dict | None], opener: bool = False) -> dict | None:
    """A source as `because` shows it (`opener`: as a timeline interval's opener, where an expiry
    is itself, not the grant that set it)."""
    if source is None:
        return None
    kind, row = source
    if kind == "change":
        return describe_change(row)
    if kind == "revoked":
        return describe_revocation(row, change(row["revoked_version"]))
    if kind == "expired" and opener:
        return describe_expiry(row)
    return describe_grant(row)  # granted, or expired: the approval that set the expiry


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
    `package_at`. Each interval has `opened_by`, the change at which it begins (`opener`); the
    first one, what decided its answer at the period's start (`cause`)."""
    answer = {"language": language, "name": name, "from": iso(start), "to": iso(end), "intervals": []}
    answer["decisions"] = q.decision_counts(workspace, language, name, start, end)
    if created >= end:
        return answer
    start = max(start, created)

    def change(number: int) -> dict | None:
        return q.change(workspace, number)

    version, state = found.version, state_at(name, found.changes)
    standing = in_force(grants, version, start)
    verdict = state.verdict(workspace, language, name, standing, start)
    decided = cause(state, verdict.reason, deciding(standing, verdict.reason), grants, version, start)
    intervals = answer["intervals"] = [_interval(verdict, start, version, describe(decided, change))]
    rows = q.changes_for_name(workspace, language, name, version, end)
    moments = {at: list(together) for at, together in groupby(rows, key=lambda r: r["at"])}
    for g in grants:  # an exception starts, ends or is revoked: the answer may change then
        for moment in (g["granted_at"], g["expires_at"], g["revoked_at"]):
            if moment is not None and start < moment < end:
                moments.setdefault(moment, [])
    for at in sorted(moments):  # one atomic save is one instant
        applied = [row for row in moments[at] if state.apply(row, name)]
        now_version = q.version_at(workspace, at)
        standing = in_force(grants, now_version, at)
        verdict = state.verdict(workspace, language, name, standing, at)
        current = intervals[-1]
        if (verdict.allowed, verdict.reason) != (current["allowed"], current["reason"]):
            current["to"] = iso(at)
            decided = cause(state, verdict.reason, deciding(standing, verdict.reason), grants, now_version, at)
            source = opener(decided, applied, grants, now_version, at)
            intervals.append(_interval(verdict, at, now_version, describe(source, change, opener=True)))
    intervals[-1]["to"] = iso(end)
    return answer


def opener(decided: Source | None, applied: list[dict], grants: list[dict], version: int, at: datetime):
    """The change at which an interval beginning at `at` begins: what decided its answer when that
    happened at `at`; else the latest change of this name made then (one save); else the exception
    revoked, granted or expired then. Never anything older than `at` unless nothing happened then."""
    if decided is not None and _when(decided)[0] == at:
        return decided
    if applied:
        return ("change", applied[-1])
    stood = [g for g in grants if g["granted_version"] <= version]
    happened: list[Source] = [
        ("revoked", g) for g in stood if g["revoked_at"] == at and g["revoked_version"] <= version
    ]
    happened += [("granted", g) for g in stood if g["granted_at"] == at]
    happened += [("expired", g) for g in stood if g["expires_at"] == at]
    return happened[0] if happened else decided


def _interval(verdict, start: datetime, version: int, opened_by: dict | None) -> dict:
    return {
        "from": iso(start),
        "to": None,
        "allowed": verdict.allowed,
        "reason": verdict.reason,
        "policy_version": version,
        "opened_by": opened_by,
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


def describe_revocation(grant: dict, row: dict | None) -> dict:
    """`because` when revoking an exception decided: the revocation's change (`row`, read by its
    version; the grant's own record of it if none is found), the exception and the request."""
    change = describe_change(row) or {
        "version": grant["revoked_version"],
        "at": iso(grant["revoked_at"]),
        "by": grant["revoked_by"],
        "note": "",
        "type": "exception-revoked",
        "language": grant["language"],
        "name": grant["name"],
    }
    return change | {
        "exception": {"id": grant["id"], "expires_at": iso(grant["expires_at"])},
        "request": {"id": grant["request_id"]} if grant["request_id"] else None,
    }


def describe_expiry(grant: dict) -> dict:
    """A timeline interval opened by an exception's expiry, which is no change: the grant that set
    it (its version, who and the note), at the instant it ended (the console's own type)."""
    return describe_grant(grant) | {"type": "exception-expired", "at": iso(grant["expires_at"])}


__all__ = [
    "package_at",
    "timeline",
    "describe_change",
    "describe_grant",
    "describe_revocation",
    "state_at",
    "grant_in_force",
    "in_force",
]
