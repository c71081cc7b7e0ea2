"""Plan policy changes from what an admin asked for: validate, canonicalize, drop no-ops.

Two shapes of request: the console's Save (the complete desired state, diffed against the
current one) and incremental commands. Both refuse the whole request, naming every bad field.
"""

from __future__ import annotations

from typing import Any

from domain.egress.workspace import EGRESS, EGRESS_MODES, default_egress, normalised_entries, plan_egress
from domain.entries import parse_entries
from domain.errors import RULES_NAMED, FieldError, InvalidEntriesError, InvalidInputError
from domain.limits import MAX_LIST_ENTRIES
from domain.policy import CHANGE_LANGUAGES, KNOWN_MALWARE, LISTS, MODES, RULE_CHANGED, Change
from domain.rules import ACTIONS as RULE_ACTIONS
from domain.rules import ENFORCE, RULES, read_rules
from domain.specs import LANGUAGES
from domain.text import json_words

ACTIONS = ("switch-mode", "add", "remove", "set-rules", "set-known-malware")
# A Save is the complete desired state: a field left out keeps its saved value, one given is that
# value. A null says neither (keep it? empty it?), so it is refused, naming what to send instead.
NULL_REFUSED = {
    "language": "must be the language's mode, allow, deny and rules; null is not a policy "
    "(leave the language out to keep it as saved)",
    "mode": f"must be one of {', '.join(MODES)}; null is not a mode (leave it out to keep it as saved)",
    "list": "must be a list: an array of entries or one string; null is not a list "
    "(send [] to empty it, or leave it out to keep it as saved)",
    "rules": "must be the language's rules beyond names ({} turns them all off); null is not rules "
    "(leave it out to keep them as saved)",
    "known_malware": f"must be one of {', '.join(RULE_ACTIONS)}; null is not an action "
    "(leave it out to keep it as saved)",
    "egress": 'must be {"allow": [...]} ({"allow": null}: the workspace narrows nothing); null is not an '
    "egress setting (leave it out to keep it as saved)",
}
# Which of NULL_REFUSED each field of a Save, and of one language in it, is.
_SAVE_FIELDS = {**dict.fromkeys(LANGUAGES, "language"), "known_malware": "known_malware", "egress": "egress"}
_LANGUAGE_FIELDS = {"mode": "mode", **dict.fromkeys(LISTS, "list"), "rules": "rules"}


def plan_desired_state(
    state: dict[str, dict[str, Any]],
    desired: dict[str, Any],
    egress: dict[str, Any] | None = None,
    known_malware: str = ENFORCE,
) -> list[Change]:
    """Changes that turn `state` into `desired` (per language: mode, allow, deny, rules; all
    optional), `egress` (the workspace's egress allowlist) into `desired["egress"]["allow"]`, and
    the workspace's `known_malware` action into `desired["known_malware"]`, when given. What is
    left out keeps its saved value; a null is refused (`NULL_REFUSED`)."""
    errors = _nulls(desired, _SAVE_FIELDS)
    changes: list[Change] = []
    for language in LANGUAGES:
        wanted = desired.get(language)
        if wanted is None:
            continue
        changes += _language_diff(language, state[language], wanted, errors)
    if desired.get("known_malware") is not None:
        changes += _plan_known_malware(known_malware, desired["known_malware"], "known_malware", errors)
    if isinstance(desired.get("egress"), dict) and "allow" in desired["egress"]:
        allow = desired["egress"]["allow"]
        steps, bad = plan_egress(egress or default_egress(), allow, "egress.allow")
        errors += bad + (_size_errors(len(allow), "egress.allow") if isinstance(allow, list) else [])
        changes += [_egress_change(kind, value) for kind, value in steps]
    if errors:
        raise _refusal(errors)
    return changes


def _language_diff(language: str, current: dict[str, Any], wanted: dict[str, Any], errors: list[Any]) -> list[Change]:
    errors += _nulls(wanted, _LANGUAGE_FIELDS, f"{language}.")
    changes = []
    mode = wanted.get("mode")
    if mode is not None:
        _check_choice(mode, MODES, f"{language}.mode", errors)
        if mode in MODES and mode != current["mode"]:
            changes.append(Change("mode-switched", language, mode=mode))
    for list_name in LISTS:
        if wanted.get(list_name) is None:
            continue
        names, bad = parse_entries(language, wanted[list_name], f"{language}.{list_name}")
        errors += bad + _size_errors(len(names), f"{language}.{list_name}")
        have = set(current[list_name])
        changes += [Change("entry-removed", language, list_name, n) for n in sorted(have - set(names))]
        changes += [Change("entry-added", language, list_name, n) for n in names if n not in have]
    if wanted.get("rules") is not None:
        changes += _plan_rules(language, current.get("rules") or {}, wanted["rules"], f"{language}.rules", errors)
    return changes


def _nulls(given: dict[str, Any], fields: dict[str, str], prefix: str = "") -> list[FieldError]:
    """One refusal per field of `fields` given as null."""
    return [
        FieldError(prefix + key, NULL_REFUSED[what])
        for key, what in fields.items()
        if key in given and given[key] is None
    ]


def _plan_rules(
    language: str, current: dict[str, object], wanted: object, field: str, errors: list[FieldError]
) -> list[Change]:
    """One change per rule that differs (a rule absent from `wanted` is turned off)."""
    try:
        rules = read_rules(language, wanted, field).to_json()
    except InvalidInputError as refused:
        errors += refused.errors
        return []
    return [
        Change(RULE_CHANGED, language, name=rule, rule=value if isinstance(value, dict) else None)
        for rule in RULES[language]
        if (value := rules.get(rule)) != current.get(rule)
    ]


