"""A Python distribution's core metadata as the index reads it to judge what a version declares:
a PEP 658 `.metadata` file fetched whole, the `METADATA` inside a wheel that was spooled, or the
`PKG-INFO` of an sdist, with the build requirements of its `pyproject.toml` (`sdist_requires`).

Only `Requires-Dist` is read. What an sdist's PKG-INFO lists is judged whatever its
Metadata-Version; only from 2.2 on, and when its `Dynamic:` does not name Requires-Dist, is it
all that a build of the sdist will declare (PEP 643): otherwise the build may declare more, which
is known only once built (the locked-down profile is what stops a build from fetching a URL).
Its `build-system.requires` the installer fetches before it builds, so they are judged like
its Requires-Dist, and an sdist whose build requirements cannot be read is refused.
"""

from __future__ import annotations

import email.parser
import email.policy
import posixpath
import re
import tomllib
import zipfile
import zlib
from typing import NamedTuple

import httpx
from packaging.utils import canonicalize_name

from application.index.facts import root_files
from domain.declared import Requires
from domain.python_files import sdist_archive
from interface.index.upstream import Upstream, bad_gateway, refused_by_upstream, unavailable
from interface.problems import HTTPProblem

# What importlib.metadata reads as an installed project, as a folder (or, an egg's, a file).
METADATA_FOLDERS = (".dist-info", ".egg-info")
MAX_METADATA_BYTES = 16 * 1024 * 1024  # a METADATA file with a long description is a few MiB at most
MAX_READ_BYTES = 1024 * 1024  # a carried project's metadata (its Name:) or a .pth file, read whole
MAX_WHEEL_MEMBERS = 100_000  # files of a wheel read for what it carries (past that: not judged)
SDIST_FILES = ("PKG-INFO", "pyproject.toml")  # what is read at an sdist's root


def requires_dist(metadata: bytes) -> list[str]:
    """Every Requires-Dist value of a core metadata file (an email-header document)."""
    parsed = email.parser.BytesParser(policy=email.policy.compat32).parsebytes(metadata, headersonly=True)
    return [str(value) for value in parsed.get_all("Requires-Dist") or []]


def fetch(upstream: Upstream, url: str) -> bytes:
    """A `.metadata` file, whole and bounded."""
    response = upstream.open_file("GET", url, {"Accept-Encoding": "identity"})
    try:
        if response.status_code != 200:
            if response.status_code == 404:
                raise HTTPProblem(404, "Not Found", "the upstream has no such file")
            raise refused_by_upstream(response.status_code, "the metadata file")
        body = bytearray()
        for chunk in upstream.raw_chunks(response, MAX_METADATA_BYTES):
            body += chunk
            if len(body) > MAX_METADATA_BYTES:
                raise bad_gateway(f"the upstream metadata file is larger than {MAX_METADATA_BYTES} bytes")
        return bytes(body)
    except httpx.HTTPError as error:
        raise unavailable(f"the upstream stopped sending the metadata: {type(error).__name__}") from None
    finally:
        response.close()


def sdist_requires(file, filename: str) -> Requires:
    """What an sdist declares, read in its top folder as pip and uv unpack it (`<name>-<version>/…`,
    of any archive they build from, `sdist_archive`): every Requires-Dist of its PKG-INFO (one past
    MAX_METADATA_BYTES is not read), and its build requirements (`build_requires` of its
    pyproject.toml; what cannot be read of one is said in `build_unread`). An archive that is not
    read (`root_files`: past its bounds, not in one top folder, or in a format not read) says
    nothing that can be judged, and is said in `build_unread` too: pip and uv would build it all
    the same, fetching what its build requires."""
    archive = sdist_archive(filename)
    file.seek(0)
    try:
        if archive is None:
            raise ValueError("it is in no archive format pip or uv builds an sdist from")
        found = root_files(file, archive, SDIST_FILES, MAX_METADATA_BYTES)
    except ValueError as error:
        return Requires([], build_unread=(f"{filename} is not read: {error}",))
    finally:
        file.seek(0)
    requires = [text for metadata in found["PKG-INFO"] if metadata is not None for text in requires_dist(metadata)]
    build, unread = [], []
    for pyproject in found["pyproject.toml"]:
        try:
            build += build_requires(pyproject)
        except ValueError as error:
            unread.append(f"pyproject.toml {error}")
    return Requires(requires, build=tuple(build), build_unread=tuple(unread))


