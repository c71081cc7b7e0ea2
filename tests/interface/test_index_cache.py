"""The index's cache: with the upstream stopped, what was fetched before is served, judged by the
policy now; kept files are verified before they are served; the cache stays within its bytes;
files answer Range and ETag/304; a denied name never reaches upstream; the root listing is
judged once per policy version. Real pip and npm, the fixture upstreams on loopback, and pages
revalidated on every request (`RUNCODE_POLICY_CACHE_PAGE_SECONDS=0`) so that an outage shows."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest

from application.cache import DiskCache
from tests.application.test_disk_cache import counted, on_disk
from tests.interface.test_index_delivery import settled_downloads
from tests.support import clients
from tests.support.fixture_server import UNANNOUNCED
from tests.support.index_fixtures import index_env, run_decisions, set_policy, start_run
from tests.support.index_live import sqlite_store  # noqa: F401 - fixture database_url
from tests.support.npm_upstream import build_tarball
from tests.support.pypi_upstream import Dist, PyPIUpstream

WHEEL = "beta-1.1-py3-none-any.whl"
JSON_ACCEPT = "application/vnd.pypi.simple.v1+json"


@pytest.fixture
def live_env(pypi_upstream, npm_upstream) -> dict:
    return {**index_env(pypi_upstream, npm_upstream), "RUNCODE_POLICY_CACHE_PAGE_SECONDS": "0"}


def cache_dir(tmp_path) -> Path:
    return tmp_path / "cache"  # the default: under the data directory


def get(live, path: str, token=None, **headers):
    return live.call("GET", path, token or live.tokens["sandbox"], headers=headers)


def stop(upstream) -> None:
    """An outage: the upstream's port refuses connections from now on."""
    upstream.close()


def install(live, home: Path, client: str, *args):
    """A new run's install with a new home (so the client's own cache is empty)."""
    home.mkdir()
    run = start_run(live)
    if client == "pip":
        return run, clients.pip_install(home, run["pypi"], run["token"], *args)
    return run, clients.npm(home, run["npm"], run["token"], "install", *args)


def pip(live, home: Path, *args):
    return install(live, home, "pip", *args)


def npm_install(live, home: Path, *args):
    return install(live, home, "npm", *args)


def test_with_the_pypi_upstream_stopped_a_tree_installed_before_installs_again_and_one_denied_since_is_refused(
    live, app, tmp_path, pypi_upstream
):
    set_policy(app, "allowlist", python=["alpha", "beta"])
    _, first = pip(live, tmp_path / "first", "alpha")
    assert first.ok, first.output
    stop(pypi_upstream)
    run, again = pip(live, tmp_path / "again", "alpha")
    assert again.ok, again.output
    assert {p.name for p in (tmp_path / "again" / "site").glob("*.dist-info")} >= {"alpha-1.0.dist-info"}
    assert {d["name"] for d in run_decisions(live, run) if d["request"] == "download"} == {"alpha", "beta"}
    set_policy(app, "allowlist", python=["alpha"])
    run, refused = pip(live, tmp_path / "refused", "alpha")
    assert not refused.ok, refused.output
    assert not (tmp_path / "refused" / "site").exists() or not list((tmp_path / "refused" / "site").iterdir())
    denied = [d["name"] for d in run_decisions(live, run) if not d["allowed"] and d["reason"] != "run-failed"]
    assert denied[0] == "beta"


def test_with_the_npm_upstream_stopped_a_tree_installed_before_installs_again_and_one_denied_since_is_refused(
    live, app, tmp_path, npm_upstream
):
    set_policy(app, "allowlist", node=["alpha", "beta"])
    _, first = npm_install(live, tmp_path / "first", "alpha")
    assert first.ok, first.output
    stop(npm_upstream)
    _, again = npm_install(live, tmp_path / "again", "alpha")  # a fresh npm cache: every tarball asked for
    assert again.ok, again.output
    assert (tmp_path / "again" / "project" / "node_modules" / "beta" / "package.json").exists()
    set_policy(app, "allowlist", node=["alpha"])
    _, refused = npm_install(live, tmp_path / "refused", "alpha")
    assert not refused.ok
    # beta's packument was kept, so its version numbers are restricted: npm names the version and why.
    assert "E403" in refused.output and "due to policy violations" in refused.output, refused.output
    assert "beta is not on the Node allow list" in refused.output