def _plan_known_malware(current: str, wanted: object, field: str, errors: list[FieldError]) -> list[Change]:
    if not _check_choice(wanted, RULE_ACTIONS, field, errors) or wanted == current:
        return []
    return [Change("mode-switched", KNOWN_MALWARE, mode=str(wanted))]


def plan_incremental(
    state: dict[str, dict[str, Any]],
    commands: list[dict[str, Any]],
    egress: dict[str, Any] | None = None,
    known_malware: str = ENFORCE,
) -> list[Change]:
    """Apply commands in order to a working copy; adding a present entry or removing an absent
    one (or switching to the current mode) plans nothing. Language `egress` edits the workspace's
    egress allowlist (list `allow`; modes open and allowlist). `set-rules` makes a language's
    rules exactly those given; `set-known-malware` (no language) sets the workspace's action."""
    work = {
        lang: {"mode": s["mode"], "allow": set(s["allow"]), "deny": set(s["deny"]), "rules": s.get("rules") or {}}
        for lang, s in state.items()
    }
    egress = egress or default_egress()
    work[EGRESS] = {"mode": egress["mode"], "allow": set(egress["allow"])}
    work[KNOWN_MALWARE] = {"mode": known_malware}
    errors: list[FieldError] = []
    changes: list[Change] = []
    for i, command in enumerate(commands):
        changes += _plan_one(work, command, f"changes[{i}]", errors)
    if errors:
        raise _refusal(errors)
    return changes


def _plan_one(work: dict[str, Any], command: dict[str, Any], where: str, errors: list[Any]) -> list[Change]:
    action: Any = command.get("action")
    language: Any = command.get("language")  # checked below
    if action == "set-known-malware":
        switched = _plan_known_malware(
            work[KNOWN_MALWARE]["mode"], command.get("known_malware"), f"{where}.known_malware", errors
        )
        work[KNOWN_MALWARE]["mode"] = switched[-1].mode if switched else work[KNOWN_MALWARE]["mode"]
        return switched
    bad_before = len(errors)
    _check_choice(action, ACTIONS, f"{where}.action", errors)
    _check_choice(language, CHANGE_LANGUAGES, f"{where}.language", errors)
    if len(errors) > bad_before:
        return []
    if language == EGRESS:
        return _plan_egress_one(work[EGRESS], command, where, errors)
    if action == "switch-mode":
        return _plan_switch(work[language], language, command.get("mode"), where, errors)
    if action == "set-rules":
        ruled = _plan_rules(language, work[language]["rules"], command.get("rules"), f"{where}.rules", errors)
        work[language]["rules"] = {**work[language]["rules"], **{c.name: c.rule for c in ruled}}
        return ruled
    list_name = command.get("list")
    if not _check_choice(list_name, LISTS, f"{where}.list", errors):
        return []
    names, bad = parse_entries(language, command.get("entries"), f"{where}.entries")
    errors += bad
    entries, adding = work[language][list_name], action == "add"
    planned = [n for n in names if (n in entries) != adding]
    entries.update(planned) if adding else entries.difference_update(planned)
    if adding:
        errors += _size_errors(len(entries), f"{where}.entries")
    kind = "entry-added" if adding else "entry-removed"
    return [Change(kind, language, list_name, n) for n in planned]


def _plan_switch(rules: dict[str, Any], language: str, mode: Any, where: str, errors: list[Any]) -> list[Change]:
    if not _check_choice(mode, MODES, f"{where}.mode", errors) or mode == rules["mode"]:
        return []
    rules["mode"] = mode
    return [Change("mode-switched", language, mode=mode)]


def _plan_egress_one(work: dict[str, Any], command: dict[str, Any], where: str, errors: list[Any]) -> list[Change]:
    if command["action"] == "switch-mode":
        mode = command.get("mode")
        if not _check_choice(mode, EGRESS_MODES, f"{where}.mode", errors) or mode == work["mode"]:
            return []
        work["mode"] = mode
        return [_egress_change("mode-switched", mode)]
    if not _check_choice(command.get("list"), ("allow",), f"{where}.list", errors):
        return []
    hosts, bad = normalised_entries(command.get("entries"), f"{where}.entries")
    errors += bad
    adding = command["action"] == "add"
    planned = [h for h in hosts if (h in work["allow"]) != adding]
    work["allow"].update(planned) if adding else work["allow"].difference_update(planned)
    errors += _size_errors(len(work["allow"]), f"{where}.entries") if adding else []
    return [_egress_change("entry-added" if adding else "entry-removed", h) for h in planned]


def _egress_change(kind: str, value: str | None) -> Change:
    if kind == "mode-switched":
        return Change(kind, EGRESS, mode=value)
    return Change(kind, EGRESS, "allow", value)


def _size_errors(size: int, field: str) -> list[FieldError]:
    if size <= MAX_LIST_ENTRIES:
        return []
    return [FieldError(field, f"a list may hold at most {MAX_LIST_ENTRIES} entries; this one would hold {size}")]


def _check_choice(value: object, choices: tuple[Any, ...], field: str, errors: list[Any]) -> bool:
    if value in choices:
        return True
    errors.append(FieldError(field, f"must be one of {', '.join(choices)}; got {json_words(value)}"))
    return False


def _refusal(errors: list[FieldError]) -> InvalidInputError:
    if all(e.field.endswith("]") for e in errors):  # every error names one bad entry
        plural = "entry" if len(errors) == 1 else "entries"
        return InvalidEntriesError(f"{len(errors)} invalid {plural}; nothing was saved", errors)
    return InvalidInputError(f"the request {RULES_NAMED}; nothing was saved", errors)
