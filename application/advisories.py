"""Known-malware advisories: importing OSV records, asking which versions they affect, and which
recorded fetches were of an affected version (exposure).

What is affected is the domain's word (`domain.advisories`). Each worker keeps the feed in
memory, indexed by (language, name), and learns of an import made elsewhere by one primary-key
seek for an event after the version it knows, at most every `REFRESH_SECONDS`. The feed is
loaded as every aggregate is, each event checked against the chain: while it does not verify,
every question about it is refused (503), never answered from an empty or older feed.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Iterable
from datetime import datetime, timedelta

from eventsourcing.application import AggregateNotFoundError

from application.formats import iso, require_period
from application.races import ATTEMPTS, saved, too_fast
from application.store.chain import ChainStore
from application.store.reads import ReadModel
from domain.advisories import FEED_ID, AdvisoryFeed, Affected, package_name, read_records
from domain.decision import NOT_FOUND_UPSTREAM
from domain.errors import FieldError, InvalidInputError, NotFoundError
from domain.text import quoted

REFRESH_SECONDS = 2.0
MAX_RECORDS = 50_000  # records in one import
MAX_REVISION = 200
# Exposure: how many of a package's recorded decisions in the period are read, and answered.
EXPOSURE_SCAN = 50_000
MAX_EXPOSURES = 1000
MAX_UNKNOWN = 1000  # names answered by /unknown-names
MAX_UNKNOWN_DAYS = 366


class Advisories:
    def __init__(self, repository, save, readmodel: ReadModel, chain: ChainStore):
        self._repository = repository
        self._save = save
        self._readmodel = readmodel
        self._chain = chain
        self._lock = threading.Lock()
        self._version = 0
        self._by_package: dict[tuple[str, str], list[Affected]] = {}
        self._by_id: dict[str, list[Affected]] = {}
        self._checked = float("-inf")

    # -- import ----------------------------------------------------------------------------
    def import_records(self, records: list, by: str, revision: str | None = None) -> dict:
        """One event for the whole import: the records' affected packages and the feed's revision
        (given, or the sha256 of the records as sent)."""
        if not isinstance(records, list) or not records:
            raise InvalidInputError("records must be a non-empty list", [FieldError("records", "must not be empty")])
        if len(records) > MAX_RECORDS:
            raise InvalidInputError(
                f"at most {MAX_RECORDS} records an import", [FieldError("records", f"at most {MAX_RECORDS}")]
            )
        if revision is not None and (not revision.strip() or len(revision) > MAX_REVISION):
            raise InvalidInputError(
                "revision must be a non-empty string", [FieldError("revision", f"1 to {MAX_REVISION} characters")]
            )
        affected = read_records(records)  # refuses an id given twice too
        ids = [record["id"] for record in records]
        revision = revision or "sha256:" + hashlib.sha256(json.dumps(records, sort_keys=True).encode()).hexdigest()
        for _ in range(ATTEMPTS):
            try:
                feed = self._repository.get(FEED_ID)
            except AggregateNotFoundError:
                feed = AdvisoryFeed.start()
            feed.imported(revision, ids, [a.to_dict() for a in affected], by)
            if saved(self._save, feed):  # else another import came first: apply ours after it
                break
        else:
            raise too_fast("the advisory feed", "records")
        self._load(feed)
        return {"revision": revision, "records": len(ids), "packages": len(affected)}

    # -- questions -------------------------------------------------------------------------
    def affecting(self, language: str, name: str, version: str) -> list[str]:
        """The ids of the advisories that affect this version (empty: none)."""
        found = self._current().get((language, package_name(language, name)), ())
        return sorted({a.advisory for a in found if a.affects(version)})

    def names(self, language: str, name: str) -> bool:
        """Whether any advisory names this package (the index's fast path when none does)."""
        return (language, package_name(language, name)) in self._current()

    def named(self, packages: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
        """Those of these (language, name) that an advisory names (`names`, for many at once)."""
        current = self._current()
        return [(language, name) for language, name in packages if (language, package_name(language, name)) in current]

    @property
    def version(self) -> int:
        self._current()
        return self._version

    def exposure(self, workspace: str, advisory: str, start: datetime | None, end: datetime | None) -> dict:
        """Every recorded fetch (an allowed download) in the period of a version the advisory
        affects, newest first, whenever the advisory was imported: the record keeps the version."""
        require_period(start, end)
        self._current()
        with self._lock:
            affected = list(self._by_id.get(advisory, ()))
        if not affected:
            raise NotFoundError(  # imported or not: either way no fetch of the index can be exposed to it
                f"no imported advisory {quoted(advisory)} affects a PyPI or npm package (none imported by that id, "
                "or one naming only other ecosystems)"
            )
        exposures, truncated = [], False
        for entry in affected:
            filters = {"language": entry.language, "name": entry.name, "allowed": True}
            rows = self._readmodel.decisions(workspace, filters, start, end, None, EXPOSURE_SCAN)
            truncated = truncated or len(rows) == EXPOSURE_SCAN
            for row in rows:
                record = json.loads(row["record"])
                version = record.get("package_version")
                if record.get("request") != "download" or not version:
                    continue
                if entry.affects(version):
                    exposures.append(_exposure(row, record))
        exposures.sort(key=lambda e: (e["at"], e["decision"]), reverse=True)
        truncated = truncated or len(exposures) > MAX_EXPOSURES
        return {"advisory": advisory, "exposures": exposures[:MAX_EXPOSURES], "truncated": truncated}

    def unknown_names(self, workspace: str, days: int, now: datetime) -> dict:
        """The names clients asked the index for that its upstream did not have, in the last
        `days`: when first asked, how often, by which sandboxes, and whether the name exists now
        (`now_exists`, see `_now_exists`)."""
        if not 1 <= days <= MAX_UNKNOWN_DAYS:
            rule = f"an integer from 1 to {MAX_UNKNOWN_DAYS}"
            raise InvalidInputError(f"days must be {rule}", [FieldError("days", rule)])
        names = [self.unknown_name(workspace, r) for r in self.asked_unknown(workspace, now - timedelta(days=days))]
        return {"names": names, "truncated": len(names) == MAX_UNKNOWN}

    def asked_unknown(self, workspace: str, since: datetime) -> list[dict]:
        """The names asked for since `since` that the upstream did not have, first asked first,
        at most `MAX_UNKNOWN` (one range of a partial index: see `ReadModel.reason_names`)."""
        return self._readmodel.reason_names(workspace, NOT_FOUND_UPSTREAM, since, MAX_UNKNOWN)

    def unknown_name(self, workspace: str, asked: dict) -> dict:
        """One of `asked_unknown` as answered, with `now_exists` (one index seek)."""
        return {
            "name": asked["name"],
            "language": asked["language"],
            "first_asked": iso(asked["first_asked"]),
            "count": asked["count"],
            "sandboxes": asked["sandboxes"],
            "now_exists": self._now_exists(workspace, asked["language"], asked["name"]),
        }

    def exposed(self, fetched: Iterable[dict]) -> list[dict]:
        """Per advisory, the allowed downloads among `fetched` (rows of the per-version fetch
        rollup, `CountReads.fetched_versions`) of a version it affects, whenever it was
        imported: its packages and versions, how many fetches and sandboxes. Most sandboxes first."""
        found: dict[str, dict] = {}
        judged: dict[tuple[str, str, str], list[str]] = {}  # a version's rows are many (days, sandboxes)
        for row in fetched:
            if not row["allowed"] or row["version"] is None:  # a file whose name says no version
                continue
            key = (row["language"], row["name"], row["version"])
            if key not in judged:
                judged[key] = self.affecting(*key)
            for advisory in judged[key]:
                entry = found.setdefault(advisory, {"advisory": advisory, "versions": set(), "fetches": 0, "in": set()})
                entry["versions"].add(key)
                entry["fetches"] += row["installs"]
                entry["in"].add(row["sandbox"])
        exposed = [
            {
                "advisory": e["advisory"],
                "versions": [{"language": v[0], "name": v[1], "version": v[2]} for v in sorted(e["versions"])],
                "fetches": e["fetches"],
                "sandboxes": len(e["in"] - {""}),
            }
            for e in found.values()
        ]
        return sorted(exposed, key=lambda e: (-e["sandboxes"], -e["fetches"], e["advisory"]))

    def _now_exists(self, workspace: str, language: str, name: str) -> bool:
        """Whether the upstream has had the name since it was last not found, as the index saw it
        (the upstream is not asked here): the index's newest decision on it allowed a fetch. Within
        one fetch the allowed page comes first and the not-found after it, so a name still missing
        ends on the not-found; an upstream failure after an allowed page says nothing (false)."""
        newest = self._readmodel.newest_index_decision(workspace, language, name)
        return newest is not None and bool(newest["allowed"])

    # -- the worker's copy -----------------------------------------------------------------
    def _current(self) -> dict[tuple[str, str], list[Affected]]:
        now = time.monotonic()
        if now - self._checked >= REFRESH_SECONDS:
            # A sealed event gone from the store counts as news too: loading then names it.
            if self._chain.moved_after(self._chain.oid(FEED_ID), self._version):
                self._load(self._repository.get(FEED_ID))  # raises while the feed does not verify
            # Only once the feed verified: a load that failed is tried again by the next question
            # (an import with an altered event had been dropped for REFRESH_SECONDS at a time:
            # known malware was served in between).
            self._checked = now
        return self._by_package

    def _load(self, feed: AdvisoryFeed) -> None:
        by_package: dict[tuple[str, str], list[Affected]] = {}
        by_id: dict[str, list[Affected]] = {}
        for data in feed.affected:
            entry = Affected.from_dict(data)
            by_package.setdefault((entry.language, entry.name), []).append(entry)
            by_id.setdefault(entry.advisory, []).append(entry)
        with self._lock:
            if feed.version >= self._version:
                self._version, self._by_package, self._by_id = feed.version, by_package, by_id


def _exposure(row: dict, record: dict) -> dict:
    return {
        "name": record.get("name"),
        "version": record.get("package_version"),
        "run": record.get("run"),
        "sandbox": (record.get("context") or {}).get("sandbox"),
        "decision": row["id"],
        "at": iso(row["at"]),
    }
