"""What the index knows of a version from upstream's metadata: the facts the rules beyond names
judge (`domain.rules.VersionFacts`), read where each registry says them.

- Upload time: a PyPI file's PEP 700 `upload-time` (the JSON form of the simple API only: the
  index asks its upstream for JSON first; an HTML page has none), an npm version's entry in the
  packument's `time` (the full packument only: the abbreviated one npm asks for has none). A time
  upstream does not give is None, which a release-age rule treats as too new (fail closed).
- Install-time code (npm): a manifest's `preinstall`, `install` or `postinstall` script, or the
  registry's `hasInstallScript` (all the abbreviated packument says). npm installs what the
  tarball's own `package.json` says, and its bundled packages' too, which a registry does not
  hold to the packument's word ("manifest confusion"): every tarball a GET fetches is read before
  it is served (`tarball_contents`), and its word is the one judged and recorded.
- Bundled packages (npm): every tarball is read before it is served, for the names it carries
  under `node_modules`, which every client installs from it whatever the manifests declare.
- Source distribution (python): a file that is not a wheel. Python facts are per file: one
  version's wheel and sdist differ in both. An sdist's PKG-INFO and pyproject.toml are read in
  its top folder (`root_files`): a tar by the tarball reader, with the same bounds, however it
  is compressed; a zip by its directory.
"""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import re
import stat
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import IO

from domain.rules import VersionFacts, sdist_file

INSTALL_SCRIPTS = ("preinstall", "install", "postinstall")
# What reading a tarball may cost; past any of these, its word is not known.
MAX_MANIFEST_BYTES = 1024 * 1024
MAX_UNPACKED_BYTES = 1024**3
MAX_MEMBERS = 100_000
MAX_HEADER_BYTES = 64 * 1024  # a long name's or a pax header's text
BLOCK = 512
# Member kinds read here: files, folders, links (judged by name), and the headers that extend the
# next member (GNU long name and link, pax); any other (GNU `N`, Solaris `X`, devices...) is not
# read as npm's tar reads it, so the tarball is not read.
READ_KINDS = (b"0", b"\0", b"7", b"5", b"1", b"2", b"L", b"K", b"x", b"g")
FILE_KINDS = (b"0", b"\0", b"7")  # regular files
DRIVE = re.compile(r"^[A-Za-z]:")
# What opens a tar's uncompressed stream, by its compression (`domain.python_files.SDIST_ARCHIVES`);
# lzma reads .xz and legacy .lzma alike, as pip's tarfile does.
TAR_STREAMS = {
    "gz": lambda file: gzip.GzipFile(fileobj=file, mode="rb"),
    "bz2": bz2.BZ2File,
    "xz": lzma.LZMAFile,
    "": lambda file: file,
}
# What pip and uv do with an sdist whose members are not all in one folder (pip's
# `has_leading_dir`, uv's `strip_component`): they build from the archive's root.
NOT_ONE_FOLDER = (
    "its members do not all sit in one top folder, so pip and uv would build it from the archive's root, "
    "which the index does not read"
)


def python_file(entry: dict, version: str | None) -> VersionFacts:
    """The facts of one file of a PEP 691 page (`version`: the one its name says; None when it
    says none, which no rule can judge)."""
    filename = entry.get("filename") or ""
    return VersionFacts(version, instant(entry.get("upload-time")), sdist=sdist_file(filename))


def npm_version(version: str, manifest: dict, times: dict | None) -> VersionFacts:
    """The facts of one npm version: its manifest, and the packument's `time` (None: not known)."""
    uploaded = instant(times.get(version)) if isinstance(times, dict) else None
    declared = runs_install_scripts(manifest) or bool(manifest.get("hasInstallScript"))
    return VersionFacts(version, uploaded, install_scripts=declared)


def runs_install_scripts(manifest: object) -> bool:
    """Whether a `package.json` (the packument's copy or the tarball's own) names an install script."""
    scripts = manifest.get("scripts") if isinstance(manifest, dict) else None
    return isinstance(scripts, dict) and any(scripts.get(s) for s in INSTALL_SCRIPTS)


@dataclass(frozen=True)
class Tarball:
    """What an npm tarball holds, read as npm unpacks it (the first path component stripped).

    - `install_scripts`: whether a `package.json` at its root or in a package's folder under
      `node_modules` (a bundled package, whose scripts npm runs too) names an install script (of
      several at one place, extracted in order, a later one wins on disk, so any counts), or a
      `binding.gyp` sits in one of those folders (npm then runs `node-gyp rebuild`); None when
      no readable manifest is at its root or one of those is not readable, which counts as
      running code.
    - `bundled`: every package name under a `node_modules` folder, at any depth. npm, pnpm and
      yarn install those from the tarball itself, whatever its manifest or the packument
      declares, so each is judged as a bundled dependency."""

    install_scripts: bool | None
    bundled: tuple[str, ...]


