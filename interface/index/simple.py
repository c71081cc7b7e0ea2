"""The Simple Repository API's two shapes (PEP 503 HTML, PEP 691 JSON), read and written.

An upstream page, HTML or JSON, is read into one PEP 691-shaped dict with absolute file URLs;
the proxy rewrites the URLs and writes the dict back as whichever shape its client asked for.
A JSON page's shape is checked as it is read, once: a field the index reads or writes again that
holds what no PEP gives it (a number for a URL, a string for `project-status`) makes the page
the upstream's nonsense (`PageError`, a 502), so that nothing later meets it.
Everything else a client relies on passes through: hashes, `requires-python`, yanked (PEP 592),
core metadata (PEP 658, named per PEP 714: `core-metadata` in JSON, never `dist-info-metadata`),
`versions`, `size`, `upload-time` (PEP 700) and project status (PEP 792).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import lru_cache
from html import escape
from html.parser import HTMLParser
from operator import itemgetter
from urllib.parse import urldefrag

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from application.store.jsontext import loads
from domain.python_files import version_of
from interface.index.url_parts import resolved

JSON_V1 = "application/vnd.pypi.simple.v1+json"
HTML_V1 = "application/vnd.pypi.simple.v1+html"
# Offered in this order: with equal preference (e.g. `*/*`) a client gets HTML, as from PyPI.
OFFERS = (
    "text/html",
    HTML_V1,
    JSON_V1,
    "application/vnd.pypi.simple.latest+html",
    "application/vnd.pypi.simple.latest+json",
)
ANSWERED_AS = {"application/vnd.pypi.simple.latest+html": HTML_V1, "application/vnd.pypi.simple.latest+json": JSON_V1}
# What the proxy asks its upstream for: JSON preferred (it carries PEP 700 fields), HTML accepted.
UPSTREAM_ACCEPT = f"{JSON_V1}, {HTML_V1};q=0.2, text/html;q=0.01"
HTML_TYPES = (HTML_V1, "text/html")  # what a page that is not PEP 691 JSON may be sent as
STATUS_API_VERSION = "1.4"  # PEP 792 project-status needs api-version 1.4
VERSIONS_API_VERSION = "1.1"  # PEP 700


class PageError(ValueError):
    """Upstream sent something that is not a simple-index page."""


def is_json(media: str) -> bool:
    return media.split(";")[0].strip().lower() == JSON_V1


def read_page(body: bytes, content_type: str, page_url: str) -> dict:
    """One project page, whichever shape upstream used; file URLs made absolute."""
    if is_json(content_type):
        return _read_json(body, page_url)
    _check_html(content_type, body)
    return _read_html(body.decode("utf-8", "replace"), page_url)


def read_names(body: bytes, content_type: str) -> list[str]:
    """The project names of an index root page (PEP 691 `projects`, or the HTML anchors' text)."""
    if is_json(content_type):
        try:
            return [p["name"] for p in json.loads(body)["projects"] if isinstance(p.get("name"), str)]
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise PageError(f"not a PEP 691 project list: {error}") from None
    _check_html(content_type, body)
    parser = _Anchors()
    parser.feed(body.decode("utf-8", "replace"))
    parser.close()
    return [text for _, text in parser.anchors if text]


def _check_html(content_type: str, body: bytes) -> None:
    """A page that is not PEP 691 JSON is HTML: anything else (a JSON page sent as text/plain or
    as text/html, an image) would read as a project without files, and be kept as one."""
    media = content_type.split(";")[0].strip().lower()
    if media not in HTML_TYPES:
        raise PageError(f"not a simple-index page: its content type is {_shown(media or 'none')}")
    if body.lstrip()[:1] in (b"{", b"["):
        raise PageError(f"not a simple-index page: JSON sent as {_shown(media)}")


def unreadable(read: Callable[[bytes, str], object], name: str | None = None) -> Callable[[bytes, str], str | None]:
    """What upstream's 200 is, if `read` cannot read it as a page (`pages.Readable`), or, read as
    a project's page, it names another project than `name`."""

    def wrong(body: bytes, content_type: str) -> str | None:
        try:
            page = read(body, content_type)
        except PageError as error:
            return str(error)
        named = page.get("name") if name is not None and isinstance(page, dict) else None
        if isinstance(named, str) and canonicalize_name(named) != name:
            return f"not the project page of {name!r}: it names {_shown(named)}"
        return None

    return wrong


def _read_json(body: bytes, page_url: str) -> dict:
    try:
        page = loads(body)  # json.loads's answers, through orjson where it reads the same
    except (ValueError, RecursionError) as error:
        raise PageError(f"not a PEP 691 project page: {error}") from None
    wrong = _misshapen(page)
    if wrong is not None:
        raise PageError(f"not a PEP 691 project page: {wrong}")
    for entry in page["files"]:
        entry["url"] = _absolute(page_url, entry["url"])
    return page


def _text(value) -> bool:
    return isinstance(value, str)


def _optional_text(value) -> bool:
    return value is None or _text(value)


def _texts(value) -> bool:
    return isinstance(value, list) and all(map(_text, value))


def _digests(value) -> bool:
    return isinstance(value, dict) and all(map(_text, value.values()))


def _core_metadata(value) -> bool:
    return isinstance(value, bool) or _digests(value)


def _optional_size(value) -> bool:
    return value is None or (isinstance(value, int) and not isinstance(value, bool) and value >= 0)


# The fields of a JSON page the index reads or writes again, and what the PEPs let them hold
# (691; 658 and 714: core metadata; 700: `versions`, `size`; 708: `tracks`, `alternate-locations`;
# 792: `project-status`). Any other field passes through as it is.
_PAGE = {
    "meta": lambda v: isinstance(v, dict),
    "versions": _texts,
    "alternate-locations": _texts,
    "project-status": lambda v: isinstance(v, dict) and _text(v.get("status")) and _optional_text(v.get("reason")),
}
_META = {"api-version": _text, "tracks": _texts}
_FILE = {
    "filename": _text,
    "url": _text,
    "hashes": _digests,
    "requires-python": _optional_text,
    "core-metadata": _core_metadata,
    "dist-info-metadata": _core_metadata,
    "size": _optional_size,  # a file fetched whole is read no further (interface.index.streaming)
}
_FILE_NEEDS = ("filename", "url")


def _misshapen(page) -> str | None:
    """Where a JSON page holds what the PEPs do not give it; None: nowhere."""
    if not isinstance(page, dict) or not isinstance(page.get("files"), list):
        return "it has no list of files"
    return (
        _unfit(page, _PAGE, "")
        or _unfit(page.get("meta", {}), _META, "meta.")
        or next((wrong for i, f in enumerate(page["files"]) if (wrong := _misshapen_file(f, f"files[{i}]"))), None)
    )


def _misshapen_file(entry, where: str) -> str | None:
    if not isinstance(entry, dict):
        return f"{where} cannot be {_shown(entry)}"
    missing = [k for k in _FILE_NEEDS if k not in entry]
    return f"{where} has no {missing[0]}" if missing else _unfit(entry, _FILE, f"{where}.")


def _unfit(found: dict, fields: dict, where: str) -> str | None:
    key = next((k for k, fits in fields.items() if k in found and not fits(found[k])), None)
    return None if key is None else f"{where}{key} cannot be {_shown(found[key])}"


def _shown(value) -> str:
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _absolute(base: str, url: str) -> str:
    found = resolved(url, base)
    if found is None:
        raise PageError(f"not a simple-index page: it links {_shown(url)}, which is no URL")
    return found


def _read_html(text: str, page_url: str) -> dict:
    parser = _Anchors()
    parser.feed(text)
    parser.close()
    base = _absolute(page_url, parser.base) if parser.base else page_url
    meta = {"api-version": parser.meta.get("repository-version", ["1.0"])[0]}
    page: dict = {"meta": meta, "name": None, "files": [_html_file(a, base) for a in parser.anchors]}
    status = parser.meta.get("project-status")
    if status:
        page["project-status"] = {"status": status[0]}
        if parser.meta.get("project-status-reason"):
            page["project-status"]["reason"] = parser.meta["project-status-reason"][0]
    for key in ("tracks", "alternate-locations"):  # PEP 708
        if key in parser.meta:
            (meta if key == "tracks" else page)[key] = parser.meta[key]
    return page


def _html_file(anchor: tuple[dict, str], base: str) -> dict:
    attrs, text = anchor
    url, fragment = urldefrag(_absolute(base, attrs["href"]))
    algorithm, _, digest = fragment.partition("=")
    entry: dict = {
        "filename": text or url.rsplit("/", 1)[-1],
        "url": url,
        "hashes": {algorithm: digest} if digest else {},
    }
    if attrs.get("data-requires-python") is not None:
        entry["requires-python"] = attrs["data-requires-python"]
    if "data-yanked" in attrs:
        entry["yanked"] = attrs["data-yanked"] or True
    metadata = attrs.get("data-core-metadata", attrs.get("data-dist-info-metadata"))
    if metadata is not None:
        entry["core-metadata"] = _metadata_value(metadata)
    if attrs.get("data-gpg-sig") is not None:
        entry["gpg-sig"] = attrs["data-gpg-sig"] == "true"
    return entry


def _metadata_value(text: str):
    algorithm, _, digest = text.partition("=")
    return {algorithm: digest} if digest else text.strip().lower() == "true"


class _Anchors(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.anchors: list[tuple[dict, str]] = []
        self.meta: dict[str, list[str]] = {}
        self.base: str | None = None
        self._open: dict | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag, attrs):
        found = {k.lower(): (v if v is not None else "") for k, v in attrs}
        if tag == "a" and "href" in found:
            self._open, self._text = found, []
        elif tag == "meta" and found.get("name", "").startswith("pypi:") and "content" in found:
            self.meta.setdefault(found["name"][5:], []).append(found["content"])
        elif tag == "base" and "href" in found and self.base is None:
            self.base = found["href"]

    def handle_data(self, data):
        if self._open is not None:
            self._text.append(data)

    def handle_endtag(self, tag):
        if tag == "a" and self._open is not None:
            self.anchors.append((self._open, "".join(self._text).strip()))
            self._open = None


# -- writing ----------------------------------------------------------------------------------
def finish(page: dict, name: str) -> dict:
    """What every answered page carries: the normalized name, and `versions` (PEP 700)."""
    page["name"] = name
    if "versions" not in page:
        found = {file_version(entry, name) for entry in page["files"]}
        page["versions"] = ordered_versions(found - {None})
    return page


def file_version(entry: dict, project: str) -> str | None:
    return version_of(entry.get("filename", ""), project)


def versions_offered(versions: list[str], files: list[dict], project: str) -> list[str]:
    """Of a page's PEP 700 `versions`, those a file of `files` is of (as its name says; compared
    as installers compare versions, `1.0` is `1.0.0`)."""
    left = {_comparable(v) for f in files if (v := file_version(f, project)) is not None}
    return [v for v in versions if _comparable(v) in left]


def _comparable(text: str) -> Version | str:
    version = _version(text)
    return text if version is None else version


def ordered_versions(texts) -> list[str]:
    """Versions as installers order them, then the texts no version reads, each part by text.
    Sorted on the versions alone (a tuple key compared each pair of them twice, for equality
    then order: a fifth of a cold 2,000-version page), after the texts, so equal versions
    (`1.0`, `1.0.0`) stay in text order."""
    valid, other = [], []
    for text in sorted(texts):
        version = _version(text)
        (valid if version is not None else other).append((version, text))
    valid.sort(key=itemgetter(0))
    return [text for _, text in valid] + [text for _, text in other]


@lru_cache(maxsize=4096)  # a page read again (a new policy, a revision) has the same versions
def _version(text: str) -> Version | None:
    try:
        return Version(text)
    except InvalidVersion:
        return None


def quarantined(name: str, reason: str) -> dict:
    """PEP 792: a denied project is quarantined, with no file offered."""
    return {
        "meta": {"api-version": STATUS_API_VERSION},
        "name": name,
        "versions": [],
        "files": [],
        "project-status": {"status": "quarantined", "reason": reason},
    }


def api_version(page: dict) -> str:
    """The page's api-version, raised to what the fields it now carries require."""
    declared = str(page.get("meta", {}).get("api-version", "1.0"))
    needed = STATUS_API_VERSION if "project-status" in page else VERSIONS_API_VERSION
    return max(declared, needed, key=lambda v: tuple(int(p) for p in v.split(".") if p.isdecimal()))


def write(page: dict, media: str) -> bytes:
    """The page in the negotiated `media` (PEP 691 JSON, else PEP 503 HTML)."""
    return write_json(page) if is_json(media) else write_html(page)


def content_type(media: str) -> str:
    """The answer's Content-Type for the negotiated `media` (HTML says its charset)."""
    return media if is_json(media) else f"{media}; charset=utf-8"


def write_json(page: dict) -> bytes:
    page = dict(page, meta={**page.get("meta", {}), "api-version": api_version(page)})
    for entry in page["files"]:
        entry.pop("dist-info-metadata", None)  # PEP 714: pip fails on this JSON key
    return json.dumps(page, separators=(",", ":")).encode()


def write_html(page: dict) -> bytes:
    metas = [("repository-version", page.get("meta", {}).get("api-version", "1.0"))]
    status = page.get("project-status")
    if status:
        metas.append(("project-status", status["status"]))
        if status.get("reason"):
            metas.append(("project-status-reason", status["reason"]))
    metas += [("tracks", t) for t in page.get("meta", {}).get("tracks", [])]
    metas += [("alternate-locations", t) for t in page.get("alternate-locations", [])]
    head = "".join(f'<meta name="pypi:{k}" content="{escape(str(v))}">' for k, v in metas)
    name = escape(page["name"])
    links = "<br>\n".join(_html_link(entry) for entry in page["files"])
    return (
        f"<!DOCTYPE html>\n<html><head>{head}<title>Links for {name}</title></head>\n"
        f"<body><h1>Links for {name}</h1>\n{links}\n</body></html>\n"
    ).encode()


def _html_link(entry: dict) -> str:
    href = entry["url"]
    if entry.get("hashes"):
        href += "#" + _one_hash(entry["hashes"])
    attrs = [f'href="{escape(href)}"']
    if entry.get("requires-python"):
        attrs.append(f'data-requires-python="{escape(entry["requires-python"])}"')
    yanked = entry.get("yanked")
    if yanked:
        attrs.append(f'data-yanked="{escape(yanked) if isinstance(yanked, str) else ""}"')
    metadata = entry.get("core-metadata", entry.get("dist-info-metadata"))
    if metadata:
        value = "true" if metadata is True else escape(_one_hash(metadata))
        attrs += [f'data-core-metadata="{value}"', f'data-dist-info-metadata="{value}"']  # both in HTML (PEP 714)
    if entry.get("gpg-sig") is not None:
        attrs.append(f'data-gpg-sig="{"true" if entry["gpg-sig"] else "false"}"')
    return f"<a {' '.join(attrs)}>{escape(entry['filename'])}</a>"


def _one_hash(hashes: dict) -> str:
    """PEP 658's attribute holds one `<algorithm>=<digest>`: sha256 when there is one."""
    algorithm = "sha256" if "sha256" in hashes else next(iter(hashes))
    return f"{algorithm}={hashes[algorithm]}"