def test_during_an_outage_what_was_never_fetched_is_503_with_retry_after(live, app, pypi_upstream, npm_upstream):
    pypi_upstream.outage = npm_upstream.outage = True  # up, but answering 503 to everything
    for path in ("/pypi/acme/simple/beta/", f"/pypi/acme/files/beta/{WHEEL}", "/npm/acme/beta"):
        refused = get(live, path)
        assert refused.status == 503 and refused.headers["retry-after"] == "5", (path, refused.body)


def answering(upstream, part: str, answer: tuple[int, str, bytes]) -> None:
    """From now on upstream answers `answer` (status, content type, body) for paths holding `part`."""
    respond = upstream.respond
    upstream.respond = lambda path, accept: answer if part in path else respond(path, accept)


@pytest.mark.parametrize(
    "answer",
    [
        (200, "text/plain", b"__PAGE__"),  # the page itself, sent as no page is
        (200, "text/html", b"__PAGE__"),  # or as HTML, which read as a project without files
        (200, JSON_ACCEPT, b"__GAMMA__"),  # another project's page
        (200, "image/png", b"\x89PNG"),
        (200, JSON_ACCEPT, b"<html>not json"),
        (429, "text/plain", b"slow down"),
        (401, "text/plain", b"who are you"),
    ],
    ids=["json-as-text", "json-as-html", "another-project", "an-image", "garbled-json", "429", "401"],
)
def test_a_page_upstream_answers_with_nonsense_or_a_refusal_is_served_as_kept_and_not_replaced(
    live, app, pypi_upstream, answer
):
    kept = get(live, "/pypi/acme/simple/beta/", Accept=JSON_ACCEPT)
    assert kept.status == 200 and kept.json["files"], kept.body
    page = json.dumps(kept.json).encode()
    gamma = json.dumps({**kept.json, "name": "gamma"}).encode()
    body = answer[2].replace(b"__PAGE__", page).replace(b"__GAMMA__", gamma)
    answering(pypi_upstream, "/simple/beta", (answer[0], answer[1], body))
    for _ in range(2):  # served as kept, and still kept: nonsense never replaced it
        again = get(live, "/pypi/acme/simple/beta/", Accept=JSON_ACCEPT)
        assert again.status == 200 and [f["filename"] for f in again.json["files"]] == [
            f["filename"] for f in kept.json["files"]
        ]
    stop(pypi_upstream)
    assert get(live, "/pypi/acme/simple/beta/", Accept=JSON_ACCEPT).json["files"], "the outage finds nonsense kept"


@pytest.mark.parametrize(
    "nonsense",
    [b'{"files": 5}', b'{"name": "gamma", "versions": {}}', b'{"name": "beta", "versions": {"1.0.0": 5}}'],
    ids=["no-packument", "another-package", "a-manifest-no-object"],
)
def test_a_packument_upstream_answers_with_nonsense_is_served_as_kept_and_never_kept_itself(
    live, app, npm_upstream, nonsense
):
    kept = get(live, "/npm/acme/beta")
    assert kept.status == 200 and kept.json["versions"], kept.body
    answering(npm_upstream, "/beta", (200, "application/json", nonsense))
    assert get(live, "/npm/acme/beta").json["versions"].keys() == kept.json["versions"].keys()
    stop(npm_upstream)
    assert get(live, "/npm/acme/beta").json["versions"].keys() == kept.json["versions"].keys()


def test_nonsense_from_upstream_with_nothing_kept_is_502_naming_what_is_wrong(live, app, pypi_upstream, npm_upstream):
    answering(pypi_upstream, "/simple/beta", (200, "text/plain", b'{"files": []}'))
    answering(npm_upstream, "/beta", (200, "application/json", b'{"files": 5}'))
    page = get(live, "/pypi/acme/simple/beta/", Accept=JSON_ACCEPT)
    assert page.status == 502 and 'its content type is "text/plain"' in page.json["detail"], page.body
    packument = get(live, "/npm/acme/beta")
    assert packument.status == 502 and "names no package or holds no versions" in packument.json["detail"]


