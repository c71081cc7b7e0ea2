"""The npm registry proxy: `/npm/{ws}/{name}` (packuments), `/npm/{ws}/{name}/-/{file}` (tarballs).

WSGI decodes `%2f` before routing, so `@scope%2fname` and `@scope/name` both arrive as
`@scope/name`: one catch-all route splits the path itself (a scoped name is two segments).
Tarball URLs keep the registry's own layout (`{name}/-/{file}`), so npm's rewriting of a lockfile's
`resolved` URLs to the configured registry lands here too. Only GET and HEAD exist: publishing
and every other write is 405.

Packuments come through `interface.index.pages` and tarballs through `interface.index.files`,
only once the request was judged: a denied name never causes an upstream fetch (its refusal
lists the version numbers of a packument kept before, if any).
"""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from urllib.parse import quote

from flask import Blueprint, Response, current_app, request

from application.cache import from_npm
from application.index import facts
from application.lru import SizedLru
from domain.declared import IN_TARBALL
from domain.errors import GovernanceError
from interface import metrics
from interface.index import files, packument
from interface.index.access import (
    judged_afresh,
    package_index,
    reader,
    record_upstream_failure,
    refuse_a_failed_run,
    upstream_failure_recorded,
    within_limits,
)
from interface.index.answers import judged
from interface.index.delivery import file_request, judged_file, undelivered_on_error
from interface.index.pages import Fetched, Pages
from interface.index.streaming import relay
from interface.index.upstream import Upstream, UpstreamProblem, bad_gateway, logged, refused_by_upstream
from interface.index.url_parts import last_segment
from interface.problems import HTTPProblem, problem, status_of

blueprint = Blueprint("npm_index", __name__)
log = logging.getLogger(__name__)
UNAUTHENTICATED = 401  # npm and pnpm never prompt on it (see interface.index.access)
FULL = "application/json"


@blueprint.errorhandler(GovernanceError)
def _refused(error: GovernanceError):
    return _refusal(error)


def _refusal(error: GovernanceError, **fields):
    # npm prints a JSON body's `error` after the status line: say there why it was refused.
    answer = problem(status_of(error), error.title, error.detail, error.errors, getattr(error, "headers", None))
    body = json.loads(answer.get_data())
    answer.set_data(json.dumps({**body, "error": error.detail, **fields}))
    return answer


def upstream() -> Upstream:
    return current_app.extensions["npm_upstream"]


def pages() -> Pages:
    return current_app.extensions["npm_pages"]


@blueprint.route("/npm/<ws>/", methods=["GET", "HEAD"])
@blueprint.route("/npm/<ws>/<path:rest>", methods=["GET", "HEAD"])
@judged_afresh
def package(ws, rest=""):
    principal = reader(ws, UNAUTHENTICATED)
    within_limits(name=rest)
    if rest == "-/npm/v1/keys":  # registry signing keys: passed through for `npm audit signatures`
        return relay(upstream(), request.method, upstream().url("-/npm/v1/keys"))
    if rest == "-/ping":
        return {}
    name, remainder = split_name(rest)
    if name is None or rest.startswith("-/"):
        raise HTTPProblem(404, "Not Found", f"no registry resource {rest!r}")
    if not remainder:
        return packument_answer(principal, ws, name)
    if len(remainder) == 2 and remainder[0] == "-":
        return tarball(principal, name, remainder[1])
    raise HTTPProblem(404, "Not Found", "this registry serves packuments and tarballs only")


def split_name(rest: str) -> tuple[str | None, list[str]]:
    parts = rest.split("/")
    count = 2 if parts[0].startswith("@") else 1
    if len(parts) < count or not all(parts[:count]):
        return None, []
    return "/".join(parts[:count]), parts[count:]


def wanted_media() -> str:
    accept = request.headers.get("Accept", "")
    return packument.ABBREVIATED if packument.ABBREVIATED in accept else FULL


def packument_answer(principal, ws: str, name: str) -> Response:
    verdict = package_index().gate.judge(principal, "node", name, "page")
    metrics.count_index(verdict, "node", "page")
    refuse_a_failed_run(verdict)
    media = wanted_media()
    if not verdict["allowed"]:
        return _restricted(name, verdict["message"], media, verdict["policy_version"])
    try:
        page = pages().get(packument_url(name), ACCEPTS[media], _readable(name))
        document = _document(name, page)
    except HTTPProblem as error:
        if error.status == 404:  # a name the upstream lacks: recorded, answered 404
            package_index().gate.not_found(principal, "node", name, "page")
        record_upstream_failure(principal, "node", name, "page", error)
        raise
    base = f"{request.url_root}npm/{ws}/{name}/-/"

    refused = []  # why a version's tarball is left out: its host refused (the first one's)

    refused_host = upstream().refused_host  # once: the app's proxy costs a lookup each time

    def ours(url: str) -> str | None:
        why = refused_host(url)
        if why is not None:
            refused.append(why)
            return None
        return base + quote(last_segment(url))  # the tarball's file name

    manifests = packument.manifests(document)
    hidden = {}
    if package_index().gate.judges_versions(principal, "node", name):
        hidden = _versions_hidden(principal, name, page if media == FULL else _full_page(name), manifests, page)
    declared = {v: m for v, m in manifests.items() if v not in hidden}
    hidden.update(package_index().gate.hidden_versions(principal, "node", name, declared, "page"))
    answered = _json(packument.rewrite(document, ours, hidden), media, verdict["policy_version"])
    if refused:  # the packument offers none of those versions: the gate says why
        package_index().gate.upstream_failed(principal, "node", name, "page", refused[0])
    return answered


