"""Judging one version (node) or one file (python) by a language's version rules.

Pure: the rules, the facts the index read from the upstream, and the instant. Each rule that
catches the version gives one `Finding`; an enforced one hides the version (and refuses its
files), a monitored one is only recorded. No finding: the version is shown.
"""

from __future__ import annotations

from datetime import datetime
from functools import lru_cache

from packaging.specifiers import Specifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from domain.instants import iso, later
from domain.patterns import patterns_for
from domain.rules.model import (
    INSTALL_SCRIPTS,
    MONITOR,
    SDIST_REFUSED,
    TOO_NEW,
    VERSION_DENIED,
    Finding,
    MinReleaseAge,
    NamesAllowed,
    VersionFacts,
    VersionRules,
    VersionsDeny,
)
from domain.specs import deny_key
from domain.specs.node_ranges import parse_version, satisfies


def judge_version(rules: VersionRules, language: str, name: str, facts: VersionFacts, at: datetime) -> list[Finding]:
    """The findings of every rule that catches `facts` of package `name` at instant `at`
    (timezone-aware, as `facts.uploaded_at`). Empty when the version is shown unremarked."""
    if not rules:
        return []
    named = _named(language, name)
    found: list[Finding] = []
    if rules.versions_deny is not None:
        found += _denied(rules.versions_deny, language, named, facts.version)
    age = _age_rule(rules, language, named)
    if age is not None:
        found += _too_new(age, named, facts, at)
    scripts = rules.install_scripts
    if scripts is not None and facts.install_scripts is not False and checks_install_scripts(rules, language, name):
        found.append(_finding(INSTALL_SCRIPTS, scripts, named, facts, install_scripts=facts.install_scripts))
    sdists = rules.sdists
    if language == "python" and sdists is not None and facts.sdist and not _listed(language, named, sdists.allow_set):
        found.append(_finding(SDIST_REFUSED, sdists, named, facts))
    return found


def checks_install_scripts(rules: VersionRules, language: str, name: str) -> bool:
    """Whether the install_scripts rule judges this package's versions (node, not a name it allows)."""
    scripts = rules.install_scripts
    return (
        language == "node" and scripts is not None and not _listed(language, _named(language, name), scripts.allow_set)
    )


def _named(language: str, name: str) -> str:
    return deny_key(language, name) if language == "python" else name  # python: PEP 503


def _age_rule(rules: VersionRules, language: str, named: str) -> MinReleaseAge | None:
    """min_release_age, unless the name is exempt from it."""
    rule = rules.min_release_age
    return None if rule is None or _listed(language, named, rule.exempt_set) else rule


def _finding(
    reason: str, rule: MinReleaseAge | VersionsDeny | NamesAllowed, name: str, facts: VersionFacts, **values: object
) -> Finding:
    return Finding(reason, {"name": name, "version": facts.version, **values}, rule.action == MONITOR)


def _listed(language: str, name: str, names: frozenset[str]) -> bool:
    return name in names or any(p in names for p in patterns_for(language, name))


def _denied(rule: VersionsDeny, language: str, name: str, version: str) -> list[Finding]:
    for entry in rule.by_name.get(deny_key(language, name), ()):
        if _in_range(language, version, entry.range):
            return [
                Finding(
                    VERSION_DENIED, {"name": name, "version": version, "entry": entry.entry}, rule.action == MONITOR
                )
            ]
    return []


def _in_range(language: str, version: str, versions: str) -> bool:
    """Prereleases count, and a version the range cannot order is in it: a deny fails closed.
    Python: PEP 440 matching, but `<V` and `>V` by ordering alone, as node's do: `<2` takes 2.0rc1
    and 2.0.dev3, and `>1.0` takes 1.0.post1, which PEP 440's exclusive comparisons leave out
    (a local build of V itself, 1.0+local, is V, as node ignores build metadata)."""
    if language == "node":
        return satisfies(version, versions, include_prerelease=True) or parse_version(version) is None
    try:
        candidate = Version(version)
    except InvalidVersion:
        return True
    return all(_matches(spec, bound, candidate) for spec, bound in _specifiers(versions))


def _matches(spec: Specifier, bound: Version | None, candidate: Version) -> bool:
    if bound is None:
        return spec.contains(candidate, prereleases=True)
    if Version(candidate.public) == bound:
        return False
    return candidate < bound if spec.operator == "<" else candidate > bound


@lru_cache(maxsize=4096)
def _specifiers(text: str) -> tuple[tuple[Specifier, Version | None], ...]:
    """Each specifier, with its bound when it is `<` or `>` (ordering alone judges those)."""
    return tuple((s, Version(s.version) if s.operator in ("<", ">") else None) for s in SpecifierSet(text))


def ripens_at(rules: VersionRules, language: str, name: str, facts: VersionFacts) -> datetime | None:
    """The instant from which min_release_age no longer catches `facts`: the only way the
    instant judged changes `judge_version`'s findings (before it, they hold too-new; from it on,
    not). None: the instant changes nothing (no such rule, an exempt name, no upload time, or
    one so late it never ripens), so one judgement holds at every instant."""
    rule = _age_rule(rules, language, _named(language, name))
    if rule is None or facts.uploaded_at is None:
        return None
    return later(facts.uploaded_at, rule.age)


def _too_new(rule: MinReleaseAge, name: str, facts: VersionFacts, at: datetime) -> list[Finding]:
    uploaded = facts.uploaded_at
    if uploaded is not None and at - uploaded >= rule.age:
        return []
    return [
        _finding(
            TOO_NEW, rule, name, facts, uploaded_at=iso(uploaded), judged_at=iso(at), min_release_age=rule.age_text
        )
    ]


def rules_for(rules: VersionRules, language: str, name: str) -> dict[str, object]:
    """The rules that can hide a version of `name`, in the shape they are saved in, narrowed to
    it: a rule whose exempt or allow list holds the name is left out, and only this name's
    version deny entries are shown. `{}`: no rule looks at its versions."""
    named = _named(language, name)
    shown: dict[str, object] = {}
    age = _age_rule(rules, language, named)
    if age is not None:
        shown["min_release_age"] = {"age": age.age_text, "action": age.action}
    deny = rules.versions_deny
    entries = deny.by_name.get(deny_key(language, named), ()) if deny is not None else ()
    if deny is not None and entries:
        shown["versions_deny"] = {"entries": [e.entry for e in entries], "action": deny.action}
    for key, rule in (("install_scripts", rules.install_scripts), ("sdists", rules.sdists)):
        if rule is not None and not _listed(language, named, rule.allow_set):
            shown[key] = {"action": rule.action}
    return shown