def build_requires(pyproject: bytes | None) -> list[str]:
    """The `build-system.requires` of an sdist's pyproject.toml (None: one not read), which the
    installer fetches to build it before anything else, as pip and uv read it: none without
    the table or the key (pip then builds with setuptools, by name). ValueError, saying why, for
    one that is not read or not TOML, past MAX_READ_BYTES, or whose `build-system.requires` is
    not a list of strings: what the build fetches is then not known."""
    if pyproject is None or len(pyproject) > MAX_READ_BYTES:
        raise ValueError(f"is not a file of at most {MAX_READ_BYTES} bytes, the most read of it")
    try:
        document = tomllib.loads(pyproject.decode())
    except (ValueError, RecursionError) as error:  # not UTF-8, not TOML, nested past the parser's depth
        raise ValueError(f"is not TOML: {error}") from None
    system = document.get("build-system", {})
    requires = system.get("requires", []) if isinstance(system, dict) else None
    if not isinstance(requires, list) or not all(isinstance(text, str) for text in requires):
        raise ValueError("has a build-system.requires that is not a list of strings")
    return requires


class Wheel(NamedTuple):
    """What the index reads of a wheel: its own METADATA, the other projects it installs
    (`carried`), and why what it adds to `sys.path` cannot be judged (`unjudged`)."""

    metadata: bytes
    carried: list[str]
    unjudged: list[str]


def wheel_metadata(file, filename: str) -> Wheel:
    """The METADATA of a wheel's one `.dist-info` directory, and what else it installs (`carried`);
    a wheel that has none, several, or is no zip is refused (502): what cannot be read cannot be
    judged."""
    file.seek(0)
    try:
        with zipfile.ZipFile(file) as archive:
            names = archive.namelist()
            own = canonicalize_name(filename.split("-", 1)[0])  # another project's is carried, judged below
            found = [
                n
                for n in names
                if n.count("/") == 1 and n.endswith(".dist-info/METADATA") and _project(n.split("/")[0]) == own
            ]
            if len(found) != 1:
                raise bad_gateway(f"{filename} has {len(found)} .dist-info/METADATA files, so it cannot be judged")
            info = archive.getinfo(found[0])
            if info.file_size > MAX_METADATA_BYTES:
                raise bad_gateway(f"the METADATA of {filename} is larger than {MAX_METADATA_BYTES} bytes")
            return Wheel(archive.read(info), *carried(archive, found[0].split("/", 1)[0]))
    except (
        zipfile.BadZipFile,
        zipfile.LargeZipFile,
        OSError,
        EOFError,
        NotImplementedError,
        ValueError,
        zlib.error,
    ) as error:
        raise bad_gateway(f"{filename} is not a readable wheel ({error}), so it cannot be judged") from None


def carried(archive: zipfile.ZipFile, own: str) -> tuple[list[str], list[str]]:
    """The projects a wheel installs besides itself, and what it adds to `sys.path` that cannot be
    judged. Read where installed projects live, as pip and uv install it (`./` and `x/../`
    resolved): the wheel's root, the root of its `.data/purelib` or `.data/platlib`, a
    `site-packages` or `dist-packages` folder under its `.data/data` (all one folder, the site).

    - A project is each `.dist-info` folder there but its own (`own`), and each `.egg-info`
      folder or file: pip and importlib.metadata count each as installed, by its folder's name
      and by the `Name:` its metadata says (both are judged). One vendored deeper
      (`pkg/_vendor/x.dist-info`) is only code of its wheel's project. One at any depth of the
      wheel's other `.data` folders (`_elsewhere`) is a project too.
    - A `.pth` file there puts each of its path lines on `sys.path`. A line naming a folder the
      wheel installs (pywin32's `win32`) is read like the site: the projects in it are judged. A
      line naming anything else (a zip or an egg, a folder the wheel does not hold, a path outside
      the site) cannot be judged. Its `import` lines are code the wheel runs, like any other."""
    names = archive.namelist()
    site = {name: placed for name in names[:MAX_WHEEL_MEMBERS] if (placed := _in_site(name)) is not None}
    projects, unjudged, added = [], [], [()]
    for name in names[:MAX_WHEEL_MEMBERS]:  # installed elsewhere, yet found as installed there
        if name not in site and (found := _elsewhere(name)) is not None:
            folder, said = found
            projects.append(_project(folder))
            projects += _names_said(_whole(archive, name, unjudged)) if said else []
    for name, placed in site.items():
        if len(placed) == 1 and placed[0].lower().endswith(".pth"):
            for line in _path_lines(_whole(archive, name, unjudged)):
                held = tuple(_parts(line))
                if held[0] in ("", "..") or not _holds(site.values(), held):  # absolute, or above the site
                    unjudged.append(f"{name} adds {line!r} to sys.path")
                else:
                    added.append(held)
    for name, placed in site.items():
        for folder in added:
            if placed[: len(folder)] != folder or len(placed) <= len(folder):
                continue
            part = placed[len(folder)]
            if not part.lower().endswith(METADATA_FOLDERS) or (part == own and not folder):
                continue
            projects.append(_project(part))
            if len(placed) == len(folder) + 1 or placed[len(folder) + 1] in ("METADATA", "PKG-INFO"):
                projects += _names_said(_whole(archive, name, unjudged))
    if len(names) > MAX_WHEEL_MEMBERS:
        unjudged.append(f"it holds more than {MAX_WHEEL_MEMBERS} files")
    return list(dict.fromkeys(projects)), list(dict.fromkeys(unjudged))


