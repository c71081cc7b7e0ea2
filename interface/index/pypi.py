"""The PyPI simple-index proxy: `/pypi/{ws}/simple/...` and the files it points at.

Every project page and every file is judged by the application (`PackageIndex.gate.judge`) and
the decision is durable before the client hears anything. An allowed project gets upstream's
page with its file URLs pointing here; a denied one gets PEP 792 `quarantined` with the reason
and no file. A file is judged again when it is fetched, so a page seen before a policy change,
a lockfile or a hand-written URL cannot fetch a denied project's file.

Upstream pages come through `interface.index.pages` (kept on disk, revalidated, stale when
upstream fails) and files through `interface.index.files` (kept by content, verified): both only
after the request was judged, so a denied name never causes an upstream fetch.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import nullcontext
from typing import NamedTuple
from urllib.parse import quote

from flask import Blueprint, Response, current_app, has_request_context, redirect, request, url_for
from packaging.utils import canonicalize_name
from werkzeug.datastructures import MIMEAccept
from werkzeug.http import parse_accept_header

from application.cache import from_pypi
from application.index import facts
from application.index.gate import registry_spec
from domain.declared import Requires, merged
from domain.python_files import names_project, version_of
from interface import metrics
from interface.index import core_metadata, declarations, files, simple
from interface.index.access import (
    judged_afresh,
    package_index,
    reader,
    record_upstream_failure,
    refuse_a_failed_run,
    upstream_failure_recorded,
    upstream_failure_recorder,
    within_limits,
)
from interface.index.answers import Rendered, judged
from interface.index.delivery import file_request, judged_file, undelivered_on_error
from interface.index.pages import Fetched, Pages
from interface.index.streaming import relay, spool
from interface.index.upstream import Upstream, bad_gateway, logged, refused_by_upstream
from interface.problems import HTTPProblem

blueprint = Blueprint("pypi_index", __name__)
READ = ["GET", "HEAD"]
# pip prompts for a password on a 401 (see interface.index.access): refuse missing tokens with 403.
UNAUTHENTICATED = 403
# environ: what judging a project page in front of Flask raised (interface.index.page_path), for
# Flask to answer as it answers the same refusal raised here.
RAISED = "runcode_policy.index_page_raised"


def upstream() -> Upstream:
    return current_app.extensions["pypi_upstream"]


def pages() -> Pages:
    return current_app.extensions["pypi_pages"]


def negotiated(accept: str | None = None) -> str:
    """PEP 691 content negotiation of an `Accept` header (default: this request's); 406 when
    nothing offered is acceptable."""
    header = (request.headers.get("Accept", "") if accept is None else accept).strip()
    if not header:
        return "text/html"
    media = parse_accept_header(header, MIMEAccept).best_match(simple.OFFERS)
    if media is None:
        raise HTTPProblem(406, "Not Acceptable", f"this index answers {', '.join(simple.OFFERS)}")
    return simple.ANSWERED_AS.get(media, media)


def answer(page: dict, media: str, policy_version, environ: dict | None = None) -> Response:
    return judged(simple.write(page, media), simple.content_type(media), policy_version, environ)


@blueprint.route("/pypi/<ws>/simple/", methods=READ)
def root(ws):
    reader(ws, UNAUTHENTICATED)
    media = negotiated()
    listing = package_index().gate.listing(ws, "python", _UpstreamNames())
    if simple.is_json(media):
        body = {"meta": {"api-version": simple.VERSIONS_API_VERSION}, "projects": [{"name": n} for n in listing.names]}
        return judged(json.dumps(body), media, listing.tag)
    links = "".join(f'<a href="{n}/">{n}</a><br>\n' for n in listing.names)
    return judged(f"<!DOCTYPE html>\n<html><body>\n{links}</body></html>\n", "text/html", listing.tag)


class _UpstreamNames:
    """Upstream's whole project list (PyPI's is tens of MiB), kept like any page; read only when
    its revision has no judged listing yet."""

    def __init__(self):
        self._page: Fetched | None = None

    def revision(self) -> str:
        self._page = pages().get(upstream().base, simple.UPSTREAM_ACCEPT, simple.unreadable(simple.read_names))
        if self._page.status != 200:
            raise refused_by_upstream(self._page.status, "its project list")
        return self._page.revision

    def names(self) -> list[str]:
        page = self._page
        try:
            return [canonicalize_name(n) for n in simple.read_names(page.body, page.content_type)]
        except simple.PageError as error:
            raise bad_gateway(str(error)) from None


@blueprint.route("/pypi/<ws>/simple/<project>", methods=READ)
def unslashed(ws, project):
    reader(ws, UNAUTHENTICATED)
    within_limits(project=project)
    return redirect(url_for(".project_page", ws=ws, project=_canonical(project)), 301)


def _canonical(project: str) -> str:
    """PEP 503's one spelling of a project; 404 at once when that names no project (`alpha.`
    would be sent on to `alpha-`, a redirect to a 404)."""
    name = canonicalize_name(project)
    registry_spec("python", name)
    return name


@blueprint.route("/pypi/<ws>/simple/<project>/", methods=READ)
@judged_afresh
def project_page(ws, project):
    raised = request.environ.pop(RAISED, None)
    if raised is not None:  # judged in front of Flask, after the same steps as below
        raise raised
    principal = reader(ws, UNAUTHENTICATED)
    within_limits(project=project)
    media = negotiated()
    name = canonicalize_name(project)
    if project != name:  # PEP 503: one URL per project
        return redirect(url_for(".project_page", ws=ws, project=_canonical(project)), 301)
    return judged_page(principal, ws, name, media, request.environ, request.url_root)


def judged_page(principal, ws: str, name: str, media: str, environ: dict, url_root: str) -> Response:
    """A project page for a reader admitted to it: judged (and recorded), then answered from the
    rendered copy of the kept page. Needs the app's context, not the request's (the lean path in
    front of Flask calls it too: interface.index.page_path)."""
    verdict = package_index().gate.judge(principal, "python", name, "page")
    metrics.count_index(verdict, "python", "page")
    refuse_a_failed_run(verdict)
    if not verdict["allowed"]:
        return answer(simple.quarantined(name, verdict["message"]), media, verdict["policy_version"], environ)
    try:
        checked: dict = {}
        fetched = _fetched(name, checked)
        page = _PageOnce(name, fetched, checked)
        hidden = _hidden(principal, name, fetched, page) | _declared_hidden(principal, name, fetched, page)
        refused = _refused_file_host(name, fetched, page)
        if refused is not None:  # the page offers none of those files: the gate says why
            package_index().gate.upstream_failed(principal, "python", name, "page", refused)
        key = (ws, name, media, verdict["policy_version"], fetched.revision, url_root, hidden)

        def render() -> bytes:  # only when this answer was not rendered before (the page read then)
            return _render(ws, name, page, media, hidden, environ)

        return rendered().answer(key, verdict["policy_version"], simple.content_type(media), render, environ)
    except HTTPProblem as error:
        if error.status == 404:  # a name the upstream lacks: recorded, answered 404
            package_index().gate.not_found(principal, "python", name, "page")
        record_upstream_failure(principal, "python", name, "page", error)
        raise


class _PageOnce:
    """The page one request fetched, read (parsed, its links resolved) when first needed and
    then shared: judging its versions, finding a refused file host and rendering it each read it
    whole, and a page fetched just now had been read once more to check it (four readings of a
    cold page, 2,000 links each: most of its CPU). `checked`: what that check read, by body."""

    __slots__ = ("name", "fetched", "checked", "_page")

    def __init__(self, name: str, fetched: Fetched, checked: dict):
        self.name, self.fetched, self.checked = name, fetched, checked
        self._page: dict | None = None

    def __call__(self) -> dict:
        if self._page is None:
            body, read = self.checked.get("body"), self.checked.get("page")
            found = self.fetched
            if (
                found.status == 200
                and body is not None
                and found.fetched is body
                and self.checked["at"] == (found.url, found.content_type)
            ):
                self._page = read
            else:
                self._page = _read(self.name, found)
        return self._page


def _hidden(principal, name: str, fetched: Fetched, page: _PageOnce) -> frozenset[str]:
    """The files on the page whose version is hidden (known malware, a rule beyond names: see
    application.index.versions; recorded). The page is read for its files' facts only when
    something may hide a version of this project."""
    if fetched.status == 404:
        _read(name, fetched)  # the 404 for a name the upstream lacks
    if not package_index().gate.judges_versions(principal, "python", name):
        return frozenset()

    def judged() -> dict:  # read only when this revision of the page was not judged before
        files = page()["files"]  # a file whose name says no version: its version None
        return {entry["filename"]: facts.python_file(entry, simple.file_version(entry, name)) for entry in files}

    hidden = package_index().gate.versions_hidden(principal, "python", name, judged, "page", fetched.revision)
    return frozenset(hidden)


def _refused_file_host(name: str, fetched: Fetched, page: _PageOnce) -> str | None:
    """Why the page leaves files out, when upstream keeps some on a host the egress rules refuse
    (the first one's), read once per revision of the page."""
    if fetched.status != 200:
        return None

    def first() -> tuple:
        refused_host = upstream().refused_host  # once: the app's proxy costs a lookup each time
        return (next(filter(None, (refused_host(entry["url"]) for entry in page()["files"])), None),)

    return declarations.remembered(("refused-host", name, fetched.revision), first)[0]


def _declared_hidden(principal, name: str, fetched: Fetched, page: _PageOnce) -> frozenset[str]:
    """The files of the versions that what their files were read to declare hides
    (interface.index.declarations; recorded as a page's, once per run). Nothing to read for a
    project none of whose files declared anything beyond the registry."""
    if fetched.status != 200:
        return frozenset()
    known = declarations.of_page(name, fetched.revision, lambda: page()["files"])
    if not known:
        return frozenset()
    said = {version: requires for version, (requires, _) in known.items()}
    hidden = package_index().gate.hidden_versions(principal, "python", name, said, "page")
    return frozenset(filename for version in hidden for filename in known[version][1])


def rendered() -> Rendered:
    return current_app.extensions["pypi_rendered"]  # made by interface.index.install


def _render(ws: str, name: str, page: _PageOnce, media: str, hidden: frozenset[str], environ: dict) -> bytes:
    # The file URLs are the app's (url_for): outside Flask's dispatch, in the request's context.
    with nullcontext() if has_request_context() else current_app.request_context(environ):
        allowed = _allowed_page(ws, name, page(), hidden)
    return simple.write(allowed, media)


def _allowed_page(ws: str, name: str, page: dict, hidden: frozenset[str] = frozenset()) -> dict:
    """Upstream's page with its file URLs pointing here, without the files it does not offer: the
    `hidden` ones, those whose name names another project (`names_project`), those on a host
    the egress rules refuse (none of them is served, however it is asked for); a page that
    leaves any out lists in `versions` only the versions of the files left."""
    file_url, allows_host = file_urls(ws, name), upstream().allows_host  # once a page, not once a file
    files = [
        {**entry, "url": file_url(entry["filename"])}
        for entry in page["files"]
        if entry["filename"] not in hidden
        and names_project(entry["filename"], name)
        and allows_host(entry["url"])  # checked again, with addresses, on download
    ]
    if len(files) < len(page["files"]) and "versions" in page:
        page = {**page, "versions": simple.versions_offered(page["versions"], files, name)}
    return simple.finish({**page, "files": files}, name)


# How the route's converter writes a value into the URL (werkzeug's `BaseConverter.to_url`).
_SEGMENT_SAFE = "!$&'()*+,/:;=@"


def file_urls(ws: str, name: str) -> Callable[[str], str]:
    """`url_for(".file", ws=ws, project=name, filename=f, _external=True)` for each file `f` of
    one page: built once, the file's name then written in as the route writes it (url_for was a
    quarter of a cold page's CPU, ~10 µs a file)."""
    built = url_for(".file", ws=ws, project=name, filename="f", _external=True)
    prefix = built[:-1]
    return lambda filename: prefix + quote(str(filename), safe=_SEGMENT_SAFE)


def _fetched(name: str, checked: dict | None = None) -> Fetched:
    """The project's page; `checked` gets what checking a page fetched just now read (`_PageOnce`)."""
    url = upstream().url(f"{name}/")

    def read(body: bytes, media: str) -> dict:
        page = simple.read_page(body, media, url)
        if checked is not None:
            checked.update(body=body, page=page, at=(url, media))
        return page

    return pages().get(url, simple.UPSTREAM_ACCEPT, simple.unreadable(read, name))


def _read(name: str, found: Fetched) -> dict:
    if found.status == 404:
        raise HTTPProblem(404, "Not Found", f"the upstream index has no project {name!r}")
    if found.status != 200:
        raise refused_by_upstream(found.status, repr(name))
    try:
        return simple.read_page(found.body, found.content_type, found.url)
    except simple.PageError as error:
        raise logged(bad_gateway(str(error))) from None


def _page_files(project: str) -> list[dict]:
    """The page's file entries, from the page as a page view reads it (kept while fresh, then
    revalidated; kept if upstream fails), never an older copy: a file upstream replaced has a new
    digest there, so its new bytes are fetched and read, not the ones kept under the old digest
    (a wheel that could not be read stayed refused, its file name still giving the old digest)."""
    return _read(project, _fetched(project))["files"]


def _entry(files: list[dict], dist: str) -> dict | None:
    return next((f for f in files if f.get("filename") == dist), None)


@blueprint.route("/pypi/<ws>/files/<project>/<filename>", methods=READ)
@judged_afresh
def file(ws, project, filename):
    principal = reader(ws, UNAUTHENTICATED)
    within_limits(project=project, filename=filename)
    if project != canonicalize_name(project):
        raise HTTPProblem(404, "Not Found", "file URLs name the project in its normalized form")
    is_metadata = filename.endswith(".metadata")
    dist = filename.removesuffix(".metadata")
    request_kind = file_request(is_metadata)
    version, found = version_of(dist, project), {}

    def judged_facts():  # read only for an allowed project; its page is then used to answer
        found["files"] = _page_files(project)
        entry = _entry(found["files"], dist)
        if entry is None:  # nothing to judge, so nothing is recorded (as npm's tarballs)
            raise _no_such_file(project, filename)
        return facts.python_file(entry, version)

    delivered = judged_file(principal, "python", project, request_kind, dist, version, judged_facts)
    with upstream_failure_recorded(principal, "python", project, request_kind), undelivered_on_error(delivered):
        page_files = found["files"] if "files" in found else _page_files(project)
        return _file_answer(principal, project, dist, filename, is_metadata, delivered, page_files)


class _File(NamedTuple):
    """A file asked for: its project, its name (`dist`, less `.metadata`), and its page's entries."""

    project: str
    dist: str
    files: list[dict]


def _file_answer(
    principal, project: str, dist: str, filename: str, is_metadata: bool, delivered, page_files
) -> Response:
    entry = _entry(page_files, dist)
    metadata_hashes = entry.get("core-metadata", entry.get("dist-info-metadata")) if entry else None
    if entry is None or (is_metadata and not metadata_hashes):
        raise _no_such_file(project, filename)
    asked = _File(project, dist, page_files)
    if is_metadata:
        return _metadata(principal, asked, entry["url"] + declarations.METADATA_SUFFIX, from_pypi(metadata_hashes))
    return _distribution(principal, asked, entry, delivered)


def _no_such_file(project: str, filename: str) -> HTTPProblem:
    return HTTPProblem(404, "Not Found", f"the upstream index lists no {filename!r} for {project!r}")


def _metadata(principal, asked: _File, url: str, digests) -> Response:
    name = asked.dist + declarations.METADATA_SUFFIX
    if digests is None:  # nothing to verify it against: fetched each time, never kept
        metadata = core_metadata.fetch(upstream(), url)
        _judge_declared(principal, asked, "metadata", declarations.Read(name, None, _requires(metadata)))
        return _served(metadata)
    verified = files.obtain(upstream(), cache(), url, digests, limit=core_metadata.MAX_METADATA_BYTES)
    try:
        read = declarations.Read(name, digests, _requires(verified.file.read()))
        _judge_declared(principal, asked, "metadata", read)
    except BaseException:
        verified.close()
        raise
    return files.serve(verified)


def _distribution(principal, asked: _File, entry: dict, delivered) -> Response:
    url, digests, stated = entry["url"], from_pypi(entry.get("hashes")), entry.get("size")
    if digests is None:  # nothing to verify it against: relayed as upstream sends it, never kept
        return _unverified(principal, asked, url, stated, delivered)
    if request.method == "HEAD":
        return files.head(upstream(), cache(), url, digests)
    refuse = core_metadata.too_large if asked.dist.endswith(".whl") else None
    verified = files.obtain(upstream(), cache(), url, digests, stated, refuse=refuse)
    try:
        _judge_declared(principal, asked, "download", _read_file(verified.file, asked.dist, digests))
    except BaseException:
        verified.close()
        raise
    return files.serve(verified, delivered)


def _unverified(principal, asked: _File, url: str, stated, delivered) -> Response:
    if asked.dist.endswith(".whl") and request.method != "HEAD":
        spooled = spool(upstream(), url, core_metadata.too_large, stated)
        try:
            _judge_declared(principal, asked, "download", _read_file(spooled.file, asked.dist, None))
        except BaseException:
            spooled.file.close()
            raise
        return spooled.response(delivered)
    if request.method != "HEAD":  # an sdist relayed unread: judged by what its version's other files said
        _judge_declared(principal, asked, "download", None)
    # only a GET's body breaks off
    broken_off = upstream_failure_recorder(principal, "python", asked.project, "download")
    return relay(upstream(), request.method, url, delivered, broken_off)


def _requires(metadata: bytes) -> Requires:
    return Requires(core_metadata.requires_dist(metadata))


def _read_file(file, dist: str, digests) -> declarations.Read:
    """What a wheel or an sdist was read to declare."""
    if dist.endswith(".whl"):
        wheel = core_metadata.wheel_metadata(file, dist)
        requires = Requires(core_metadata.requires_dist(wheel.metadata), wheel.carried, wheel.unjudged)
        return declarations.Read(dist, digests, requires)
    return declarations.Read(dist, digests, declarations.sdist_requires(file, dist, digests))


def cache():
    return current_app.extensions["index_cache"]


def _judge_declared(principal, asked: _File, request_kind: str, read: declarations.Read | None) -> None:
    """403 when the version declares a refused `name @ URL` (or other non-registry) requirement,
    or a wheel of it carries a refused project or adds to sys.path what cannot be judged: by what
    this file was read to say (`read`, kept for the version's other files) and by what every file
    of its version was (interface.index.declarations)."""
    project, dist = asked.project, asked.dist
    named = version_of(dist, project)
    if read is not None:
        declarations.record(project, read)
    others = declarations.of_version(project, named, dist, asked.files)
    said = {named or dist: merged(read.requires, others) if read is not None else others}
    hidden = package_index().gate.hidden_versions(principal, "python", project, said, request_kind, dist)
    if hidden:
        raise HTTPProblem(403, "Forbidden", hidden[named or dist])


def _served(metadata: bytes) -> Response:
    response = Response(metadata, content_type="application/octet-stream")
    response.headers["Cache-Control"] = "no-store"  # judged per fetch
    return response


@blueprint.route("/pypi/<ws>/", methods=READ)
@blueprint.route("/pypi/<ws>/<path:rest>", methods=READ)
def elsewhere(ws, rest=""):
    # Declared so that uploads (POST) and other writes anywhere under /pypi/ are 405, not 404.
    reader(ws, UNAUTHENTICATED)
    raise HTTPProblem(404, "Not Found", "the index lives at /pypi/{ws}/simple/")