def test_a_kept_file_altered_on_disk_is_never_served(live, app, tmp_path, pypi_upstream):
    path = f"/pypi/acme/files/beta/{WHEEL}"
    expected = pypi_upstream.file(WHEEL).sha256
    assert get(live, "/pypi/acme/simple/beta/").status == 200
    assert hashlib.sha256(get(live, path).body).hexdigest() == expected
    kept = cache_dir(tmp_path) / "files" / "sha256" / expected[:2] / expected
    flip(kept)
    again = get(live, path)  # fetched again from upstream, not served from the altered copy
    assert again.status == 200 and hashlib.sha256(again.body).hexdigest() == expected
    assert pypi_upstream.hits(f"/{WHEEL}") == 2
    flip(kept)
    stop(pypi_upstream)
    refused = get(live, path)  # nothing true to serve: refused, never the altered bytes
    assert refused.status == 503, refused.body
    assert not kept.exists()


def test_a_wheel_upstream_replaced_is_read_anew_by_its_new_digest(live, app, pypi_upstream):
    """A wheel that could not be read, then fixed upstream (its page gives a new sha256), is
    fetched and read anew, also when its page is not asked first (a lock file, another worker)."""
    path = f"/pypi/acme/files/beta/{WHEEL}"
    wheel = pypi_upstream.file(WHEEL)
    good, wheel.data = wheel.data, b"not a zip"
    assert get(live, "/pypi/acme/simple/beta/").status == 200  # kept, with the broken file's digest
    broken = get(live, path)
    assert broken.status == 502 and "is not a readable wheel" in broken.json["detail"], broken.body
    wheel.data = good
    fixed = get(live, path)
    assert fixed.status == 200 and fixed.body == good, fixed.body
    assert pypi_upstream.hits(f"/{WHEEL}") == 2


def test_a_tarball_upstream_replaced_is_known_by_its_new_digests(live, app, npm_upstream):
    path, upstream_path = "/npm/acme/beta/-/beta-1.0.0.tgz", "/beta/-/beta-1.0.0.tgz"
    assert get(live, "/npm/acme/beta").status == 200  # kept, with the first tarball's digests
    assert get(live, path).body == npm_upstream.tarballs[upstream_path]
    replaced = build_tarball(replace(npm_upstream.releases["beta"]["1.0.0"], carried=("helper",)))
    npm_upstream.tarballs[upstream_path] = replaced  # its packument's integrity and shasum follow
    again = get(live, path)
    assert again.status == 200 and again.body == replaced


def flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def test_files_answer_ranges_and_not_modified_with_their_digest_as_etag(live, app, pypi_upstream):
    path = f"/pypi/acme/files/beta/{WHEEL}"
    data = pypi_upstream.file(WHEEL).data
    whole = get(live, path)
    assert whole.status == 200 and whole.body == data
    assert whole.headers["etag"] == f'"{hashlib.sha256(data).hexdigest()}"'
    assert whole.headers["accept-ranges"] == "bytes"
    assert whole.headers["cache-control"] == "private, max-age=31536000, immutable"
    part = get(live, path, Range="bytes=10-29")
    assert part.status == 206 and part.body == data[10:30]
    assert part.headers["content-range"] == f"bytes 10-29/{len(data)}"
    tail = get(live, path, Range="bytes=-16")
    assert tail.status == 206 and tail.body == data[-16:]
    same = get(live, path, **{"If-None-Match": whole.headers["etag"]})
    assert same.status == 304 and same.body == b""
    set_policy(app, "allowlist", python=["alpha"])  # judged before the cache answers, 304 included
    assert get(live, path, **{"If-None-Match": whole.headers["etag"]}).status == 403


def test_a_head_of_a_file_not_kept_carries_the_headers_its_get_will(live, app, pypi_upstream):
    path = f"/pypi/acme/files/beta/{WHEEL}"
    data = pypi_upstream.file(WHEEL).data
    probed = live.call("HEAD", path, live.tokens["sandbox"])  # nothing kept yet: upstream's HEAD, no byte fetched
    assert pypi_upstream.hits(f"/{WHEEL}") == 1
    whole = get(live, path)
    for header in ("etag", "cache-control", "accept-ranges", "content-type", "content-length"):
        assert probed.headers[header] == whole.headers[header], header
    assert probed.headers["etag"] == f'"{hashlib.sha256(data).hexdigest()}"' and "last-modified" not in probed.headers


