"""What the index knows of a version from upstream's metadata: the facts the rules beyond names
judge (`domain.rules.VersionFacts`), read where each registry says them.

- Upload time: a PyPI file's PEP 700 `upload-time` (the JSON form of the simple API only: the
  index asks its upstream for JSON first; an HTML page has none), an npm version's entry in the
  packument's `time` (the full packument only: the abbreviated one npm asks for has none). A time
  upstream does not give is None, which a release-age rule treats as too new (fail closed).
- Install-time code (npm): a manifest's `preinstall`, `install` or `postinstall` script, or the
  registry's `hasInstallScript` (all the abbreviated packument says). npm installs what the
  tarball's own `package.json` says, which a registry does not hold to the packument's word
  ("manifest confusion"): where the install_scripts rule judges a package, a tarball is read
  before it is served (`tarball_install_scripts`).
- Source distribution (python): a file that is not a wheel. Python facts are per file: one
  version's wheel and sdist differ in both.
"""

from __future__ import annotations

import json
import tarfile
from datetime import UTC, datetime
from typing import IO

from domain.rules import VersionFacts, sdist_file

INSTALL_SCRIPTS = ("preinstall", "install", "postinstall")
MAX_MANIFEST_BYTES = 1024 * 1024
MAX_UNPACKED_BYTES = 1024**3  # what reading a tarball may unpack: past it, its word is not known


def python_file(entry: dict, version: str | None) -> VersionFacts:
    """The facts of one file of a PEP 691 page (`version`: the one its name says; None when it
    says none, which no rule can judge)."""
    filename = entry.get("filename") or ""
    return VersionFacts(version, instant(entry.get("upload-time")), sdist=sdist_file(filename))


def npm_version(version: str, manifest: dict, times: dict | None) -> VersionFacts:
    """The facts of one npm version: its manifest, and the packument's `time` (None: not known)."""
    scripts = manifest.get("scripts")
    declared = isinstance(scripts, dict) and any(scripts.get(s) for s in INSTALL_SCRIPTS)
    uploaded = instant(times.get(version)) if isinstance(times, dict) else None
    return VersionFacts(version, uploaded, install_scripts=bool(declared or manifest.get("hasInstallScript")))


def tarball_install_scripts(file: IO[bytes]) -> bool | None:
    """Whether an npm tarball runs code at install time by its own manifests: a `package.json`
    at its root (the first path component is stripped, as npm unpacks) with an install script,
    any of them (extracted in order, a later one wins on disk), or a `binding.gyp` there (npm
    then runs `node-gyp rebuild`). None when it cannot be read or holds no manifest at its root,
    which counts as running code."""
    found, manifests, unpacked = False, 0, 0
    try:
        with tarfile.open(fileobj=file, mode="r|gz") as archive:
            for member in archive:
                unpacked += max(member.size, 0)
                if unpacked > MAX_UNPACKED_BYTES:
                    return None
                parts = [p for p in member.name.split("/") if p not in ("", ".")]
                if len(parts) != 2 or not member.isfile():
                    continue
                if parts[1] == "binding.gyp":
                    found = True
                elif parts[1] == "package.json":
                    if member.size > MAX_MANIFEST_BYTES:
                        return None
                    manifests += 1
                    manifest = json.loads(archive.extractfile(member).read())  # type: ignore[union-attr]
                    scripts = manifest.get("scripts") if isinstance(manifest, dict) else None
                    found = found or (isinstance(scripts, dict) and any(scripts.get(s) for s in INSTALL_SCRIPTS))
    except (tarfile.TarError, OSError, EOFError, ValueError):  # ValueError: also JSON's and UTF-8's
        return None
    return found if manifests else None


def instant(text) -> datetime | None:
    """An ISO 8601 instant as registries write them (`...Z`, with or without fractions); None
    when absent or unreadable, so that it counts as unknown. A time without a zone is UTC."""
    if not isinstance(text, str) or not text:
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
