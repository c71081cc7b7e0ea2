"""Rules beyond names: what a language's version rules are, and the facts they judge.

A name on the allow list vouches for a project, not for every version of it. These rules look at
one version (node) or one file (python) and say whether it is shown: a release younger than a
minimum age, a version an admin denied, install-time code. Each rule is off unless set, and has an
action: `enforce` hides what it catches, `monitor` only records what it would have hidden.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from domain.durations import format_duration, parse_duration

TOO_NEW, VERSION_DENIED, INSTALL_SCRIPTS, SDIST_REFUSED = (
    "too-new",
    "version-denied",
    "install-scripts",
    "sdist-refused",
)
REASONS = (TOO_NEW, VERSION_DENIED, INSTALL_SCRIPTS, SDIST_REFUSED)
ENFORCE, MONITOR = "enforce", "monitor"
ACTIONS = (ENFORCE, MONITOR)
# The rules each language may carry: install scripts are npm's, source distributions Python's.
RULES = {
    "python": ("min_release_age", "versions_deny", "sdists"),
    "node": ("min_release_age", "versions_deny", "install_scripts"),
}


def sdist_file(filename: str) -> bool:
    """Whether a Python distribution file is a source distribution: anything but a wheel."""
    return not filename.endswith(".whl")


@dataclass(frozen=True)
class VersionFacts:
    """What the index knows about one version (node) or one file (python)."""

    version: str
    uploaded_at: datetime | None  # None: upstream gave none -> too new (fail closed)
    # node: the manifest declares preinstall/install/postinstall or hasInstallScript;
    # None: not known, which the install_scripts rule treats as True (fail closed)
    install_scripts: bool | None = None
    sdist: bool = False  # python: this file is a source distribution


@dataclass(frozen=True)
class Finding:
    """What one rule says of one version: hidden (enforce), or would have been (monitor)."""

    reason: str  # one of REASONS
    # what its message needs: the package (`name`, `version`) and the rule's values that caught it
    # (`application.messages` words it)
    params: Mapping[str, object]
    monitor: bool  # True: the rule's action is monitor (serve, record only)


@dataclass(frozen=True)
class MinReleaseAge:
    """Versions uploaded less than `age` before the instant judged are too new; `exempt` names
    (or patterns, `domain.patterns`) are never."""

    age: timedelta
    exempt: tuple[str, ...] = ()
    action: str = ENFORCE
    exempt_set: frozenset[str] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "exempt_set", frozenset(self.exempt))

    @property
    def age_text(self) -> str:
        return format_duration(self.age)

    def to_json(self) -> dict[str, object]:
        return {"age": self.age_text, "exempt": list(self.exempt), "action": self.action}


@dataclass(frozen=True)
class VersionDeny:
    """One denied range of one package: `name` canonical, `range` a PEP 440 specifier set
    (python, `<2.20`) or a node-semver range (node, `<1.3`); `entry` the two as shown
    (`requests<2.20`, `left-pad@<1.3`)."""

    name: str
    range: str
    entry: str


@dataclass(frozen=True)
class VersionsDeny:
    entries: tuple[VersionDeny, ...]
    action: str = ENFORCE
    # entries by the name's deny key (node: lower case, to fail closed as the deny list does)
    by_name: Mapping[str, tuple[VersionDeny, ...]] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        by_name: dict[str, tuple[VersionDeny, ...]] = {}
        for entry in self.entries:
            by_name[entry.name.lower()] = (*by_name.get(entry.name.lower(), ()), entry)
        object.__setattr__(self, "by_name", by_name)

    def to_json(self) -> dict[str, object]:
        return {"entries": [e.entry for e in self.entries], "action": self.action}


@dataclass(frozen=True)
class NamesAllowed:
    """A rule that refuses something (install scripts, source distributions) for every name but
    those in `allow` (names or patterns)."""

    allow: tuple[str, ...] = ()
    action: str = ENFORCE
    allow_set: frozenset[str] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "allow_set", frozenset(self.allow))

    def to_json(self) -> dict[str, object]:
        return {"allow": list(self.allow), "action": self.action}


@dataclass(frozen=True)
class VersionRules:
    """One language's rules; `VersionRules()` is all off, and falsy."""

    min_release_age: MinReleaseAge | None = None
    versions_deny: VersionsDeny | None = None
    install_scripts: NamesAllowed | None = None  # node
    sdists: NamesAllowed | None = None  # python

    def __bool__(self) -> bool:
        return any(
            rule is not None for rule in (self.min_release_age, self.versions_deny, self.install_scripts, self.sdists)
        )

    def to_json(self) -> dict[str, object]:
        """The API shape, only the rules that are on (`{}` when all are off)."""
        shown: dict[str, object] = {}
        if self.min_release_age is not None:
            shown["min_release_age"] = self.min_release_age.to_json()
        if self.versions_deny is not None:
            shown["versions_deny"] = self.versions_deny.to_json()
        if self.install_scripts is not None:
            shown["install_scripts"] = self.install_scripts.to_json()
        if self.sdists is not None:
            shown["sdists"] = self.sdists.to_json()
        return shown

    @classmethod
    def from_json(cls, language: str, data: dict[str, object] | None) -> VersionRules:
        """Rules as `to_json` wrote them (stored state, already validated): not checked again."""
        if not data:
            return cls()
        age, deny, scripts, sdists = (
            data.get(k) for k in ("min_release_age", "versions_deny", "install_scripts", "sdists")
        )
        return cls(
            MinReleaseAge(parse_duration(age["age"]), tuple(age["exempt"]), age["action"])
            if isinstance(age, dict)
            else None,
            VersionsDeny(tuple(_split(language, e) for e in deny["entries"]), deny["action"])
            if isinstance(deny, dict)
            else None,
            _names_allowed(scripts),
            _names_allowed(sdists),
        )


def _names_allowed(data: object) -> NamesAllowed | None:
    return NamesAllowed(tuple(data["allow"]), data["action"]) if isinstance(data, dict) else None


def _split(language: str, text: str) -> VersionDeny:
    """A stored entry back into name and range (python: the name ends where the specifier
    starts; node: at the last `@` that does not start a scope)."""
    if language == "node":
        at = text.rindex("@")
        return VersionDeny(text[:at], text[at + 1 :], text)
    cut = next(i for i, char in enumerate(text) if char in "<>=!~")
    return VersionDeny(text[:cut], text[cut:], text)