def tarball_contents(file: IO[bytes]) -> Tarball | None:
    """What an npm tarball holds; None when it cannot be read as a gzipped tar, holds what npm's
    tar (node-tar) would read otherwise than this reader, or passes a bound (bytes unpacked,
    members, a header's size): what it would install is then not known.

    Read by hand, block by block: `tarfile` holds a long name's or a pax header's text whole in
    memory, whatever size it claims, and keeps every member it has seen. It reads as node-tar
    does where that decides what lands on disk (a pax `path` or `size` overrides the header's, a
    GNU long name names the next member, the ustar prefix counts only in a POSIX header, number
    fields end at their first NUL), and refuses what node-tar would read another way: a header
    whose checksum it fails, a malformed pax record, a zero block inside the archive (node-tar
    reads on past one), a member path that is not clean, a name with bytes after its end, a member
    kind outside READ_KINDS, a file with a link name, names that disagree."""
    try:
        return _scan(_Unpacked(gzip.GzipFile(fileobj=file, mode="rb")))
    except (OSError, EOFError, ValueError, UnicodeError, zlib.error):  # gzip's, a bound, a name not UTF-8
        return None


def _scan(tar: _Unpacked) -> Tarball:
    scripts: bool | None = False
    manifests, bundled = 0, set()
    for member in _members(tar):
        parts, kind, size = member.parts, member.kind, member.size
        bundled.update(_bundled_names(parts, kind))
        if parts and parts[-1] in ("package.json", "binding.gyp") and _in_package_folder(parts) and scripts is not None:
            if kind not in FILE_KINDS or size > MAX_MANIFEST_BYTES:
                scripts = None  # a link or a directory in a manifest's place, or a huge one: not known
            elif parts[-1] == "binding.gyp":
                scripts = True
            else:
                manifests += len(parts) == 1  # the root's: without one, what the package runs is not known
                scripts = _manifest_scripts(member.body(), scripts)
    return Tarball(scripts if manifests else None, tuple(sorted(bundled)))


def root_files(file: IO[bytes], archive: str, names: tuple[str, ...], limit: int) -> dict[str, list[bytes | None]]:
    """{name: the bodies of the members called so in an sdist's top folder} for each of `names`
    (`<top>/<name>`, as pip and uv unpack an sdist: its one top folder stripped, whatever it is
    called), of an archive unpacked as `archive` says (`domain.python_files.SDIST_ARCHIVES`);
    None in a body's place for a member larger than `limit` bytes or not a regular file (a link,
    a folder), which is not read. ValueError, saying why, when the archive is not read: a tar as
    `tarball_contents` reads one (the same bounds, the same refusals) whatever its compression, a
    zip by its directory (as many members, paths as clean); and one whose members are not all in
    one top folder (NOT_ONE_FOLDER)."""
    found = _TopFolder(names, limit)
    try:
        if archive == "zip":
            _zip_members(file, found)
        elif archive in TAR_STREAMS:
            for member in _members(_Unpacked(TAR_STREAMS[archive](file))):
                found.add(member.top, member.parts, member.kind == b"5", member.kind in FILE_KINDS, member)
        else:
            raise ValueError(f"it is compressed with {archive}, which the index does not read")  # uv's .tar.zst
    except (
        OSError,  # a decompressor's
        EOFError,
        UnicodeError,  # a name not UTF-8
        zlib.error,
        lzma.LZMAError,
        zipfile.BadZipFile,
        zipfile.LargeZipFile,
        RuntimeError,  # a zip's compression method it does not read, or its encryption
    ) as error:
        raise ValueError(f"it is not a readable archive ({error})") from None
    return found.files()


class _TopFolder:
    """The members called one of `names` in an sdist's top folder, gathered as its members go by
    (`add`), and that every member is in that one folder, whatever it is called."""

    def __init__(self, names: tuple[str, ...], limit: int):
        self.found: dict[str, list[bytes | None]] = {name: [] for name in names}
        self.limit = limit
        self.top: str | None = None

    def add(self, top: str, below: list[str], folder: bool, regular: bool, member) -> None:
        """One member: its path's first part and the parts `below` it, whether it is a folder, or a
        regular file; `member`'s `size`, and its `body()`, read only when needed."""
        if self.top not in (None, top) or (not below and not folder):
            raise ValueError(NOT_ONE_FOLDER)
        self.top = top
        if len(below) == 1 and below[0] in self.found:
            self.found[below[0]].append(member.body() if regular and member.size <= self.limit else None)

    def files(self) -> dict[str, list[bytes | None]]:
        if self.top is None:
            raise ValueError("it holds nothing")
        return self.found


