"""Rules beyond names: per-version rules of a language's policy (`model`), read from what an
admin sent (`read`) and judged against the facts the index knows of one version (`judge`)."""

from domain.rules.judge import checks_install_scripts, judge_version, ripens_at, rules_for
from domain.rules.model import (
    ACTIONS,
    ENFORCE,
    INSTALL_SCRIPTS,
    MONITOR,
    REASONS,
    RULES,
    SDIST_REFUSED,
    TOO_NEW,
    VERSION_DENIED,
    Finding,
    MinReleaseAge,
    NamesAllowed,
    VersionDeny,
    VersionFacts,
    VersionRules,
    VersionsDeny,
    sdist_file,
)
from domain.rules.read import read_rules

__all__ = [
    "ACTIONS",
    "ENFORCE",
    "INSTALL_SCRIPTS",
    "MONITOR",
    "REASONS",
    "RULES",
    "SDIST_REFUSED",
    "TOO_NEW",
    "VERSION_DENIED",
    "Finding",
    "MinReleaseAge",
    "NamesAllowed",
    "VersionDeny",
    "VersionFacts",
    "VersionRules",
    "VersionsDeny",
    "judge_version",
    "checks_install_scripts",
    "read_rules",
    "ripens_at",
    "rules_for",
    "sdist_file",
]
