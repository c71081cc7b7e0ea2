"""What the files of a Python version were read to declare, kept so that what one file says
hides every file of its version (docs/index-declared-dependencies.md).

The index reads a file's declarations when it serves it: a `.metadata` file's Requires-Dist, a
wheel's (with the projects it carries and what it puts on sys.path unread:
`domain.declared.Requires`), an sdist's PKG-INFO and build requirements. What of them may hide a
version under some policy (`domain.declared.what_may_hide`: all but registry requirements) is
recorded in the index's cache, one record per file and digest under its project
(`DiskCache.put_fact`), which every worker of the deployment reads; a file that declares nothing
of the kind leaves none.

A file is then judged by what it says itself and by the records of every file its project's page
lists for the same version, each under the digest the page gives it now (a file upstream
replaced has a new digest: its old record is no longer read). The page drops a version its
records hide. A record is the file's word, not a verdict: each request judges it by the policy
in force. What no worker read, or the cache no longer keeps, is not known.

Each worker keeps the records it read (the bytes behind a record's name never change), and what
a page's records say by version, per revision of the page.
"""

from __future__ import annotations

import json
from typing import NamedTuple

from flask import current_app
from packaging.version import InvalidVersion, Version

from application.cache import Digests, from_pypi
from application.lru import SizedLru, weigh
from domain.declared import Requires, merged, what_may_hide
from interface.index import core_metadata, simple

MEMORY_BYTES = 1024 * 1024  # each worker's records read, and pages' versions by their records
METADATA_SUFFIX = ".metadata"


class Read(NamedTuple):
    """What one file was read to declare: its name as fetched (a wheel's `.metadata` is a file of
    its own) and the digest its page gives it (None: none)."""

    filename: str
    digests: Digests | None
    requires: Requires


def record(project: str, read: Read) -> None:
    """Keep what of `read` may hide its version, if anything."""
    kept = what_may_hide(read.requires)
    if not any(kept):
        return
    key = _source(read.filename, read.digests)
    body = {"source": key, **{field: list(value) for field, value in kept._asdict().items()}}
    _cache().put_fact(project, key, json.dumps(body, separators=(",", ":")).encode())


def of_version(project: str, version: str | None, filename: str, files: list[dict]) -> Requires:
    """What every file of `filename`'s version on the page (`files`) was recorded to declare
    (`version` None: the file's name says none, so only its own records count)."""
    records = _records(project)
    if not records:
        return Requires([])
    wanted = _version(version)
    same = [
        f
        for f in files
        if f.get("filename") == filename or (wanted and _version(simple.file_version(f, project)) == wanted)
    ]
    return merged(*(records[s] for f in same for s in _sources(f) if s in records))


def of_page(project: str, revision: str, files) -> dict[str, tuple[Requires, tuple[str, ...]]]:
    """{version: (what its files were recorded to declare, its files)} for the page's versions
    that have records; `files()` (the page's entries) is read only when the project has records
    and this revision of the page was not gone through with them before."""
    records = _records(project)
    if not records:
        return {}

    def by_version() -> dict:
        found: dict = {}
        for entry in files():
            version = _version(simple.file_version(entry, project))
            if version is not None:
                said = found.setdefault(version, (str(version), [], []))
                said[1].extend(records[s] for s in _sources(entry) if s in records)
                said[2].append(entry["filename"])
        return {label: (merged(*said), tuple(names)) for label, said, names in found.values() if said}

    return remembered(("page", project, revision, tuple(sorted(records))), by_version)


def sdist_requires(file, filename: str, digests: Digests | None) -> Requires:
    """What an sdist declares (`core_metadata.sdist_requires`: it may unpack the whole archive),
    read once per worker by the sdist's digest."""
    if digests is None:
        return core_metadata.sdist_requires(file, filename)
    return remembered(("sdist", _source(filename, digests)), lambda: (core_metadata.sdist_requires(file, filename),))[0]


def _records(project: str) -> dict[str, Requires]:
    """{source: what it declares} of every record the cache keeps for the project."""
    cache, memory, found = _cache(), _memory(), {}
    for name in cache.fact_names(project):
        known = memory.get(name)
        if known is None:
            known = _parsed(cache.fact(project, name))
            if known is None:
                continue  # evicted meanwhile, or not one of ours: not known
            memory.put(name, known)
        found[known[0]] = known[1]
    return found


def _parsed(body: bytes | None) -> tuple[str, Requires] | None:
    """A record's source and what it declares (a record kept before build requirements were read
    has none)."""
    try:
        said = json.loads(body) if body is not None else None
        requires = Requires(list(said["requires"]), *(tuple(said.get(f, ())) for f in Requires._fields[1:]))
        return said["source"], requires
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


def _sources(entry: dict) -> list[str]:
    """The files a page entry stands for, each as a record names it: the file, and its PEP 658
    `.metadata` when the page offers one."""
    filename = entry.get("filename") or ""
    sources = [_source(filename, from_pypi(entry.get("hashes")))]
    metadata = entry.get("core-metadata", entry.get("dist-info-metadata"))
    if metadata:
        sources.append(_source(filename + METADATA_SUFFIX, from_pypi(metadata)))
    return sources


def _source(filename: str, digests: Digests | None) -> str:
    return f"{filename} {digests.algorithm}:{digests.hex}" if digests is not None else f"{filename} -"


def _version(text: str | None) -> Version | None:
    """A version as installers compare them (`1.0` is `1.0.0`)."""
    try:
        return Version(text) if text is not None else None
    except InvalidVersion:
        return None


def _cache():
    return current_app.extensions["index_cache"]


def remembered(key: tuple, compute):
    """What `compute()` found (never None; a key names what it read: a page's revision, a file's
    digest), once per worker while it is remembered beside the pages' declarations."""
    known = _memory().get(key)
    if known is None:
        known = compute()
        _memory().put(key, known)
    return known


def _memory() -> SizedLru:
    return current_app.extensions["pypi_declarations"]


def memory() -> SizedLru:
    """A worker's memory of records read and pages gone through (interface.index.install)."""
    return SizedLru(MEMORY_BYTES, weigh)
