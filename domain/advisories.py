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
`ranges`, a range without an `introduced` event, a `withdrawn` that is no instant.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from uuid import NAMESPACE_URL, uuid5

from eventsourcing.domain import Aggregate, event
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from domain.errors import FieldError, InvalidInputError
from domain.instants import parse_instant
from domain.specs import registry_name

# OSV ecosystem -> the policy's language. Other ecosystems are kept out of an import, not refused.
ECOSYSTEMS = {"PyPI": "python", "npm": "node"}
RANGE_TYPES = ("SEMVER", "ECOSYSTEM")  # "GIT" ranges name commits
EVENTS = ("introduced", "fixed", "last_affected")
MAX_RECORD_ID = 200
# OSV ids are `<DB>-<ENTRYID>`: no control, invisible or bidi characters reach an answer or a log
OSV_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]*")
MAX_VERSION = 256
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
    """The affected packages of OSV records, for the ecosystems the index serves. Malformed
    records are refused, naming the field; entries of other ecosystems are skipped."""
    found = []
    for i, record in enumerate(records):
        at = f"{where}[{i}]"
        if not isinstance(record, dict):
            raise _bad(at, "must be an OSV record (a JSON object)")
        advisory = record.get("id")
        if not isinstance(advisory, str) or not OSV_ID.fullmatch(advisory) or len(advisory) > MAX_RECORD_ID:
            raise _bad(
                f"{at}.id",
                f"must be an OSV id (letters, digits and . _ : -, such as MAL-2022-9), at most {MAX_RECORD_ID}",
            )
        # OSV requires `modified`, which the service does not read: it may be left out, but when
        # given it is an instant, as `withdrawn` is (any other text would withdraw the record)
        for stamp in ("modified", "withdrawn"):
            if record.get(stamp) is not None:
                parse_instant(record[stamp], f"{at}.{stamp}")
        if record.get("withdrawn") is not None:  # no longer valid (a false positive cleared): it
            continue  # affects nothing, and replaces its word
        affected = record.get("affected", [])
        if not isinstance(affected, list):
            raise _bad(f"{at}.affected", "must be a list")
        for j, entry in enumerate(affected):
            read = _read_affected(advisory, entry, f"{at}.affected[{j}]")
            if read is not None:
                found.append(read)
    return found


def _read_affected(advisory: str, entry: Any, at: str) -> Affected | None:
    package = entry.get("package") if isinstance(entry, dict) else None
    if not isinstance(package, dict) or not isinstance(package.get("name"), str) or not package["name"]:
        raise _bad(f"{at}.package", "must name the package (ecosystem and name)")
    language = ECOSYSTEMS.get(package.get("ecosystem"))  # type: ignore[arg-type]
    if language is None:
        return None
    if registry_name(language, package["name"]) != package_name(language, package["name"]):
        raise _bad(f"{at}.package.name", f"must be a package name of {package['ecosystem']}, nothing more")
    versions = entry.get("versions", [])
    if not isinstance(versions, list) or not all(_is_version_text(v) for v in versions):
        raise _bad(f"{at}.versions", f"must be a list of versions (strings of at most {MAX_VERSION} characters)")
    listed_ranges = entry.get("ranges", []) or []
    if not versions and not listed_ranges:  # OSV: a version is affected if listed or in a range, so none is
        raise _bad(at, "must list the affected versions or ranges (with neither, it affects no version)")
    ranges = []
    for k, found in enumerate(listed_ranges):
        where = f"{at}.ranges[{k}]"
        if not isinstance(found, dict) or not isinstance(found.get("events"), list):
            raise _bad(where, "must have a type and a list of events")
        if not any(isinstance(e, dict) and "introduced" in e for e in found["events"]):
            # OSV requires one: a range is affected from an `introduced` on, so without one it holds nothing
            raise _bad(f"{where}.events", 'must hold an introduced event (OSV; "0" is before every version)')
        if found.get("type") not in RANGE_TYPES:
            continue
        events = []
        for given in found["events"]:
            pairs = [(k, v) for k, v in (given.items() if isinstance(given, dict) else ()) if k in EVENTS]
            if isinstance(given, dict) and "limit" in given and not pairs:
                continue  # `limit` bounds GIT-like walks; it adds no version of its own
            if len(pairs) != 1 or not _is_version_text(pairs[0][1]):
                raise _bad(f"{where}.events", f"each event is one of {', '.join(EVENTS)} with a version")
            events.append(pairs[0])
        ranges.append((found["type"], tuple(events)))
    return Affected(advisory, language, package_name(language, package["name"]), tuple(versions), tuple(ranges))


def _is_version_text(value: object) -> bool:
    return isinstance(value, str) and 0 < len(value) <= MAX_VERSION


def _bad(field: str, rule: str) -> InvalidInputError:
    return InvalidInputError(f"{field} {rule}", [FieldError(field, rule)])


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
