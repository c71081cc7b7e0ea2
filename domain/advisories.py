"""Known-malware advisories (OSV records): what one affects, and whether a version is affected.

An OSV record's `affected` entries name a package (`ecosystem`, `name`) and the versions it
affects: an explicit `versions` list, and `ranges` whose `events` (`introduced`, `fixed`,
`last_affected`) are read in version order, as the OSV schema says: a version is affected from
an `introduced` (inclusive; `"0"` is before every version) until a `fixed` (exclusive) or past a
`last_affected` (inclusive). `SEMVER` ranges compare by SemVer 2.0 precedence; `ECOSYSTEM`
ranges by the ecosystem's own order: PEP 440 for PyPI, node-semver (SemVer 2.0) for npm. `GIT`
ranges name commits, not versions, and are ignored. Fail closed: a version that cannot be
ordered against a range of its package is affected. What OSV calls invalid is refused rather
than read as affecting nothing: an entry of a served ecosystem with neither `versions` nor
`ranges` (or only GIT ranges), a range of no OSV type or without an `introduced` event, a
`withdrawn` that is no instant. Every value is checked for its type before it is read, and every
bad one named: an import is a denial, so one that would hold less than it says is refused whole.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from uuid import NAMESPACE_URL, uuid5

from eventsourcing.domain import Aggregate, event
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from domain.errors import NAMED_IN_ERRORS, FieldError, InvalidInputError
from domain.instants import parse_instant
from domain.limits import MAX_ERRORS, MAX_TEXT
from domain.specs import registry_name
from domain.text import json_kind, quoted

# OSV ecosystem -> the policy's language. Other ecosystems are kept out of an import, not refused.
ECOSYSTEMS = {"PyPI": "python", "npm": "node"}
_SPELLED = {ecosystem.casefold(): ecosystem for ecosystem in ECOSYSTEMS}
RANGE_TYPES = ("SEMVER", "ECOSYSTEM", "GIT")  # OSV's; "GIT" ranges name commits, and are not kept
EVENTS = ("introduced", "fixed", "last_affected", "limit")  # OSV's; `limit` bounds GIT walks, not versions
MAX_RECORD_ID = 200
# OSV ids are `<DB>-<ENTRYID>`: no control, invisible or bidi characters reach an answer or a log
OSV_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]*")
MAX_VERSION = 256
_VERSION_RULE = f"must be a version (a string of 1 to {MAX_VERSION} characters)"
_SEMVER = re.compile(
    r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+[0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*)?"
)


class Unordered(ValueError):
    """A version the range's order cannot place."""


