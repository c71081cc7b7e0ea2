"""What a Python distribution file's name says, read as pip and uv read it: the project it is a
file of, and its version. A simple-index page says nothing else per file, so this is what the
index knows of a file before it fetches it.

A file is its project's only when its name names that project: a page may list any file, and a
client installs what the file is (`beta-1.1-py3-none-any.whl` installs beta, whatever page
listed it or URL served it), so a file named for another project, or for none, is no file of the
page's project.
"""

from __future__ import annotations

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

# the sdist names a version can be read from (PEP 625); the legacy ones of SDIST_ARCHIVES say none here
SDIST_SUFFIXES = (".tar.gz", ".zip")
# Every archive pip (`SUPPORTED_EXTENSIONS`) and uv (`SourceDistExtension`) build an sdist from,
# by how each unpacks it: a zip, or a tar compressed so (`xz`: pip's tarfile opens .tlz, .tar.lz
# and .tar.lzma as xz; `zst`: uv's only; "": a plain tar). uv reads `.TAR.gz` as a tar too.
SDIST_ARCHIVES = {
    ".tar.gz": "gz",
    ".tgz": "gz",
    ".zip": "zip",
    ".tar.bz2": "bz2",
    ".tbz": "bz2",
    ".tar.xz": "xz",
    ".txz": "xz",
    ".tlz": "xz",
    ".tar.lz": "xz",
    ".tar.lzma": "xz",
    ".tar.zst": "zst",
    ".tar": "",
}


def names_project(filename: str, project: str) -> bool:
    """Whether a file's name names `project` (normalized): a wheel's distribution part (PEP 427,
    before its first dash), any other file's text before one of its dashes (PEP 625's
    `name-version`, or a legacy name with dashes, `python-dateutil-2.8.2.tar.gz`, split where pip
    and uv split it)."""
    if filename.endswith(".whl"):
        return canonicalize_name(filename.split("-", 1)[0]) == project
    return _name_end(filename, project) is not None


def version_of(filename: str, project: str) -> str | None:
    """A file's version of `project` (normalized), read from its name as installers read it;
    None when the name says no version of it. An sdist's name is split at the first dash whose
    prefix names the project, as pip and uv split it: `vb-2.0-1.tar.gz` is 2.0.post1 to them
    (packaging's own reader splits at the last dash: project `vb-2.0`, version 1, and a
    `vb>=2` rule let it through)."""
    if filename.endswith(".whl"):
        try:
            name, version, *_ = parse_wheel_filename(filename)
        except InvalidWheelFilename:
            return None
        return str(version) if canonicalize_name(name) == project else None
    suffix = next((s for s in SDIST_SUFFIXES if filename.endswith(s)), None)
    stem = filename[: -len(suffix)] if suffix else ""
    end = _name_end(stem, project)
    if end is None:
        return None
    try:
        return str(Version(stem[end + 1 :]))
    except InvalidVersion:
        return None


def _name_end(stem: str, project: str) -> int | None:
    """Where the first dash whose prefix names `project` is, as pip and uv split an sdist's name."""
    return next((at for at, char in enumerate(stem) if char == "-" and canonicalize_name(stem[:at]) == project), None)


def sdist_archive(filename: str) -> str | None:
    """How pip and uv unpack an sdist of this name (`SDIST_ARCHIVES`); None for a name neither
    builds from (an `.egg`, an `.exe`)."""
    lowered = filename.lower()
    return next((kind for suffix, kind in SDIST_ARCHIVES.items() if lowered.endswith(suffix)), None)