def test_ranges_it_would_refuse_for_no_good_reason_are_ignored_and_not_modified_wins_over_a_range(
    live, app, pypi_upstream
):
    """RFC 9110: a range of an unknown unit must be ignored, and several ranges or one that does
    not parse may be (the whole file, 200, where werkzeug would answer 416); a suffix longer than
    the file is all of it (a 206, not a 416); If-None-Match is evaluated before Range."""
    path = f"/pypi/acme/files/beta/{WHEEL}"
    data = pypi_upstream.file(WHEEL).data
    etag = get(live, path).headers["etag"]
    for asked in ("bytes=0-1,5-6", "bytes=0-0,-1", "items=0-5", "bytes=abc", "bytes=5-2", "bytes"):
        whole = get(live, path, Range=asked)
        assert whole.status == 200 and whole.body == data, asked
    for asked in (f"bytes=-{len(data) + 1000}", f"bytes=-{len(data)}"):
        everything = get(live, path, Range=asked)
        assert everything.status == 206 and everything.body == data, asked
        assert everything.headers["content-range"] == f"bytes 0-{len(data) - 1}/{len(data)}"
    assert get(live, path, Range="bytes=0-9", **{"If-None-Match": etag}).status == 304
    past = get(live, path, Range=f"bytes={len(data)}-")  # one bytes range it cannot satisfy
    assert past.status == 416 and past.headers["content-range"] == f"bytes */{len(data)}"
    assert get(live, path, Range="bytes=0-9").status == 206