def _zip_members(file: IO[bytes], found: _TopFolder) -> None:
    """A zip's members, by its directory, to `found`: past MAX_MEMBERS, or with a path that is not
    clean (as a tarball's), it is not read; a link is no regular file."""
    with zipfile.ZipFile(file) as archive:
        members = archive.infolist()
        if len(members) > MAX_MEMBERS:
            raise ValueError("more members than any package holds")
        for info in members:
            path, link = _path(info.filename, info.is_dir()), stat.S_ISLNK(info.external_attr >> 16)
            found.add(path[0], path[1:], info.is_dir(), not info.is_dir() and not link, _Zipped(archive, info))


class _Zipped:
    """A zip member as `_TopFolder` reads one."""

    def __init__(self, archive: zipfile.ZipFile, info: zipfile.ZipInfo):
        self.size, self._archive, self._info = info.file_size, archive, info

    def body(self) -> bytes:
        return self._archive.read(self._info)


class _Member:
    """One member of a tarball: its path's first part (`top`), its path below that root folder
    (`parts`; empty: the root folder's own entry), its kind and its size; its body is read with
    `body()`, else skipped."""

    def __init__(self, tar: _Unpacked, path: list[str], kind: bytes, size: int):
        self.top, self.parts, self.kind, self.size = path[0], path[1:], kind, size
        self._tar, self.read = tar, False

    def body(self) -> bytes:
        self.read = True
        return self._tar.read(_blocks(self.size))[: self.size]


def _members(tar: _Unpacked) -> Iterator[_Member]:
    """Each member a tarball places, as npm's tar (node-tar) reads it; ValueError (or EOFError)
    for what node-tar would read otherwise, and past MAX_MEMBERS."""
    extended: dict = {}
    for _ in range(MAX_MEMBERS):
        header = tar.header()
        if header in (b"", bytes(BLOCK)):
            if header == b"" or tar.header() in (b"", bytes(BLOCK)):  # the end: two zero blocks, or none left
                return
            raise ValueError("a zero block inside the archive")  # node-tar reads on past one: not read alike
        _check_sum(header)
        kind = header[156:157]
        if kind not in READ_KINDS:
            raise ValueError("a member of a kind this reader does not read as npm's tar does")
        size = _octal(header[124:136])
        if kind in (b"L", b"x", b"g", b"K"):  # a long name or link, or pax records, for the next member
            if size > MAX_HEADER_BYTES:
                raise ValueError("a header past its bound")
            text = tar.read(_blocks(size))[:size]
            if kind == b"g" and {"path", "size"} & set(_pax(text)):
                raise ValueError("a global pax header that renames or resizes members")
            said = {"path": _text(text)} if kind == b"L" else _pax(text) if kind == b"x" else {}
            if any(extended.get(key, value) != value for key, value in said.items()):
                raise ValueError("two headers that name the next member otherwise")  # which wins is npm's to say
            extended = {**extended, **said}
            continue
        size = int(extended.get("size") or size)  # a pax size overrides the header's, as node-tar reads it
        if size and kind in (b"1", b"2", b"3", b"4", b"5", b"6"):
            raise ValueError("a link, device or folder with a body")  # readers differ on whether to skip it
        if kind not in (b"1", b"2") and header[157:257].strip(b"\0"):
            raise ValueError("a link name on what is not a link")  # node-tar skips such a header
        name, extended = extended.get("path") or _ustar_name(header), {}
        member = _Member(tar, _path(name, kind == b"5"), kind, size)
        yield member
        if not member.read:
            tar.skip(_blocks(size))
    raise ValueError("more members than any package holds")


def _check_sum(header: bytes) -> None:
    """A header's checksum, as node-tar checks it (its own field counted as spaces, the bytes
    summed unsigned); node-tar skips a header that fails it and reads the next block as one."""
    if _octal(header[148:156]) != sum(header[:148] + b" " * 8 + header[156:]):
        raise ValueError("a header whose checksum is wrong")


def _octal(field: bytes) -> int:
    """A number field as node-tar reads one: up to its first NUL, blanks trimmed, empty is 0."""
    digits = field.split(b"\0", 1)[0].strip(b" ")
    if not all(48 <= d <= 55 for d in digits):  # octal digits only (int() would take `0o`, `_`, signs)
        raise ValueError("a number field that is not octal")  # base-256 sizes (past 8 GiB) too: not read
    return int(digits or b"0", 8)


def _text(field: bytes) -> str:
    """A name field: its text, then only NULs. node-tar cuts a name at a NUL only up to a newline
    (`x\\0\\n/node_modules/y` is a path to it), so anything after the first NUL is not read alike."""
    text, _, rest = field.partition(b"\0")
    if rest.strip(b"\0") or b"\n" in text or b"\r" in text:
        raise ValueError("a name with bytes after its end, or a line break")
    return text.decode()


