"""Reading one language's `rules` as an admin sent them: validated, canonical, bounded.

Every bad field is named (`python.rules.min_release_age.age`) with the rule it breaks, and the
whole body is refused: nothing half-read is ever saved.
"""

from __future__ import annotations

from datetime import timedelta

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from domain.durations import parse_duration
from domain.entries import not_entries, parse_entries, split_entries
from domain.errors import FieldError, InvalidInputError
from domain.limits import MAX_LIST_ENTRIES, MAX_VERSION_DENIES, MAX_VERSION_DENY_TEXT
from domain.rules.model import (
    ACTIONS,
    ENFORCE,
    RULES,
    MinReleaseAge,
    NamesAllowed,
    VersionDeny,
    VersionRules,
    VersionsDeny,
)
from domain.specs import LANGUAGE_TITLES
from domain.specs.node_semver import comparator_sets
from domain.specs.npm import valid_name
from domain.text import json_words

_FIELDS = {
    "min_release_age": ("age", "exempt", "action"),
    "versions_deny": ("entries", "action"),
    "install_scripts": ("allow", "action"),
    "sdists": ("allow", "action"),
}
_DENY_RULE = {
    "python": "a version deny entry is a package name and a PEP 440 version specifier, such as 'requests<2.20'",
    "node": "a version deny entry is a package name, '@' and a node-semver range, such as 'left-pad@<1.3'",
}


def read_rules(language: str, body: object, field: str) -> VersionRules:
    """The rules `body` sets for `language` (`{}`: all off). `field` names `body` in errors, such
    as `python.rules`. Raises `InvalidInputError` naming every bad field."""
    if not isinstance(body, dict):  # null or false too: `{}` is how they are all turned off
        rule = f"must be an object of rules ({', '.join(RULES[language])}), not {json_words(body)}"
        raise _refusal([FieldError(field, rule)])
    errors: list[FieldError] = []
    for key, value in body.items():
        if key not in RULES[language] and value is not None:  # null: off, whichever rule it names
            title = LANGUAGE_TITLES[language]
            rule = f"is not a {title} rule; the {title} rules are {', '.join(RULES[language])}"
            errors.append(FieldError(f"{field}.{key}", rule))
    read = {key: _rule_body(body.get(key), f"{field}.{key}", key, errors) for key in RULES[language]}
    age, deny = read.get("min_release_age"), read.get("versions_deny")
    rules = VersionRules(
        min_release_age=_min_release_age(language, age, f"{field}.min_release_age", errors)
        if age is not None
        else None,
        versions_deny=_versions_deny(language, deny, f"{field}.versions_deny", errors) if deny is not None else None,
        install_scripts=_names_allowed(language, read.get("install_scripts"), f"{field}.install_scripts", errors),
        sdists=_names_allowed(language, read.get("sdists"), f"{field}.sdists", errors),
    )
    if errors:
        raise _refusal(errors)
    return rules


def _rule_body(value: object, field: str, rule: str, errors: list[FieldError]) -> dict[str, object] | None:
    """One rule's object (None: off), its keys checked."""
    if value is None:
        return None
    if not isinstance(value, dict):
        errors.append(FieldError(field, f"must be an object with {', '.join(_FIELDS[rule])}, or null to turn it off"))
        return None
    for key in value:
        if key not in _FIELDS[rule]:
            errors.append(
                FieldError(f"{field}.{key}", f"is not a field of {rule}; its fields are {', '.join(_FIELDS[rule])}")
            )
    return value


def _action(body: dict[str, object], field: str, errors: list[FieldError]) -> str:
    if "action" not in body:
        return ENFORCE
    action = body["action"]
    if action not in ACTIONS:
        errors.append(FieldError(f"{field}.action", f"must be one of {', '.join(ACTIONS)}; got {json_words(action)}"))
        return ENFORCE
    return str(action)