@dataclass(frozen=True)
class Affected:
    """One advisory's word on one package: the versions it lists and its ranges' events."""

    advisory: str
    language: str
    name: str  # canonical: PEP 503 for python, as published for node
    versions: tuple[str, ...]
    ranges: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]  # (type, ((event, version), ...))

    def to_dict(self) -> dict[str, Any]:
        return {
            "advisory": self.advisory,
            "language": self.language,
            "name": self.name,
            "versions": list(self.versions),
            "ranges": [{"type": t, "events": [{k: v} for k, v in events]} for t, events in self.ranges],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Affected:
        ranges = tuple((r["type"], tuple(next(iter(e.items())) for e in r["events"])) for r in data.get("ranges", ()))
        return cls(data["advisory"], data["language"], data["name"], tuple(data.get("versions", ())), ranges)

    def affects(self, version: str) -> bool:
        if any(_same(self.language, version, listed) for listed in self.versions):
            return True
        return any(_in_range(self.language, kind, events, version) for kind, events in self.ranges)


def package_name(language: str, name: str) -> str:
    """The name an advisory and a fetch are matched by."""
    return canonicalize_name(name) if language == "python" else name


def read_records(records: list[Any], where: str = "records") -> list[Affected]:
    """The affected packages of OSV records, for the ecosystems the index serves; entries of other
    ecosystems are skipped. Malformed records are refused, every bad field of every record named
    (up to MAX_ERRORS, `domain.errors.named`), and nothing is read from any of them."""
    found: list[Affected] = []
    errors = _Errors()
    ids: dict[str, int] = {}
    try:
        for i, record in enumerate(records):
            found.extend(_read_record(record, where, i, ids, errors))
    except _Enough:  # a refusal names no more: read no further
        pass
    if errors:
        raise errors.refusal()
    return found


def _read_record(record: Any, where: str, index: int, ids: dict[str, int], errors: _Errors) -> list[Affected]:
    at = f"{where}[{index}]"
    if not isinstance(record, dict):
        errors.add(at, f"must be an OSV record (a JSON object), not {json_kind(record)}")
        return []
    advisory = record.get("id")
    if not isinstance(advisory, str) or len(advisory) > MAX_RECORD_ID or not OSV_ID.fullmatch(advisory):
        rule = f"must be an OSV id (letters, digits and . _ : -, such as MAL-2022-9), at most {MAX_RECORD_ID}"
        errors.add(f"{at}.id", f"{rule}; got {quoted(advisory)}")
        advisory = None
    elif ids.setdefault(advisory, index) != index:
        errors.add(f"{at}.id", f"must name each record once an import ({where}[{ids[advisory]}] has this id)")
    # OSV requires `modified`, which the service does not read: it may be left out, but when
    # given it is an instant, as `withdrawn` is (any other text would withdraw the record)
    stamped = {}
    for stamp in ("modified", "withdrawn"):
        if record.get(stamp) is not None:
            try:
                stamped[stamp] = parse_instant(record[stamp], f"{at}.{stamp}")
            except InvalidInputError as error:
                errors.add_all(error.errors)
    if "withdrawn" in stamped:  # no longer valid (a false positive cleared): it affects nothing,
        return []  # and replaces its word
    affected = record.get("affected")
    if affected is None:  # OSV allows null, as none
        return []
    if not isinstance(affected, list):
        errors.add(f"{at}.affected", f"must be an array of affected packages, not {json_kind(affected)}")
        return []
    read = [_read_affected(advisory, entry, f"{at}.affected[{j}]", errors) for j, entry in enumerate(affected)]
    return [entry for entry in read if entry is not None]


def _read_affected(advisory: str | None, entry: Any, at: str, errors: _Errors) -> Affected | None:
    """One `affected` entry: None when it names another ecosystem, or anything in it is bad."""
    if not isinstance(entry, dict):
        errors.add(at, f"must be an object naming a package and its affected versions, not {json_kind(entry)}")
        return None
    before = len(errors)
    package, language = entry.get("package"), None
    ecosystem: Any
    name: Any = ""
    if not isinstance(package, dict):
        rule = f"must be an object with the package's ecosystem and name, not {json_kind(package)}"
        errors.add(f"{at}.package", rule)
    else:
        ecosystem, name = package.get("ecosystem"), package.get("name")
        if not isinstance(name, str) or not name:
            errors.add(f"{at}.package.name", f"must be the package's name (a non-empty string), not {quoted(name)}")
        if _other_ecosystem(ecosystem):  # kept out, not refused
            return None
        language = _language(ecosystem, f"{at}.package.ecosystem", errors)
        if language is not None and len(errors) == before:
            name = _package(language, ecosystem, name, f"{at}.package.name", errors)
    # the versions and ranges of an entry whose package is bad are checked too: every bad field is named
    versions = _versions(entry.get("versions"), f"{at}.versions", errors)
    ranges = _ranges(entry.get("ranges"), f"{at}.ranges", errors)
    if len(errors) > before or language is None or versions is None or ranges is None:
        return None
    if not versions and all(kind == "GIT" for kind, _ in ranges):
        # OSV: a version is affected if listed or in a range, so with neither none is; and a GIT
        # range names commits, which "does NOT remove the requirement" to list the versions
        rule = "must list the affected versions or ranges (with neither, it affects no version)"
        if ranges:
            rule = "must list the affected versions: its ranges are GIT ranges, which name commits, not versions (OSV)"
        errors.add(at, rule)
        return None
    if advisory is None:  # the record's id is named
        return None
    kept = tuple((kind, events) for kind, events in ranges if kind != "GIT")
    return Affected(advisory, language, name, tuple(versions), kept)


def _other_ecosystem(ecosystem: Any) -> bool:
    """Whether it names an ecosystem the index does not serve (a served one misspelled is not one)."""
    if not isinstance(ecosystem, str) or ecosystem in ECOSYSTEMS:
        return False
    return bool(ecosystem.strip()) and _spelled(ecosystem) is None


def _language(ecosystem: Any, at: str, errors: _Errors) -> str | None:
    """The policy's language of a served ecosystem; None, named, for anything else."""
    if isinstance(ecosystem, str) and ecosystem in ECOSYSTEMS:
        return ECOSYSTEMS[ecosystem]
    spelled = _spelled(ecosystem) if isinstance(ecosystem, str) else None
    if spelled is not None:  # a served one misspelled would be kept out, hiding nothing
        errors.add(at, f"must be written {spelled}: OSV's ecosystem names are case-sensitive; got {quoted(ecosystem)}")
    else:
        errors.add(at, f"must be an OSV ecosystem (a non-empty string, such as PyPI or npm), not {quoted(ecosystem)}")
    return None


def _spelled(ecosystem: str) -> str | None:
    """The served ecosystem a name spells, whatever its capitals or surrounding blanks."""
    return _SPELLED.get(ecosystem.strip().casefold())


def _package(language: str, ecosystem: str, name: str, at: str, errors: _Errors) -> str:
    """The package's name as matched (`package_name`), if it is one of its ecosystem's."""
    # No name longer than MAX_TEXT is judged (`domain.entries`) or asked of the index, so it
    # could match nothing; and it is refused before the parser reads it (~4 µs a character for npm)
    if len(name) > MAX_TEXT:
        errors.add(at, f"must be a package name of {ecosystem}, at most {MAX_TEXT} characters; it has {len(name)}")
    elif registry_name(language, name) != package_name(language, name):
        errors.add(at, f"must be a package name of {ecosystem}, nothing more; got {quoted(name)}")
    else:
        return package_name(language, name)
    return name


def _versions(versions: Any, at: str, errors: _Errors) -> list[str] | None:
    """The listed versions (null or left out: none); None when the list is bad (named)."""
    if versions is None:
        return []
    if not isinstance(versions, list):
        errors.add(at, f"must be an array of versions, not {json_kind(versions)}")
        return None
    good = True
    for k, version in enumerate(versions):
        if not _is_version_text(version):
            errors.add(f"{at}[{k}]", f"{_VERSION_RULE}, not {quoted(version)}")
            good = False
    return versions if good else None


def _ranges(ranges: Any, at: str, errors: _Errors) -> list[tuple[str, tuple[tuple[str, str], ...]]] | None:
    """Each range's type and events (null or left out: none); None when one is bad (named)."""
    if ranges is None:
        return []
    if not isinstance(ranges, list):
        errors.add(at, f"must be an array of ranges, not {json_kind(ranges)}")
        return None
    read = []
    for k, found in enumerate(ranges):
        one = _range(found, f"{at}[{k}]", errors)
        if one is not None:
            read.append(one)
    return read if len(read) == len(ranges) else None


def _range(found: Any, at: str, errors: _Errors) -> tuple[str, tuple[tuple[str, str], ...]] | None:
    if not isinstance(found, dict):
        errors.add(at, f"must be an object with a type and events, not {json_kind(found)}")
        return None
    before = len(errors)
    kind = found.get("type")
    if not isinstance(kind, str) or kind not in RANGE_TYPES:
        # a range of no known type, left out, would hide nothing while the import said it succeeded
        errors.add(f"{at}.type", f"must be one of OSV's range types {', '.join(RANGE_TYPES)}, not {quoted(kind)}")
    listed = found.get("events")
    if not isinstance(listed, list):
        errors.add(f"{at}.events", f"must be an array of events, not {json_kind(listed)}")
        return None
    events = []
    for m, given in enumerate(listed):
        event = _event(given, f"{at}.events[{m}]", errors)
        if event is not None and event[0] != "limit":  # `limit` bounds GIT walks; it adds no version
            events.append(event)
    if len(errors) > before or not isinstance(kind, str):  # (the type is named above)
        return None
    if not any(event == "introduced" for event, _ in events):
        # OSV requires one: a range is affected from an `introduced` on, so without one it holds nothing
        errors.add(f"{at}.events", 'must hold an introduced event (OSV; "0" is before every version)')
        return None
    return kind, tuple(events)


def _event(given: Any, at: str, errors: _Errors) -> tuple[str, str] | None:
    """One event: exactly one of OSV's event kinds, with a version."""
    if not isinstance(given, dict):
        errors.add(at, f"must be an object holding one of {', '.join(EVENTS)}, not {json_kind(given)}")
        return None
    said = [key for key in EVENTS if key in given]
    if len(said) != 1:
        holds = ", ".join(said) or "none of them"
        errors.add(at, f"must hold exactly one of {', '.join(EVENTS)} (OSV); it holds {holds}")
        return None
    version = given[said[0]]
    if not _is_version_text(version):
        errors.add(f"{at}.{said[0]}", f"{_VERSION_RULE}, not {quoted(version)}")
        return None
    return said[0], version


def _is_version_text(value: object) -> bool:
    return isinstance(value, str) and 0 < len(value) <= MAX_VERSION


class _Enough(Exception):
    """Past MAX_ERRORS errors: a refusal names no more (`domain.errors.named`), so reading stops."""


class _Errors(list[FieldError]):
    """Every bad field found, in reading order."""

    def add(self, field: str, rule: str) -> None:
        self.append(FieldError(field, rule))
        if len(self) > MAX_ERRORS:
            raise _Enough

    def add_all(self, found: Iterable[FieldError]) -> None:
        for error in found:
            self.add(error.field, error.message)

    def refusal(self) -> InvalidInputError:
        first = f"{self[0].field} {self[0].message}"
        if len(self) == 1:
            return InvalidInputError(first, list(self))
        more = f"{len(self) - 1} more" if len(self) <= MAX_ERRORS else "more"  # reading stopped past them
        return InvalidInputError(f"{first} (and {more}, {NAMED_IN_ERRORS}); nothing was imported", list(self))


def _same(language: str, version: str, listed: str) -> bool:
    if version == listed:
        return True
    if language == "python":
        try:
            return Version(version) == Version(listed)
        except InvalidVersion:
            return False
    return False


def _in_range(language: str, kind: str, events: tuple[Any, ...], version: str) -> bool:
    key: Callable[[str], Any] = _semver_key if kind == "SEMVER" or language == "node" else _pep440_key
    try:
        at = key(version)
        ordered = sorted(events, key=lambda e: _event_key(key, e))
        affected = False
        for event, bound in ordered:
            if event == "introduced" and (bound == "0" or at >= key(bound)):
                affected = True
            elif event == "fixed" and at >= key(bound):
                affected = False
            elif event == "last_affected" and at > key(bound):
                affected = False
        return affected
    except Unordered:
        return True  # fail closed: a version we cannot place is treated as affected


def _event_key(key: Callable[[str], Any], event: tuple[str, str]) -> tuple[Any, ...]:
    kind, bound = event
    return (0,) if kind == "introduced" and bound == "0" else (1, key(bound))


def _pep440_key(version: str) -> Version:
    try:
        return Version(version)
    except InvalidVersion:
        raise Unordered(version) from None


def _semver_key(version: str) -> tuple[Any, ...]:
    """SemVer 2.0 precedence: a pre-release sorts before its release; its identifiers compare
    numerically when numeric, and numeric ones before alphanumeric ones; build metadata is ignored."""
    match = _SEMVER.fullmatch(version.strip().removeprefix("v"))
    if match is None:
        raise Unordered(version)
    major, minor, patch, pre = match.groups()
    if pre is None:
        return (int(major), int(minor), int(patch), 1, ())
    ids = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in pre.split("."))
    return (int(major), int(minor), int(patch), 0, ids)


