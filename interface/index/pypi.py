"""The PyPI simple-index proxy: `/pypi/{ws}/simple/...` and the files it points at.

Every project page and every file is judged by the application (`Governance.judge_index`) and
the decision is durable before the client hears anything. An allowed project gets upstream's
page with its file URLs pointing here; a denied one gets PEP 792 `quarantined` with the reason
and no file. A file is judged again when it is fetched, so a page seen before a policy change,
a lockfile or a hand-written URL cannot fetch a denied project's file.
"""

from __future__ import annotations

import json
import re

from flask import Blueprint, Response, current_app, redirect, request, url_for
from werkzeug.datastructures import MIMEAccept
from werkzeug.http import parse_accept_header

from interface import metrics
from interface.index import core_metadata, simple
from interface.index.access import governance, reader, refuse_a_failed_run, within_limits
from interface.index.streaming import relay, spool
from interface.index.upstream import Upstream, bad_gateway
from interface.problems import HTTPProblem

blueprint = Blueprint("pypi_index", __name__)
READ = ["GET", "HEAD"]
# pip prompts for a password on a 401 (see interface.index.access): refuse missing tokens with 403.
UNAUTHENTICATED = 403
_SEPARATORS = re.compile(r"[-_.]+")


def canonical(name: str) -> str:
    return _SEPARATORS.sub("-", name).lower()


def upstream() -> Upstream:
    return current_app.extensions["pypi_upstream"]


def negotiated() -> str:
    """PEP 691 content negotiation; 406 when nothing offered is acceptable."""
    header = request.headers.get("Accept", "").strip()
    if not header:
        return "text/html"
    media = parse_accept_header(header, MIMEAccept).best_match(simple.OFFERS)
    if media is None:
        raise HTTPProblem(406, "Not Acceptable", f"this index answers {', '.join(simple.OFFERS)}")
    return simple.ANSWERED_AS.get(media, media)


def answer(page: dict, media: str) -> Response:
    body = simple.write_json(page) if simple.is_json(media) else simple.write_html(page)
    response = Response(body, content_type=media if simple.is_json(media) else f"{media}; charset=utf-8")
    response.headers["Vary"] = "Accept"
    response.headers["Cache-Control"] = "no-store"  # the answer depends on the policy now
    return response


@blueprint.route("/pypi/<ws>/simple/", methods=READ)
def root(ws):
    reader(ws, UNAUTHENTICATED)
    media = negotiated()
    names = governance().index_listing(ws, "python", _upstream_names)
    if simple.is_json(media):
        body = {"meta": {"api-version": simple.VERSIONS_API_VERSION}, "projects": [{"name": n} for n in names]}
        response = Response(json.dumps(body), content_type=media)
    else:
        links = "".join(f'<a href="{n}/">{n}</a><br>\n' for n in names)
        response = Response(f"<!DOCTYPE html>\n<html><body>\n{links}</body></html>\n", content_type="text/html")
    response.headers.update({"Vary": "Accept", "Cache-Control": "no-store"})
    return response


def _upstream_names() -> list[str]:
    # Upstream's whole project list is large (PyPI's is tens of MiB): a recent copy will do.
    found = upstream().cached(upstream().base, simple.UPSTREAM_ACCEPT)
    page = found or upstream().page(upstream().base, simple.UPSTREAM_ACCEPT)
    if page.status != 200:
        raise bad_gateway(f"the upstream index answered {page.status} for its project list")
    return [canonical(n) for n in simple.read_names(page.body, page.content_type)]


@blueprint.route("/pypi/<ws>/simple/<project>", methods=READ)
def unslashed(ws, project):
    reader(ws, UNAUTHENTICATED)
    within_limits(project=project)
    return redirect(url_for(".project_page", ws=ws, project=canonical(project)), 301)


@blueprint.route("/pypi/<ws>/simple/<project>/", methods=READ)
def project_page(ws, project):
    principal = reader(ws, UNAUTHENTICATED)
    within_limits(project=project)
    media = negotiated()
    name = canonical(project)
    if project != name:  # PEP 503: one URL per project
        return redirect(url_for(".project_page", ws=ws, project=name), 301)
    verdict = governance().judge_index(principal, "python", name, "page")
    metrics.count_index(verdict, "python", "page")
    refuse_a_failed_run(verdict)
    if not verdict["allowed"]:
        return answer(simple.quarantined(name, verdict["message"]), media)
    return answer(_allowed_page(ws, name), media)


def _allowed_page(ws: str, name: str) -> dict:
    page = _upstream_page(name)
    files = []
    for entry in page["files"]:
        if upstream().allows_host(entry["url"]):  # checked again, with addresses, on download
            files.append(
                {**entry, "url": url_for(".file", ws=ws, project=name, filename=entry["filename"], _external=True)}
            )
    return simple.finish({**page, "files": files}, name)


def _upstream_page(name: str, cached: bool = False) -> dict:
    url = upstream().url(f"{name}/")
    found = upstream().cached(url, simple.UPSTREAM_ACCEPT) if cached else None
    found = found or upstream().page(url, simple.UPSTREAM_ACCEPT)
    if found.status == 404:
        raise HTTPProblem(404, "Not Found", f"the upstream index has no project {name!r}")
    if found.status != 200:
        raise bad_gateway(f"the upstream index answered {found.status} for {name!r}")
    try:
        return simple.read_page(found.body, found.content_type, found.url)
    except simple.PageError as error:
        raise bad_gateway(str(error)) from None


@blueprint.route("/pypi/<ws>/files/<project>/<filename>", methods=READ)
def file(ws, project, filename):
    principal = reader(ws, UNAUTHENTICATED)
    within_limits(project=project, filename=filename)
    if project != canonical(project):
        raise HTTPProblem(404, "Not Found", "file URLs name the project in its normalized form")
    is_metadata = filename.endswith(".metadata")
    dist = filename.removesuffix(".metadata")
    request_kind = "metadata" if is_metadata else "download"
    verdict = governance().judge_index(principal, "python", project, request_kind, dist, simple.version_of(dist))
    metrics.count_index(verdict, "python", request_kind)
    refuse_a_failed_run(verdict)
    if not verdict["allowed"]:
        raise HTTPProblem(403, "Forbidden", verdict["message"])
    entry = next((f for f in _upstream_page(project, cached=True)["files"] if f.get("filename") == dist), None)
    if entry is None or (is_metadata and not entry.get("core-metadata", entry.get("dist-info-metadata"))):
        raise HTTPProblem(404, "Not Found", f"the upstream index lists no {filename!r} for {project!r}")
    if is_metadata:
        metadata = core_metadata.fetch(upstream(), entry["url"] + ".metadata")
        _judge_declared(principal, project, dist, metadata, "metadata")
        return _served(metadata)
    if dist.endswith(".whl") and request.method != "HEAD":
        spooled = spool(upstream(), entry["url"], core_metadata.MAX_WHEEL_BYTES, core_metadata.too_large)
        try:
            _judge_declared(principal, project, dist, core_metadata.wheel_metadata(spooled.file, dist), "download")
        except BaseException:
            spooled.file.close()
            raise
        return spooled.response()
    return relay(upstream(), request.method, entry["url"])


def _judge_declared(principal, project: str, dist: str, metadata: bytes, request_kind: str) -> None:
    """403 when the version declares a refused `name @ URL` (or other non-registry) requirement."""
    version = simple.version_of(dist) or dist
    declarations = {version: core_metadata.requires_dist(metadata)}
    hidden = governance().index_hidden_versions(principal, "python", project, declarations, request_kind, dist)
    if hidden:
        raise HTTPProblem(403, "Forbidden", hidden[version])


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
