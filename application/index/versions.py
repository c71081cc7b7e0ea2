"""Versions the index hides, and why: one judgement per version (npm) or file (python) of its
facts, for every reason a version is refused while its project stays allowed - known malware
(an imported advisory) and the language's rules beyond names (release age, version denies,
install scripts, sdists; `domain.rules`).

A page's judgement is kept (`Judgements`) by everything it depends on - the upstream page's
revision, the policy version, the advisories' version - until the first too-new version on it
grows old enough: a page read again is not parsed nor judged again (most pages are).

An enforced finding hides the version (its files 403 with the reason); a monitor finding hides
nothing and is recorded as what the rule would have done (`monitor: [reason, ...]`). Neither is
a denial of the project: a resolver may pick another version.

What was judged goes into the decision's context (`version`, `uploaded_at`, `install_scripts`,
`advisories`), so an answer can be replayed with the facts as they were known then; a file whose
name says no version records `version: null`, and is refused while the project's versions are
judged (`judge_unknown`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from application.advisories import Advisories
from application.formats import iso
from application.lru import SizedLru, weigh
from application.messages import message_of
from domain.decision import KNOWN_MALWARE, VERSION_UNKNOWN, known_malware
from domain.instants import later
from domain.policy import LanguageRules
from domain.rules import MONITOR, TOO_NEW, Finding, VersionFacts, VersionRules, judge_version

FOREVER = datetime.max.replace(tzinfo=UTC)


@dataclass(frozen=True)
class Judged:
    """One version's (or file's) facts and what was found."""

    facts: VersionFacts
    advisories: tuple[str, ...]
    findings: tuple[Finding, ...]
    language: str

    @property
    def hiding(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if not f.monitor)

    @property
    def monitored(self) -> list[str]:
        return list(dict.fromkeys(f.reason for f in self.findings if f.monitor))

    @property
    def message(self) -> str | None:
        """What a client is told of a hidden version: its first reason's message."""
        return message_of(self.hiding[0], self.language) if self.hiding else None

    def context(self) -> dict:
        """The facts judged, as the decision records them (an unknown upload time is null: it is
        what a release-age rule refused)."""
        context: dict = {"version": self.facts.version, "uploaded_at": iso(self.facts.uploaded_at)}
        if self.facts.install_scripts is not None:
            context["install_scripts"] = self.facts.install_scripts
        context["advisories"] = list(self.advisories)
        if self.monitored:
            context["monitor"] = self.monitored
        return context


def judge_facts(
    rules: VersionRules,
    advisories: list[str],
    language: str,
    name: str,
    facts: VersionFacts,
    at: datetime,
    malware_monitored: bool = False,
) -> Judged:
    """Known malware first (`advisories`: the ids that affect this version), then the rules."""
    findings = []
    if advisories:
        found = known_malware(name, facts.version, advisories)
        findings.append(Finding(KNOWN_MALWARE, found.params or {}, malware_monitored))
    if rules:
        findings += judge_version(rules, language, name, facts, at)
    return Judged(facts, tuple(advisories), tuple(findings), language)


def judges(rules: LanguageRules, advisories: Advisories, language: str, name: str) -> bool:
    """Whether any version of this project may be hidden: an advisory names it, or the language
    has rules beyond names. Neither (most projects under most policies): its versions need not
    be read."""
    return bool(advisories.names(language, name)) or bool(rules.version_rules)


def judge_unknown(rules: LanguageRules, advisories: Advisories, name: str, facts: VersionFacts, file: str) -> Judged:
    """A file whose name says no version (`facts.version` None): no rule can judge it, so it is
    refused (`version-unknown`, whatever a rule's action: fail closed) whenever its project's
    versions are judged (`judges`); its other facts are recorded all the same."""
    refused = judges(rules, advisories, rules.language, name)
    findings = (Finding(VERSION_UNKNOWN, {"name": name, "file": file}, False),) if refused else ()
    return Judged(facts, (), findings, rules.language)


def judge_all(
    rules: LanguageRules,
    advisories: Advisories,
    language: str,
    name: str,
    facts: Mapping[str, VersionFacts],
    at: datetime,
) -> dict[str, Judged]:
    """Each key's facts (npm versions, python files) judged as the index judges them at `at`:
    the advisories affecting its version, the language's rules and its word on malware."""
    named = advisories.names(language, name)
    monitored = rules.known_malware == MONITOR
    return {
        key: judge_facts(
            rules.version_rules,
            advisories.affecting(language, name, f.version) if named else [],
            language,
            name,
            f,
            at,
            monitored,
        )
        for key, f in facts.items()
    }


@dataclass(frozen=True)
class Hidden:
    """One page's judgement: {key: why} for the keys hidden; the versions wholly hidden (each
    its judged keys), newest first; and until when it holds."""

    keys: dict[str, str]
    versions: tuple[tuple[Judged, ...], ...]
    until: datetime

    def also(self, keys: dict[str, str]) -> Hidden:
        """This judgement hiding `keys` too: files no rule can judge (their version unknown),
        hidden without being a version of the record's."""
        return replace(self, keys={**self.keys, **keys}) if keys else self


NOTHING = Hidden({}, (), FOREVER)


def hidden(judged: dict[str, Judged], rules: VersionRules) -> Hidden:
    """What `judged` hides. Python keys are files: a version is wholly hidden once all are."""
    by_version: dict[str, list[Judged]] = {}
    for found in judged.values():
        by_version.setdefault(found.facts.version, []).append(found)
    refused = sorted((tuple(f) for f in by_version.values() if all(j.hiding for j in f)), key=_newest_first)
    age = rules.min_release_age.age if rules.min_release_age is not None else None
    ripening = [
        later(j.facts.uploaded_at, age)
        for j in judged.values()
        if age is not None and j.facts.uploaded_at is not None and any(f.reason == TOO_NEW for f in j.findings)
    ]
    keys = {key: found.message for key, found in judged.items() if found.hiding}
    # None: uploaded so late it ripens past the calendar's end, so it holds that long
    return Hidden(keys, tuple(refused), min((r for r in ripening if r is not None), default=FOREVER))


def _newest_first(files: tuple[Judged, ...]) -> tuple:
    """Unknown upload times first (they are what a release-age rule hides), then the newest."""
    times = [j.facts.uploaded_at for j in files]
    if None in times:
        return (0, 0.0)
    return (1, -max(times).timestamp())


class Judgements:
    """Pages judged, least recently used out past `limit` bytes (`application.index.memory`);
    one is used until its `until`."""

    def __init__(self, limit: int):
        self.memory: SizedLru[tuple, Hidden] = SizedLru(limit, _weight)

    def get(self, key: tuple, at: datetime) -> Hidden | None:
        found = self.memory.get(key)
        return None if found is None or found.until <= at else found

    def put(self, key: tuple, judgement: Hidden) -> None:
        self.memory.put(key, judgement)


# A wholly hidden version's Judged with its facts, findings and advisories (tracemalloc: ~770
# bytes for a wheel's); the hidden keys and their messages are weighed as they are.
JUDGED_BYTES = 768


def _weight(key: tuple, judgement: Hidden) -> int:
    judged = sum(len(version) for version in judgement.versions)
    return weigh(key, judgement.keys) + JUDGED_BYTES * judged