def _path(name: str, folder: bool) -> list[str]:
    """A member's path, in parts: its first, the root folder npm (or pip, or uv) strips whatever it
    is called, then the path below it. Only a clean path is read (`root/a/b`, a folder's with a
    trailing `/`): one with an empty, `.` or `..` part, or a backslash, lands where readers differ
    (npm strips the first part as written: `./node_modules/x` is `node_modules/x`), so the archive
    is not read."""
    parts = name.removesuffix("/").split("/") if folder else name.split("/")
    if "\\" in name or any(part in ("", ".", "..") for part in parts) or DRIVE.match("/".join(parts[1:])):
        raise ValueError("a member path that is not a clean relative path")  # npm's tar strips `c:`, as win32
    return parts


def _manifest_scripts(text: bytes, found: bool) -> bool | None:
    try:
        return runs_install_scripts(json.loads(text)) or found
    except (ValueError, RecursionError):  # not JSON, or nested past the parser's depth
        return None


def _in_package_folder(parts: list[str]) -> bool:
    """Whether a member sits in a package's own folder: the tarball's root, or a package's under
    `node_modules` at any depth (`node_modules/a/x`, `node_modules/@s/b/x`). npm runs a bundled
    package's install scripts as its own; one carried but not declared bundled it does not, but
    the index counts every one (a client may, and what is carried is the publisher's to say)."""
    folder = parts[:-1]
    scoped = len(folder) >= 3 and folder[-3] == "node_modules" and folder[-2].startswith("@")
    plain = len(folder) >= 2 and folder[-2] == "node_modules" and not folder[-1].startswith((".", "@"))
    return not folder or scoped or plain


def _bundled_names(parts: list[str], kind: bytes) -> list[str]:
    """The package names a member's path puts under `node_modules` (`node_modules/a/…`,
    `node_modules/@s/b/…`, nested ones too); a folder's own entry counts, and so does a link in a
    package's place; a loose file there (`node_modules/.package-lock.json`) and dot-folders
    (`.bin`) do not."""
    names = []
    for at, part in enumerate(parts[:-1]):
        if part != "node_modules" or parts[at + 1].startswith("."):
            continue
        end = at + (3 if parts[at + 1].startswith("@") else 2)  # past the name's parts
        if len(parts) > end or (len(parts) == end and kind in (b"5", b"1", b"2")):
            names.append("/".join(parts[at + 1 : end]))
    return names


def _blocks(size: int) -> int:
    return -(-size // BLOCK) * BLOCK


def _ustar_name(header: bytes) -> str:
    """A header's path as node-tar reads it: the prefix only in a POSIX header, of 155 bytes
    when its last byte is set, else of 130 (node-tar's own writer keeps times after it)."""
    name = _text(header[0:100])
    prefix = ""
    if header[257:265] == b"ustar\x0000":
        prefix = _text(header[345:500] if header[475] else header[345:475])
    return prefix + "/" + name if prefix else name


def _pax(records: bytes) -> dict[str, str]:
    """The pax extended-header records that place a member (`path`, `size`, `linkpath`; each
    record `<length> <key>=<value>\\n`, the length counting the whole record); a record that breaks
    that form, or one of those values with bytes after a NUL, is refused."""
    found, at = {}, 0
    while at < len(records):
        length, space, _ = records[at : at + 24].partition(b" ")
        if not space or not length.isdigit() or int(length) <= len(length) + 1:
            raise ValueError("a malformed pax record")
        record = records[at : at + int(length)]
        key, equals, value = record[len(length) + 1 :].partition(b"=")
        if len(record) != int(length) or not record.endswith(b"\n") or not equals:
            raise ValueError("a malformed pax record")
        if key in (b"path", b"size", b"linkpath"):  # what decides a member's place; others may be binary
            found[key.decode()] = _text(value[:-1])
        at += int(length)
    return found


class _Unpacked:
    """The uncompressed stream, read at most MAX_UNPACKED_BYTES far; short reads are an error."""

    def __init__(self, stream):
        self.stream, self.total = stream, 0

    def read(self, size: int) -> bytes:
        self.total += size
        if self.total > MAX_UNPACKED_BYTES:
            raise ValueError("past the bytes a tarball may unpack")
        data = self.stream.read(size)
        if len(data) != size:
            raise EOFError("the tarball ends early")
        return data

    def header(self) -> bytes:
        """The next header block; empty at the stream's very end (some packers write no end blocks)."""
        data = self.stream.read(BLOCK)
        self.total += len(data)
        if data and len(data) != BLOCK:
            raise EOFError("the tarball ends inside a header")
        return data

    def skip(self, size: int) -> None:
        while size:
            size -= len(self.read(min(size, 1024 * 1024)))


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
