"""A full-fidelity PyPI simple index for tests, served on 127.0.0.1.

Wheels and sdists are built here (zipfile, tarfile) with real core metadata, so real pip and uv
can resolve and install them. The index speaks PEP 503 HTML and PEP 691 JSON by `Accept`, with
PEP 658/714 `.metadata` files, PEP 592 yanked files, `requires-python`, PEP 700 `versions`,
`size` and `upload-time`. Pages link files by relative URLs (clients must resolve them), except
files on another host. Every request is logged, and `outage` makes it answer 503.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import tarfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from html import escape

from domain.python_files import SDIST_ARCHIVES
from tests.support.fixture_server import OTHER_HOST, FixtureServer

JSON_TYPE = "application/vnd.pypi.simple.v1+json"
HTML_TYPE = "application/vnd.pypi.simple.v1+html"


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass
class Dist:
    """One release of a project; `files` lists which files (wheel, sdist) it ships."""

    project: str
    version: str
    requires: tuple[str, ...] = ()
    requires_python: str | None = None
    yanked: bool | str = False
    files: tuple[str, ...] = ("wheel", "sdist")
    upload_time: str = "2026-01-02T03:04:05.000000Z"
    # the sdist under another name (`legacy-1.0.tar.bz2`, `x-1.0.zip`), packed as its suffix says
    sdist_name: str | None = None
    hashed: bool = True  # its page gives its files' sha256 (else the index relays them unverified)
    # other projects its wheel installs, dist-info and all, at these places (`beta` at the root,
    # `.data/purelib/beta` under its .data folder, `./beta` spelled so): the index is not told
    carried: tuple[str, ...] = ()
    more: tuple[tuple[str, bytes], ...] = ()  # other files its wheel holds, as (path, bytes)
    # its sdist's PKG-INFO says Requires-Dist is dynamic (Metadata 2.2) and lists none, as a
    # `setup.py` computing them would: only its wheel's metadata says what it declares
    sdist_dynamic: bool = False
    # other files its sdist holds, as (path below its root, bytes); a `pyproject.toml` among them
    # replaces the plain setuptools one
    sdist_more: tuple[tuple[str, bytes], ...] = ()
    sdist_root: str | None = None  # the folder its sdist's files are in (default name-version; "": none)
    listed_under: str | None = None  # the project whose page lists its files, when not its own


@dataclass
class File:
    filename: str
    project: str
    data: bytes
    dist: Dist
    metadata: bytes | None = None  # the wheel's METADATA, served as <file>.metadata
    host: str | None = None  # serve from another host name ("localhost"), not the index's

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


def _metadata(dist: Dist, dynamic: bool = False) -> bytes:
    lines = [
        "Metadata-Version: 2.2" if dynamic else "Metadata-Version: 2.1",
        f"Name: {dist.project}",
        f"Version: {dist.version}",
        f"Summary: {dist.project} for tests",
    ]
    if dist.requires_python:
        lines.append(f"Requires-Python: {dist.requires_python}")
    # every extra a requirement's marker names is declared, as real builds do (pip ignores others)
    extras = dict.fromkeys(re.findall(r"extra\s*==\s*['\"]([^'\"]+)['\"]", "\n".join(dist.requires)))
    lines += [f"Provides-Extra: {e}" for e in extras]
    lines += ["Dynamic: Requires-Dist"] if dynamic else [f"Requires-Dist: {r}" for r in dist.requires]
    return ("\n".join(lines) + "\n").encode()


def build_wheel(dist: Dist) -> tuple[str, bytes, bytes]:
    """A pure-Python wheel whose module records its version; its RECORD has real hashes."""
    module = dist.project.replace("-", "_")
    info = f"{module}-{dist.version}.dist-info"
    metadata = _metadata(dist)
    members = {
        f"{module}/__init__.py": f"__version__ = {dist.version!r}\n".encode(),
        f"{info}/METADATA": metadata,
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    for place in dist.carried:
        where, _, name = place.rpartition("/")
        prefix = f"{module}-{dist.version}{where}/" if where.startswith(".data") else f"{where}/" if where else ""
        carried = f"{prefix}{name}-1.0.dist-info"
        members[f"{prefix}{name}/__init__.py"] = b"CARRIED = True\n"
        members[f"{carried}/METADATA"] = f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n".encode()
        members[f"{carried}/RECORD"] = b""
    members.update(dict(dist.more))
    record = "".join(f"{path},sha256={_urlsafe_digest(data)},{len(data)}\n" for path, data in members.items())
    members[f"{info}/RECORD"] = (record + f"{info}/RECORD,,\n").encode()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path, data in members.items():
            archive.writestr(zipfile.ZipInfo(path, date_time=(2026, 1, 2, 3, 4, 5)), data)
    return f"{module}-{dist.version}-py3-none-any.whl", buffer.getvalue(), metadata


def _urlsafe_digest(data: bytes) -> str:
    import base64

    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def build_sdist(dist: Dist) -> tuple[str, bytes]:
    module = dist.project.replace("-", "_")
    root = f"{module}-{dist.version}" if dist.sdist_root is None else dist.sdist_root
    prefix = f"{root}/" if root else ""
    members = {
        f"{prefix}PKG-INFO": _metadata(dist, dynamic=dist.sdist_dynamic),
        f"{prefix}pyproject.toml": b'[build-system]\nrequires = ["setuptools"]\n',
        **{f"{prefix}{path}": data for path, data in dist.sdist_more},
    }
    filename = dist.sdist_name or f"{module}-{dist.version}.tar.gz"
    return filename, pack(filename, members)


# How a tar is compressed, by its name's suffix, as pip and uv read it (those Python can write).
TAR_MODES = {suffix: mode for suffix, mode in SDIST_ARCHIVES.items() if mode not in ("zip", "zst")}


def pack(filename: str, members: dict[str, bytes]) -> bytes:
    """An archive of `members` ({path: bytes}) in the format its name says: a zip, or a tar."""
    buffer = io.BytesIO()
    if filename.endswith(".zip"):
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for path, data in members.items():
                archive.writestr(zipfile.ZipInfo(path, date_time=(2026, 1, 2, 3, 4, 5)), data)
        return buffer.getvalue()
    mode = next(mode for suffix, mode in TAR_MODES.items() if filename.endswith(suffix))
    with tarfile.open(fileobj=buffer, mode=f"w:{mode}") as archive:
        for path, data in members.items():
            info = tarfile.TarInfo(path)
            info.size, info.mtime = len(data), 1767323045
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@dataclass
class Project:
    name: str
    files: list[File] = field(default_factory=list)
    status: str | None = None  # PEP 792, as this upstream declares it
    status_reason: str | None = None


# alpha 0.9, older and without beta, is what a resolver refused beta would back-track to.
DEFAULT_DISTS = (
    Dist("alpha", "0.9"),
    Dist("alpha", "1.0", requires=("beta>=1.0",)),
    Dist("beta", "1.0"),
    Dist("beta", "1.1", requires_python=">=3.8"),
    Dist("beta", "9.0", yanked="broken build", files=("wheel",)),
    Dist("gamma", "0.1", files=("sdist",), requires_python=">=3.10,<4"),
    Dist("Delta_Pkg", "2.0", upload_time="2025-06-07T08:09:10Z"),
    Dist("archived-thing", "1.0", yanked=True),
)


class PyPIUpstream(FixtureServer):
    """Serve `dists` as a simple index at `<url>/simple/`; files at `<url>/files/...`."""

    def __init__(self, dists=DEFAULT_DISTS, statuses: dict | None = None, other_host: set[str] = frozenset()):
        super().__init__(other_host=bool(other_host))
        self.projects: dict[str, Project] = {}
        # project -> a change made to its JSON page as it is sent (an upstream answering nonsense)
        self.edits: dict[str, Callable[[dict], None]] = {}
        for dist in dists:
            self.add(dist, host=OTHER_HOST if normalize(dist.project) in other_host else None)
        for name, (status, reason) in (statuses or {}).items():
            self.projects[name].status, self.projects[name].status_reason = status, reason
        self.start()

    def add(self, dist: Dist, host: str | None = None) -> None:
        listed = dist.listed_under or dist.project
        project = self.projects.setdefault(normalize(listed), Project(listed))
        if "wheel" in dist.files:
            filename, data, metadata = build_wheel(dist)
            project.files.append(File(filename, project.name, data, dist, metadata, host))
        if "sdist" in dist.files:
            filename, data = build_sdist(dist)
            project.files.append(File(filename, project.name, data, dist, None, host))

    def file(self, filename: str) -> File:
        return next(f for p in self.projects.values() for f in p.files if f.filename == filename)

    def file_url(self, f: File) -> str:
        netloc = f"{f.host}:{self.other_port}" if f.host else f"127.0.0.1:{self.port}"
        return f"http://{netloc}/files/{f.sha256[:2]}/{f.sha256}/{f.filename}"

    def page_relative_url(self, f: File) -> str:
        """As a project page links it: relative (clients resolve it), unless it is on another host."""
        return f"../../files/{f.sha256[:2]}/{f.sha256}/{f.filename}" if f.host is None else self.file_url(f)

    # -- pages ----------------------------------------------------------------------------
    def project_json(self, project: Project) -> dict:
        files = [self._file_json(f) for f in project.files]
        page = {
            "meta": {"api-version": "1.4", "_last-serial": 7},
            "name": normalize(project.name),
            "versions": sorted({f.dist.version for f in project.files if not f.dist.listed_under}, key=_version_key),
            "files": files,
        }
        if project.status:
            page["project-status"] = {
                "status": project.status,
                **({"reason": project.status_reason} if project.status_reason else {}),
            }
        return page

    def _file_json(self, f: File) -> dict:
        entry = {
            "filename": f.filename,
            "url": self.page_relative_url(f),
            "hashes": {"sha256": f.sha256} if f.dist.hashed else {},
            "requires-python": f.dist.requires_python,
            "size": len(f.data),
            "upload-time": f.dist.upload_time,
            "yanked": f.dist.yanked,
        }
        if f.metadata is not None:
            entry["core-metadata"] = {"sha256": hashlib.sha256(f.metadata).hexdigest()}
        return entry

    def project_html(self, project: Project) -> str:
        metas = ['<meta name="pypi:repository-version" content="1.4">']
        if project.status:
            metas.append(f'<meta name="pypi:project-status" content="{project.status}">')
            if project.status_reason:
                metas.append(f'<meta name="pypi:project-status-reason" content="{escape(project.status_reason)}">')
        links = [self._file_html(f) for f in project.files]
        return (
            "<!DOCTYPE html><html><head>" + "".join(metas) + f"<title>Links for {escape(project.name)}</title>"
            "</head><body>" + "<br>\n".join(links) + "</body></html>"
        )

    def _file_html(self, f: File) -> str:
        fragment = f"#sha256={f.sha256}" if f.dist.hashed else ""
        attrs = [f'href="{escape(self.page_relative_url(f))}{fragment}"']
        if f.dist.requires_python:
            attrs.append(f'data-requires-python="{escape(f.dist.requires_python)}"')
        if f.dist.yanked:
            attrs.append(f'data-yanked="{escape(f.dist.yanked) if isinstance(f.dist.yanked, str) else ""}"')
        if f.metadata is not None:
            digest = hashlib.sha256(f.metadata).hexdigest()
            attrs += [f'data-core-metadata="sha256={digest}"', f'data-dist-info-metadata="sha256={digest}"']
        return f"<a {' '.join(attrs)}>{escape(f.filename)}</a>"

    def root(self, media: str) -> tuple[str, bytes]:
        names = sorted(self.projects)
        if media == JSON_TYPE:
            body = {"meta": {"api-version": "1.4"}, "projects": [{"name": n} for n in names]}
            return media, json.dumps(body).encode()
        links = "".join(f'<a href="{n}/">{n}</a>\n' for n in names)
        return "text/html", (
            f'<html><head><meta name="pypi:repository-version" content="1.4"></head><body>{links}</body></html>'
        ).encode()

    def respond(self, path: str, accept: str) -> tuple[int, str, bytes]:
        media = JSON_TYPE if "json" in accept.split(",")[0] else HTML_TYPE
        if path == "/simple/":
            return (200, *self.root(media))
        found = re.fullmatch(r"/simple/([^/]+)/", path)
        if found:
            project = self.projects.get(found.group(1))
            if project is None or found.group(1) != normalize(found.group(1)):
                return 404, "text/plain", b"no such project"
            if media == JSON_TYPE:
                page = self.project_json(project)
                self.edits.get(found.group(1), lambda _: None)(page)
                return 200, media, json.dumps(page).encode()
            return 200, media, self.project_html(project).encode()
        found = re.fullmatch(r"/files/[0-9a-f]{2}/[0-9a-f]{64}/([^/]+)", path)
        if found:
            return self._file(found.group(1))
        return 404, "text/plain", b"not found"

    def _file(self, name: str) -> tuple[int, str, bytes]:
        wanted = name[: -len(".metadata")] if name.endswith(".metadata") else name
        for project in self.projects.values():
            for f in project.files:
                if f.filename == wanted:
                    if name.endswith(".metadata"):
                        return (200, "application/octet-stream", f.metadata) if f.metadata else (404, "text/plain", b"")
                    return 200, "application/octet-stream", f.data
        return 404, "text/plain", b"no such file"


def _version_key(text: str):
    from packaging.version import Version

    return Version(text)
