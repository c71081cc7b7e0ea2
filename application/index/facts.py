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
  version's wheel and sdist differ in both. An sdist's PKG-INFO and pyproject.toml are read by
  the tarball reader (`root_files`), with the same bounds.
"""

from __future__ import annotations

import gzip
import json
import re
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


def root_files(file: IO[bytes], names: tuple[str, ...], limit: int) -> dict[str, list[bytes | None]] | None:
    """{name: the bodies of the members called so in a gzipped tarball's root folder} for each of
    `names` (`<root>/<name>`, as pip and uv unpack an sdist: its one top folder stripped, whatever
    it is called); None in a body's place for a member larger than `limit` bytes or not a regular
    file (a link, a folder), which is not read; None when the tarball is not read (as
    `tarball_contents` reads one: the same bounds, the same refusals)."""
    found: dict[str, list[bytes | None]] = {name: [] for name in names}
    try:
        for member in _members(_Unpacked(gzip.GzipFile(fileobj=file, mode="rb"))):
            if len(member.parts) == 1 and member.parts[0] in found:
                fits = member.kind in FILE_KINDS and member.size <= limit
                found[member.parts[0]].append(member.body() if fits else None)
    except (OSError, EOFError, ValueError, UnicodeError, zlib.error):  # as tarball_contents
        return None
    return found


class _Member:
    """One member of a tarball: its path below the root folder (`parts`; empty: the root folder's
    own entry), its kind and its size; its body is read with `body()`, else skipped."""

    def __init__(self, tar: _Unpacked, parts: list[str], kind: bytes, size: int):
        self.parts, self.kind, self.size = parts, kind, size
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
        member = _Member(tar, _relative(name, kind), kind, size)
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


def _relative(name: str, kind: bytes) -> list[str]:
    """A member's path below the tarball's root folder, which npm strips whatever it is called.
    Only a clean path is read (`root/a/b`, a folder's with a trailing `/`): one with an empty,
    `.` or `..` part, or a backslash, lands where readers differ (npm strips the first part as
    written: `./node_modules/x` is `node_modules/x`), so the tarball is not read."""
    parts = name.removesuffix("/").split("/") if kind == b"5" else name.split("/")
    if "\\" in name or any(part in ("", ".", "..") for part in parts) or DRIVE.match("/".join(parts[1:])):
        raise ValueError("a member path that is not a clean relative path")  # npm's tar strips `c:`, as win32
    return parts[1:]


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