def _restricted(name: str, message: str, media: str, policy_version) -> Response:
    """npm's E403 for a denied package. Upstream is never asked: with a packument kept from
    before, its version numbers are restricted (npm: "Could not download beta@^1.0.0 due to
    policy violations"); without one, a 403 whose `error` npm prints, its body carrying the
    restriction too (no version numbers: an empty list of them would read as "no such version")."""
    notice = {"npm-notice": packument.notice(message)}
    document = kept_packument(name)
    if document is None:
        refused = HTTPProblem(403, "Forbidden", message, headers=notice)
        return _refusal(refused, policyRestrictions={"message": message, "versions": {}})
    response = _json(packument.restricted(document, name, message), media, policy_version)
    response.headers.update(notice)
    return response


ACCEPTS = {packument.ABBREVIATED: packument.ABBREVIATED + ", application/json;q=0.8", FULL: FULL}


def packument_url(name: str) -> str:
    return upstream().url(name.replace("/", "%2f"))


def fetch_packument(name: str, media: str) -> dict:
    """Upstream's packument in the shape asked for (kept, revalidated, or stale if upstream fails)."""
    return _document(name, pages().get(packument_url(name), ACCEPTS[media], _readable(name)))


def kept_packument(name: str) -> dict | None:
    """A packument kept from before, in either shape, however old; upstream is not asked."""
    found = pages().kept(packument_url(name), *ACCEPTS.values())
    try:
        return _document(name, found) if found is not None else None
    except HTTPProblem:
        return None


def _versions_hidden(principal, name: str, full: Fetched | None, manifests: dict, page: Fetched) -> dict[str, str]:
    """The versions an advisory or a rule beyond names hides, judged once per revision of the
    packument and of the full one (for its `time`)."""

    def judged() -> dict:
        times = _times(name, full)
        return {v: facts.npm_version(v, m, times) for v, m in manifests.items()}

    revision = f"{page.revision}/{full.revision if full is not None else '-'}"
    return package_index().gate.versions_hidden(principal, "node", name, judged, "page", revision)


def upload_times(name: str) -> dict | None:
    """The packument's `time` ({version: ISO instant}), which only the full packument has (kept
    and revalidated like any page). Read for every download too, rules or not, so that its
    decision records when the version was uploaded and a rule drafted later can be replayed on
    it. None when not known: a release-age rule then counts every version as too new."""
    return _times(name, _full_page(name))


def _full_page(name: str) -> Fetched | None:
    try:
        page = pages().get(packument_url(name), ACCEPTS[FULL], _readable(name))
    except HTTPProblem as error:
        log.warning("no upload times for %s: %s", name, error.detail)
        return None
    return page if page.status == 200 else None


def _times(name: str, full: Fetched | None) -> dict | None:
    try:
        return _document(name, full).get("time") if full is not None else None
    except HTTPProblem as error:
        log.warning("no upload times for %s: %s", name, error.detail)
        return None


def _document(name: str, page) -> dict:
    if page.status == 404:
        raise HTTPProblem(404, "Not Found", f"the upstream registry has no package {name!r}")
    if page.status != 200:
        raise refused_by_upstream(page.status, repr(name))
    try:
        return packument.read(page.body)
    except packument.PackumentError as error:  # a copy kept before this check, read again
        raise logged(bad_gateway(_unreadable(name, error))) from None


def _readable(name: str):
    """What upstream's 200 for `name` is, if not a packument (`pages.Readable`)."""

    def wrong(body: bytes, content_type: str) -> str | None:
        try:
            document = packument.read(body)
        except packument.PackumentError as error:
            return _unreadable(name, error)
        if document["name"] != name:
            return f"the upstream registry's answer for {name!r} is the packument of {document['name'][:100]!r}"
        return None

    return wrong


def _unreadable(name: str, error: packument.PackumentError) -> str:
    return f"the upstream registry's answer for {name!r} {error}"


def _json(document: dict, media: str, policy_version) -> Response:
    return judged(json.dumps(document, separators=(",", ":")), media, policy_version)