FEED_ID = uuid5(NAMESPACE_URL, "https://runcode-policy/advisory-feed")


class AdvisoryFeed(Aggregate):
    """Every advisory import, deployment-wide: one event per import (the records' affected
    packages and the feed's revision). One aggregate, so imports are ordered and a worker learns
    of a new one by one primary-key seek for an event after the version it knows."""

    TOPIC = "runcode_policy:AdvisoryFeed"

    class Created(Aggregate.Created):
        TOPIC = "runcode_policy:AdvisoryFeed.Created"

    @event("Started", topic="runcode_policy:AdvisoryFeed.Started")
    def __init__(self) -> None:
        self.affected: list[dict[str, Any]] = []  # every import's Affected.to_dict(), in import order
        self.imports: list[dict[str, Any]] = []

    @classmethod
    def start(cls) -> AdvisoryFeed:
        return cls._create(cls.Started, id=FEED_ID)  # type: ignore[attr-defined]  # made by @event

    @event("Imported", topic="runcode_policy:AdvisoryFeed.Imported")
    def imported(self, revision: str, records: list[str], affected: list[dict[str, Any]], by: str) -> None:
        # A record imported again replaces its earlier word (OSV records are revised in place).
        replaced = set(records)
        self.affected = [a for a in self.affected if a["advisory"] not in replaced] + affected
        self.imports.append({"revision": revision, "records": len(records), "by": by})