def _names(language: str, value: object, field: str, errors: list[FieldError]) -> tuple[str, ...]:
    """Names or patterns, canonical and sorted, as list entries are read; a version is refused.
    Null (or absent) is none, as the schema says; any other value that is no list is refused."""
    names, bad = parse_entries(language, [] if value is None else value, field, True)
    errors += bad
    if len(names) > MAX_LIST_ENTRIES:
        errors.append(FieldError(field, f"may hold at most {MAX_LIST_ENTRIES} names; it holds {len(names)}"))
    return tuple(sorted(names))


def _min_release_age(language: str, body: dict[str, object], field: str, errors: list[FieldError]) -> MinReleaseAge:
    age = body.get("age")
    try:
        length = parse_duration(age, f"{field}.age")
    except InvalidInputError as refused:
        errors += refused.errors
        length = timedelta(0)  # never saved: the errors refuse the body
    exempt = _names(language, body.get("exempt"), f"{field}.exempt", errors)
    return MinReleaseAge(length, exempt, _action(body, field, errors))


def _names_allowed(
    language: str, body: dict[str, object] | None, field: str, errors: list[FieldError]
) -> NamesAllowed | None:
    if body is None:
        return None
    return NamesAllowed(_names(language, body.get("allow"), f"{field}.allow", errors), _action(body, field, errors))


def _versions_deny(language: str, body: dict[str, object], field: str, errors: list[FieldError]) -> VersionsDeny | None:
    """None when the rule holds no entry: an empty deny denies nothing, so it is off."""
    value = body.get("entries")
    if not isinstance(value, (str, list)):
        errors.append(not_entries(value, f"{field}.entries"))
        return None
    found: dict[str, VersionDeny] = {}
    for index, text in enumerate(split_entries(language, value)):
        where = f"{field}.entries[{index}]"
        if index >= MAX_VERSION_DENIES:
            errors.append(FieldError(f"{field}.entries", f"may hold at most {MAX_VERSION_DENIES} entries"))
            break
        entry, problem = _version_deny(language, text)
        if entry is None:
            errors.append(FieldError(where, f"{problem}; {_DENY_RULE[language]}"))
        else:
            found.setdefault(entry.entry, entry)
    action = _action(body, field, errors)
    return VersionsDeny(tuple(found[k] for k in sorted(found)), action) if found else None


def _version_deny(language: str, text: object) -> tuple[VersionDeny | None, str]:
    if not isinstance(text, str):
        return None, f"must be a string, not {json_words(text)}"
    if len(text) > MAX_VERSION_DENY_TEXT:
        return None, f"an entry may be at most {MAX_VERSION_DENY_TEXT} characters"
    return _python_deny(text.strip()) if language == "python" else _node_deny(text.strip())


def _python_deny(text: str) -> tuple[VersionDeny | None, str]:
    try:
        requirement = Requirement(text)
    except InvalidRequirement:
        return None, f"{text!r} is not a name with a version specifier"
    if requirement.url or requirement.marker or requirement.extras:
        return None, f"{text!r} may hold only a name and a version specifier (no extras, markers or url)"
    if not requirement.specifier:
        return None, f"{text!r} names no versions (to deny every version, put the name on the deny list)"
    name, versions = canonicalize_name(requirement.name), str(requirement.specifier)
    return VersionDeny(name, versions, f"{name}{versions}"), ""


def _node_deny(text: str) -> tuple[VersionDeny | None, str]:
    at = text.find("@", 1)  # a scope's own `@` comes first
    name, versions = (text[:at].strip(), text[at + 1 :].strip()) if at > 0 else (text, "")
    if not valid_name(name):
        return None, f"{name!r} is not a valid npm package name"
    if not versions:
        return None, f"{text!r} names no versions (to deny every version, put the name on the deny list)"
    sets = comparator_sets(versions, loose=False)  # as node-semver reads a range: every word counts
    if sets is None:
        return None, f"{versions!r} is not a node-semver range"
    if any(s == [""] for s in sets):
        return None, f"{versions!r} matches every version (to deny every version, put the name on the deny list)"
    return VersionDeny(name, versions, f"{name}@{versions}"), ""


def _refusal(errors: list[FieldError]) -> InvalidInputError:
    return InvalidInputError("the rules break what errors name; nothing was saved", errors)