def tarball(principal, name: str, filename: str) -> Response:
    basename = name.rsplit("/", 1)[-1]
    number = (
        filename[len(basename) + 1 : -4] if filename.startswith(basename + "-") and filename.endswith(".tgz") else None
    )
    request_kind = file_request(metadata_file=False)
    found = {}  # the version's source, and the tarball once obtained to be read: then served

    def judged_facts():  # read only for an allowed project; its source is then used to answer
        found["source"] = version, manifest, url = tarball_source(name, filename)
        said = facts.npm_version(version, manifest, upload_times(name))
        if said.install_scripts is not False or request.method == "HEAD":  # a HEAD delivers no byte
            return said
        # npm runs what the tarball says: its word is judged and recorded, rules or not (a rule
        # drafted later is previewed on it), read once, as the answer reads it for bundled names
        try:
            held = _tarball_holds(manifest, url, found)
        except UpstreamProblem as error:
            if package_index().gate.checks_install_scripts(principal, name):
                raise  # the rule needs its word: the upstream's failure is the fetch's
            found["failed"], held = error, None  # the download's, once recorded: its delivery failed
        return replace(said, install_scripts=held.install_scripts if held is not None else None)

    try:
        delivered = judged_file(principal, "node", name, request_kind, filename, number or None, judged_facts)
        with upstream_failure_recorded(principal, "node", name, request_kind), undelivered_on_error(delivered):
            return _tarball_answer(principal, name, filename, delivered, found)
    finally:
        if "file" in found:  # obtained, and not handed to the answer
            found.pop("file").close()


def _tarball_answer(principal, name: str, filename: str, delivered, found: dict) -> Response:
    version, manifest, url = found.get("source") or tarball_source(name, filename)
    digests = from_npm(manifest.get("dist"))
    # A lockfile or a hand-made URL must not fetch a version the packument hides, nor one whose
    # tarball carries a refused name under its node_modules (a HEAD delivers none of it).
    declared = manifest
    if request.method != "HEAD":
        if "failed" in found:  # the upstream failed it while it was judged
            raise found.pop("failed")
        held = _tarball_holds(manifest, url, found)
        declared = {**manifest, IN_TARBALL: list(held.bundled) if held is not None else None}
    hidden = package_index().gate.hidden_versions(principal, "node", name, {version: declared}, "download", filename)
    if hidden:
        raise HTTPProblem(403, "Forbidden", hidden[version])
    if digests is None:  # a HEAD's only (a GET's tarball is unread, so refused above): relayed as upstream answers
        return relay(upstream(), request.method, url, delivered, None)
    if request.method == "HEAD":
        return files.head(upstream(), cache(), url, digests)
    return files.serve(found.pop("file", None) or files.obtain(upstream(), cache(), url, digests), delivered)


def _tarball_holds(manifest: dict, url: str, found: dict) -> facts.Tarball | None:
    """What the tarball holds, read once per worker by its digest; None, not known, when it cannot
    be read or nothing verifies its bytes. A tarball obtained to be read is left in
    `found["file"]` (fetched for this request, or kept before), for the answer to serve."""
    digests = from_npm(manifest.get("dist"))
    if digests is None:
        return None
    key = f"{digests.algorithm}:{digests.hex}"
    if (known := _TARBALLS_SAID.get(key)) is not None:
        return known[0]
    verified = found.get("file") or files.obtain(upstream(), cache(), url, digests)
    found["file"] = verified
    said = facts.tarball_contents(verified.file)
    verified.file.seek(0)
    _TARBALLS_SAID.put(key, (said,))
    return said


# What each tarball holds, by digest (the bytes behind a digest never change).
_TARBALLS_SAID: SizedLru[str, tuple[facts.Tarball | None]] = SizedLru(
    1024 * 1024, lambda key, said: len(key) + sum(len(n) for n in (said[0].bundled if said[0] else ()))
)


def cache():
    return current_app.extensions["index_cache"]


def tarball_source(name: str, filename: str) -> tuple[str, dict, str]:
    """The version, its manifest and where upstream keeps this file: the packument's word (it
    may be another host), not a guess; read as a packument request reads it (kept while fresh,
    then revalidated), never an older copy, so a tarball upstream replaced is known by its new
    digests, fetched and read anew. The full packument first: every download reads it anyway
    (`upload_times`); the abbreviated one when the full one fails."""
    for media in (FULL, packument.ABBREVIATED):
        try:
            document = fetch_packument(name, media)
        except HTTPProblem:
            if media == FULL:
                continue
            raise
        for version, manifest in packument.manifests(document).items():
            dist = manifest.get("dist")
            url = dist.get("tarball") if isinstance(dist, dict) else None
            if isinstance(url, str) and last_segment(url) == filename:
                return version, manifest, url
    raise HTTPProblem(404, "Not Found", f"the upstream registry lists no {filename!r} for {name!r}")
