"""Versions the index hides, and why: one judgement per version (npm) or file (python) of its
facts, for every reason a version is refused while its project stays allowed - known malware
(an imported advisory) and the language's rules beyond names (release age, version denies,
install scripts, sdists; `domain.rules`).

An enforced finding hides the version (its files 403 with the reason); a monitor finding hides
nothing and is recorded as what the rule would have done (`monitor: [reason, ...]`). Neither is
a denial of the project: a resolver may pick another version.

What was judged goes into the decision's context (`version`, `uploaded_at`, `install_scripts`,
`advisories`), so an answer can be replayed with the facts as they were known then.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from application.formats import iso
from domain.decision import KNOWN_MALWARE, known_malware
from domain.declared import version_label
from domain.rules import Finding, VersionFacts, VersionRules, judge_version


@dataclass(frozen=True)
class Judged:
    """One version's (or file's) facts and what was found."""

    facts: VersionFacts
    advisories: tuple[str, ...]
    findings: tuple[Finding, ...]

    @property
    def hiding(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if not f.monitor)

    @property
    def monitored(self) -> list[str]:
        return list(dict.fromkeys(f.reason for f in self.findings if f.monitor))

    @property
    def message(self) -> str | None:
        """What a client is told of a hidden version: its first reason's message."""
        return self.hiding[0].message if self.hiding else None

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
        message = known_malware(version_label(language, name, facts.version), advisories).message
        findings.append(Finding(KNOWN_MALWARE, message, malware_monitored))
    if rules:
        findings += judge_version(rules, language, name, facts, at)
    return Judged(facts, tuple(advisories), tuple(findings))