def _in_site(name: str) -> tuple[str, ...] | None:
    """Where a member lands below the site folder, or None when it lands elsewhere."""
    parts = _parts(name)
    if len(parts) > 2 and parts[0].endswith(".data") and parts[1] in ("purelib", "platlib"):
        return tuple(parts[2:])
    if len(parts) > 2 and parts[0].endswith(".data"):
        sites = [at for at, part in enumerate(parts) if part in ("site-packages", "dist-packages")]
        return tuple(parts[sites[0] + 1 :]) if parts[1] == "data" and sites else None
    return tuple(parts)


def _elsewhere(name: str) -> tuple[str, bool] | None:
    """A project's folder a member of `.data/data`, `.data/scripts` or `.data/headers` lies in,
    at any depth, outside the site: such folders land on `sys.path` too (`lib/python3.11/` of a
    Python without a venv, a venv's `bin/`, which is `sys.path[0]` for its scripts), where pip
    and importlib.metadata count them as installed. With whether the member is its metadata."""
    parts = _parts(name)
    if len(parts) < 3 or not parts[0].endswith(".data") or parts[1] in ("purelib", "platlib"):
        return None
    at = next((i for i, part in enumerate(parts[2:], 2) if part.lower().endswith(METADATA_FOLDERS)), None)
    if at is None:
        return None
    return parts[at], len(parts) == at + 1 or parts[at + 1] in ("METADATA", "PKG-INFO")


def _parts(name: str) -> list[str]:
    """A member's path as pip and uv extract it (`./` and `x/../` resolved, backslashes as slashes)."""
    return posixpath.normpath(name.replace("\\", "/")).split("/")


def _holds(placed, folder: tuple[str, ...]) -> bool:
    """Whether the wheel installs a folder there (a member below it, not a file by that name)."""
    return any(len(p) > len(folder) and p[: len(folder)] == folder for p in placed)


def _whole(archive: zipfile.ZipFile, name: str, unjudged: list[str]) -> bytes:
    """A member read whole; one larger than MAX_READ_BYTES is not read (empty), and said so in
    `unjudged`."""
    if archive.getinfo(name).file_size > MAX_READ_BYTES:
        unjudged.append(f"{name} is larger than {MAX_READ_BYTES} bytes, the most read of it")
        return b""
    with archive.open(name) as member:
        return member.read(MAX_READ_BYTES)


def _names_said(metadata: bytes) -> list[str]:
    """The `Name:` a carried project's metadata says, canonical (none when it says none)."""
    parsed = email.parser.BytesParser(policy=email.policy.compat32).parsebytes(metadata, headersonly=True)
    said = parsed.get("Name")
    return [canonicalize_name(str(said))] if said else []


def _path_lines(pth: bytes) -> list[str]:
    """A `.pth` file's path lines, as `site` reads them: lines split as a text file splits them,
    every one but blank ones, comments and `import` lines, its trailing blanks dropped and its
    leading ones kept (`  hidden` is a folder of its own, which a strip had judged as `hidden`)."""
    lines = re.split(r"\r\n|\r|\n", pth.decode("utf-8", "replace"))
    return [x.rstrip() for x in lines if x.strip() and not x.startswith(("#", "import ", "import\t"))]


def _project(folder: str) -> str:
    """The project a `name-version.dist-info` (or `.egg-info`) folder is of."""
    stem = folder[: folder.rfind(".")]
    return canonicalize_name(stem.split("-", 1)[0])


def too_large(limit: int) -> HTTPProblem:
    return HTTPProblem(
        403,
        "Forbidden",
        f"the wheel is larger than {limit} bytes, the most the index reads to judge the dependencies "
        "a version declares, so it is refused",
    )
