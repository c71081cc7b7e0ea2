"""Time travel: the policy exactly as it stood at an instant or at a version, and "was NAME allowed then?".

A version (`?version=N`, what the change history links to) shows that version's own state and
what it changed from the one before: one Save stamps all its changes with one instant, so an
instant alone cannot tell them apart.
"""

from __future__ import annotations

from datetime import UTC, datetime

from flask import render_template, request

from application.formats import encode_cursor, parse_instant
from domain.errors import FieldError, GovernanceError, InvalidInputError
from domain.policy import LANGUAGES, LISTS
from domain.rules import RULES
from interface.console.forms import error_items, version_number
from interface.console.instants import instant
from interface.console.session import blueprint, caller, governance
from interface.problems import status_of

FIELDS = ("at", "language", "name", "version")


@blueprint.get("/time-travel")
def time_travel():
    typed = {key: request.args.get(key, "").strip() for key in FIELDS}
    typed["language"] = typed["language"] or "python"
    try:
        policy, package, diff, exceptions = _answers(typed)
    except GovernanceError as error:
        return _page(typed, None, None, None, [], error), status_of(error)
    return _page(typed, policy, package, diff, exceptions, None)


def _answers(typed: dict) -> tuple[dict | None, dict | None, dict | None, list]:
    """The policy then, the package's answer then, a version's differences, the exceptions in force then."""
    workspace, gov = caller()["workspace"], governance()
    diff = None
    if typed["version"]:
        policy, diff = _version(workspace, typed["version"])
        moment = parse_instant(policy["at"], "at") if policy["at"] else datetime.min.replace(tzinfo=UTC)
    else:
        moment = instant(typed["at"], "at", end=True, now=gov.clock())
        if moment is None:
            if typed["name"]:
                rule = "type a UTC date or time, such as 2026-03-03 14:05"
                raise InvalidInputError("Say when: the instant is empty", [FieldError("at", rule)])
            return None, None, None, []
        policy = gov.policy(workspace, moment)
    package = gov.audit.package_at(workspace, typed["language"], typed["name"], moment) if typed["name"] else None
    return policy, package, diff, gov.access.exceptions(workspace, moment)["exceptions"]


def _version(workspace: str, text: str) -> tuple[dict, dict]:
    """Version N's policy, and what it changed from version N - 1 (with the change itself)."""
    version = version_number(text)
    if version is None:
        rule = "must be a whole number from 0 up, such as 3"
        raise InvalidInputError("That is not a version number", [FieldError("version", rule)])
    gov = governance()
    policy = gov.policy_version(workspace, version)
    if version == 0:
        return policy, {"changes": [], "previous": None, "languages": []}
    before = gov.policy_version(workspace, version - 1)
    change = gov.audit.history(workspace, limit=1, cursor=encode_cursor(version - 1))["changes"]
    change = gov.audit.with_rule_values(workspace, change)
    return policy, {"changes": change, "previous": version - 1, "languages": differences(before, policy)}


def differences(before: dict, after: dict) -> list[dict]:
    """Per language, then for egress and the known-malware rule: the mode change (old, new) if
    any, the entries added and removed per list, the rules beyond names set differently (rule,
    old, new; None: off) and the exceptions granted and revoked."""
    parts = [(lang, before[lang], after[lang], LISTS) for lang in LANGUAGES]
    hosts = [{"mode": None, "allow": p["egress"]["allow"] or []} for p in (before, after)]  # None: not narrowed
    parts.append(("egress", *hosts, ("allow",)))
    malware = ({"mode": before["known_malware"]}, {"mode": after["known_malware"]})
    parts.append(("known-malware", *malware, ()))
    granted, revoked = _exceptions_changed(before, after)
    out = []
    for lang, old, new, lists in parts:
        changed = {
            lst: {"added": sorted(set(new[lst]) - set(old[lst])), "removed": sorted(set(old[lst]) - set(new[lst]))}
            for lst in lists
        }
        mode = (old["mode"], new["mode"]) if old["mode"] != new["mode"] else None
        old_rules, new_rules = old.get("rules") or {}, new.get("rules") or {}
        rules = [
            (r, old_rules.get(r), new_rules.get(r)) for r in RULES.get(lang, ()) if old_rules.get(r) != new_rules.get(r)
        ]
        exceptions = {"granted": granted.get(lang, []), "revoked": revoked.get(lang, [])}
        listed = any(v["added"] or v["removed"] for v in changed.values())
        if mode or listed or rules or exceptions["granted"] or exceptions["revoked"]:
            out.append({"language": lang, "mode": mode, "lists": changed, "rules": rules, "exceptions": exceptions})
    return out


def _exceptions_changed(before: dict, after: dict) -> tuple[dict, dict]:
    """Per language, the exceptions `after`'s version granted, and those it revoked: in force at
    the version before and no longer, though not run out by `after`'s instant (a version made
    after an expiry did not end the exception)."""
    granted: dict[str, list] = {}
    revoked: dict[str, list] = {}
    kept = {e["id"] for e in after["exceptions"]}
    for e in after["exceptions"]:
        if e["granted_version"] == after["version"]:
            granted.setdefault(e["language"], []).append(e)
    moment = parse_instant(after["at"], "at")
    for e in before["exceptions"]:
        if e["id"] not in kept and (e["expires_at"] is None or parse_instant(e["expires_at"], "at") > moment):
            revoked.setdefault(e["language"], []).append(e)
    return granted, revoked


def _page(typed, policy, package, diff, exceptions, refusal):
    return render_template(
        "console/time_travel.html",
        typed=typed,
        policy=policy,
        package=package,
        diff=diff,
        exceptions=exceptions,
        head=governance().policy(caller()["workspace"])["version"],
        refusal=refusal,
        problems=error_items(refusal) if refusal else [],
        languages=LANGUAGES,
        now=governance().clock().strftime("%Y-%m-%d %H:%M:%S"),
    )
