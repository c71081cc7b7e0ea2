"""What the index knows of a version from upstream's metadata: the facts the rules beyond names
judge (`domain.rules.VersionFacts`), read where each registry says them.

- Upload time: a PyPI file's PEP 700 `upload-time` (the JSON form of the simple API only: the
  index asks its upstream for JSON first; an HTML page has none), an npm version's entry in the
  packument's `time` (the full packument only: the abbreviated one npm asks for has none). A time
  upstream does not give is None, which a release-age rule treats as too new (fail closed).
- Install-time code (npm): a manifest's `preinstall`, `install` or `postinstall` script, or the
  registry's `hasInstallScript` (all the abbreviated packument says).
- Source distribution (python): a file that is not a wheel. Python facts are per file: one
  version's wheel and sdist differ in both.
"""

from __future__ import annotations

from datetime import UTC, datetime

from domain.rules import VersionFacts, sdist_file

INSTALL_SCRIPTS = ("preinstall", "install", "postinstall")


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