def test_a_304_records_no_delivery_and_a_range_records_what_it_sent(live, app, pypi_upstream):
    path = f"/pypi/acme/files/beta/{WHEEL}"
    data = pypi_upstream.file(WHEEL).data

    def delivery(run: dict) -> dict:
        (found,) = [d["delivery"] for d in settled_downloads(live, run)]
        return {k: found[k] for k in ("status", "bytes", "sha256")}

    whole = start_run(live)
    etag = get(live, path, whole["token"]).headers["etag"]
    assert get(live, path, whole["token"], **{"If-None-Match": etag}).status == 304  # nothing sent: not a failure
    assert delivery(whole) == {"status": "served", "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    part = start_run(live)
    assert get(live, path, part["token"], Range="bytes=0-9").status == 206
    assert delivery(part) == {"status": "cached", "bytes": 10, "sha256": hashlib.sha256(data[:10]).hexdigest()}


def test_pages_carry_an_etag_of_the_judged_answer_and_answer_304(live, app, pypi_upstream, npm_upstream):
    for n, path in enumerate(("/pypi/acme/simple/beta/", "/npm/acme/beta", "/pypi/acme/simple/")):
        first = get(live, path)
        assert first.status == 200 and first.headers["cache-control"] == "private, no-cache"
        assert get(live, path, **{"If-None-Match": first.headers["etag"]}).status == 304
        set_policy(app, "denylist", python=[f"zeta{n}"], node=[f"zeta{n}"])  # a new version: a new judgment
        changed = get(live, path, **{"If-None-Match": first.headers["etag"]})
        assert changed.status == 200 and changed.headers["etag"] != first.headers["etag"]
    # Pages are revalidated with upstream's own ETag (here on every request): 304, no transfer.
    asked = [h for _, p, h in pypi_upstream.requests if p == "/simple/beta/"]
    assert len(asked) >= 2 and asked[-1].get("If-None-Match")


def test_a_denied_name_never_causes_an_upstream_request(live, app, pypi_upstream, npm_upstream):
    set_policy(app, "allowlist", python=["alpha"], node=["alpha"])

    def first_fetch(path: str, **headers):  # each in a new run: a run's first denial fails the rest of it
        return get(live, path, start_run(live)["token"], **headers)

    page = first_fetch("/pypi/acme/simple/beta/", Accept=JSON_ACCEPT)
    assert page.status == 200 and page.json["project-status"]["status"] == "quarantined"
    assert first_fetch(f"/pypi/acme/files/beta/{WHEEL}").status == 403
    packument = first_fetch("/npm/acme/beta")
    assert packument.status == 403 and "beta is not on the Node allow list" in packument.json["error"]
    assert "beta is not on the Node allow list" in packument.headers["npm-notice"]
    assert first_fetch("/npm/acme/beta/-/beta-1.0.0.tgz").status == 403
    assert pypi_upstream.hits("beta") == 0 and npm_upstream.hits("beta") == 0


def test_the_root_listing_is_judged_once_per_policy_version(live, app, pypi_upstream, monkeypatch):
    from application.index import listing

    judged = []
    real = listing.judge
    monkeypatch.setattr(listing, "judge", lambda *a: judged.append(a[1].name) or real(*a))
    set_policy(app, "denylist", python=["beta"])
    names = {n for n in pypi_upstream.projects}
    for _ in range(3):
        reply = get(live, "/pypi/acme/simple/", Accept=JSON_ACCEPT)
        assert {p["name"] for p in reply.json["projects"]} == names - {"beta"}
    assert sorted(judged) == sorted(names)  # once for the three requests
    set_policy(app, "denylist", python=["gamma"])
    assert "beta" in {p["name"] for p in get(live, "/pypi/acme/simple/", Accept=JSON_ACCEPT).json["projects"]}
    assert len(judged) == 2 * len(names)


@contextmanager
def bounded_index(open_app, tmp_path, dists, bound: int):
    """The index on a PyPI upstream of `dists`, its cache bounded to `bound` bytes: the upstream
    and a call as workspace acme's owner."""
    from interface import create_app
    from tests.support.http_client import LiveServer

    upstream = PyPIUpstream(dists=dists)
    env = {
        "RUNCODE_POLICY_DATA_DIR": str(tmp_path),
        "RUNCODE_POLICY_PYPI_UPSTREAM": upstream.url + "/simple/",
        "RUNCODE_POLICY_CACHE_MAX_BYTES": str(bound),
    }
    app = open_app()
    token = app.create_workspace("acme", by="founder")["token"]
    server = LiveServer(create_app(env=env, governance=app))
    try:
        yield (
            upstream,
            lambda path: server.call("GET", path.removeprefix(server.url), token, headers={"Accept": JSON_ACCEPT}),
        )
    finally:
        server.close()
        upstream.close()


def fetch_project(call, name: str) -> int:
    """Its page and every file of it, each checked against the page's digest: the bytes fetched."""
    page = call(f"/pypi/acme/simple/{name}/")
    fetched = 0
    for entry in page.json["files"]:
        reply = call(entry["url"])
        assert reply.status == 200 and hashlib.sha256(reply.body).hexdigest() == entry["hashes"]["sha256"]
        fetched += len(reply.body) + len(page.body)
    return fetched


def test_the_cache_keeps_within_its_bytes_on_disk(open_app, tmp_path):
    bound = 25_000
    dists = [Dist(f"pkg{n:02d}", "1.0", files=("wheel", "sdist")) for n in range(40)]
    with bounded_index(open_app, tmp_path, dists, bound) as (upstream, call):
        fetched = sum(fetch_project(call, project.name) for project in upstream.projects.values())
        assert fetched > 3 * bound and 0 < on_disk(cache_dir(tmp_path)) <= bound


def test_a_kept_file_grown_on_disk_is_fetched_again_and_the_cache_stays_within_its_bytes(open_app, tmp_path):
    """Dropping a kept file that grew on disk took its size now off the count, not the size it was
    counted as: the count fell far below what was kept, and the next fetches passed the bound."""
    bound = 25_000
    dists = [Dist(f"pkg{n:02d}", "1.0", files=("wheel", "sdist")) for n in range(40)]
    with bounded_index(open_app, tmp_path, dists, bound) as (upstream, call):
        names = [project.name for project in upstream.projects.values()]
        for name in names[:5]:
            fetch_project(call, name)
        wheel = upstream.projects[names[0]].files[0]
        kept = cache_dir(tmp_path) / "files" / "sha256" / wheel.sha256[:2] / wheel.sha256
        with open(kept, "ab") as file:
            file.write(b"\0" * 3 * bound)
        fetch_project(call, names[0])  # dropped, fetched again
        assert upstream.hits(f"/{wheel.filename}") == 2
        assert counted(cache_dir(tmp_path)) == on_disk(cache_dir(tmp_path))
        for name in names[5:]:
            fetch_project(call, name)
            assert on_disk(cache_dir(tmp_path)) <= bound, name


def test_a_file_too_large_to_keep_is_served_and_leaves_nothing_behind(open_app, tmp_path):
    with bounded_index(open_app, tmp_path, [Dist("big", "1.0")], 100) as (_, call):  # smaller than the wheel
        page = call("/pypi/acme/simple/big/")
        url = next(f["url"] for f in page.json["files"] if f["filename"].endswith(".whl"))
        for _ in range(3):
            assert call(url).status == 200
        temporary = tmp_path / "cache" / "tmp"
        for _ in range(200):  # the server removes it once it has closed the body, after the client read it
            if not any(temporary.iterdir()):
                break
            time.sleep(0.05)
        assert not any(temporary.iterdir()) and not any((tmp_path / "cache" / "files").rglob("*.*"))


def test_a_cache_directory_removed_while_serving_is_made_again_and_what_it_held_fetched_again(
    live, app, tmp_path, pypi_upstream, npm_upstream
):
    """`rm -rf` of the cache under a running service: every page, packument and file not in a
    worker's memory was a 500 (its temporary folder was gone) until a restart."""
    paths = (
        "/pypi/acme/simple/beta/",
        f"/pypi/acme/files/beta/{WHEEL}",
        "/npm/acme/beta",
        "/npm/acme/beta/-/beta-1.0.0.tgz",
    )
    first = {path: get(live, path).body for path in paths}
    shutil.rmtree(cache_dir(tmp_path))
    for path in (*paths, "/pypi/acme/simple/gamma/", "/npm/acme/alpha"):
        again = get(live, path)
        assert again.status == 200, (path, again.body)
        assert again.body == first.get(path, again.body), path
    assert pypi_upstream.hits(f"/{WHEEL}") == 2 and npm_upstream.hits("/beta/-/beta-1.0.0.tgz") == 2
    assert counted(cache_dir(tmp_path)) == on_disk(cache_dir(tmp_path))
    stop(pypi_upstream)  # kept again: served without upstream
    assert get(live, f"/pypi/acme/files/beta/{WHEEL}").status == 200


def test_a_file_whose_length_is_not_its_pages_size_is_refused_at_the_first_byte_past_it(
    live, app, pypi_upstream, monkeypatch
):
    """The page's PEP 700 `size` bounds the fetch: an upstream sending far more (300 MB for a
    200 kB wheel) filled the temporary folder up to 4 GiB before its digest refused it."""
    path, data = f"/pypi/acme/files/beta/{WHEEL}", pypi_upstream.file(WHEEL).data
    spooled = []  # what the temporary file held when it was dropped
    real = DiskCache.forget
    monkeypatch.setattr(DiskCache, "forget", lambda file: spooled.append(os.fstat(file.fileno()).st_size) or real(file))

    def page_says(size: int) -> None:
        def edit(page: dict) -> None:
            next(f for f in page["files"] if f["filename"] == WHEEL)["size"] = size

        pypi_upstream.edits["beta"] = edit

    def refused(detail: str) -> None:
        reply = get(live, path)
        assert reply.status == 502 and reply.json["detail"] == f"{detail}, so they are not served", reply.body

    page_says(len(data) - 100)
    refused(f"the upstream announces {len(data)} bytes for {WHEEL} where its index page gives {len(data) - 100}")
    assert spooled == [0]
    pypi_upstream.faults[f"/{WHEEL}"] = UNANNOUNCED
    refused(f"the upstream sent more than the {len(data) - 100} bytes its index page gives for {WHEEL}")
    assert spooled[-1] <= len(data) - 100
    page_says(len(data) + 100)
    refused(f"the upstream sent {len(data)} bytes for {WHEEL} where its index page gives {len(data) + 100}")
    pypi_upstream.edits.clear()
    assert get(live, path).body == data  # as its page says: kept and served


def test_a_page_rewritten_by_another_worker_while_it_is_revalidated_is_served_whole(live, app, pypi_upstream):
    """Workers share the kept pages: one may rewrite a page (its header's length changed) between
    another's read of that header and of the body its upstream just called unchanged (304)."""
    path = "/pypi/acme/simple/beta/"
    first = get(live, path, Accept=JSON_ACCEPT)
    assert first.status == 200
    pages = live.app.extensions["pypi_pages"]
    real = pages.upstream.page

    def revalidated_while_another_worker_rewrites(url, accept, validators):
        key = f"{accept}|{url}"
        stored = pages.cache.page(key)
        pages.cache.put_page(key, {**stored.meta, "by": "another worker"}, stored.body())
        return real(url, accept, validators)

    pages.upstream.page = revalidated_while_another_worker_rewrites
    again = get(live, path, Accept=JSON_ACCEPT)  # pages are revalidated on every request here
    assert again.status == 200, again.body
    assert again.json == first.json
