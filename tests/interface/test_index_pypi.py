"""The PyPI simple-index proxy, spoken to directly: negotiation, shapes, denials, files, outages."""

from __future__ import annotations

import base64
import hashlib
import http.client
import json
import threading
from urllib.parse import urlsplit

import pytest
from pypi_simple import PyPISimple

from application.egress import EgressConfig
from tests.support.index_fixtures import set_policy, start_run, upstream_failure
from tests.support.index_live import index_live_env, sqlite_store  # noqa: F401 - fixtures live_env, database_url
from tests.support.pypi_upstream import HTML_TYPE, JSON_TYPE, Dist, PyPIUpstream

JSON_ACCEPT = "application/vnd.pypi.simple.v1+json"
PIP_ACCEPT = "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html; q=0.1, text/html; q=0.01"


def basic(token: str) -> dict:
    return {"Authorization": "Basic " + base64.b64encode(f"anyone:{token}".encode()).decode()}


def get(live, path: str, token: str | None = None, accept: str | None = None, method: str = "GET", role="sandbox"):
    headers = basic(token or live.tokens[role])
    if accept is not None:
        headers["Accept"] = accept
    return live.call(method, path, headers=headers)


def test_pages_are_negotiated_by_accept_with_quality_values(live, app):
    set_policy(app, "denylist")
    cases = [
        (PIP_ACCEPT, JSON_TYPE),
        ("text/html", "text/html"),
        ("*/*", "text/html"),
        (None, "text/html"),
        ("application/vnd.pypi.simple.latest+json", JSON_TYPE),
        (f"{JSON_TYPE};q=0.1, {HTML_TYPE}", HTML_TYPE),
    ]
    for accept, media in cases:
        reply = get(live, "/pypi/acme/simple/alpha/", accept=accept)
        assert (reply.status, reply.media) == (200, media), accept
        assert reply.headers["vary"] == "Accept"
    assert get(live, "/pypi/acme/simple/alpha/", accept="application/json").status == 406


def test_a_name_not_in_normalized_form_redirects_to_it(live, app):
    set_policy(app, "denylist")
    for spelling in ("Delta_Pkg", "delta.pkg", "DELTA-pkg"):
        reply = get(live, f"/pypi/acme/simple/{spelling}/")
        assert reply.status == 301 or reply.status == 200  # urllib follows redirects
    reply = get(live, "/pypi/acme/simple/Delta_Pkg/", accept=JSON_ACCEPT)
    assert reply.status == 200 and reply.json["name"] == "delta-pkg"
    parts = urlsplit(live.url)
    for spelling in ("alpha.", ".alpha", "%2e%2e"):  # no project in any spelling: 404, not sent on to one
        for path in (f"/pypi/acme/simple/{spelling}/", f"/pypi/acme/simple/{spelling}"):
            conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
            conn.request("GET", path, headers=basic(live.tokens["sandbox"]))
            reply = conn.getresponse()
            conn.close()
            assert reply.status == 404 and reply.getheader("Location") is None, (path, reply.status)


@pytest.mark.parametrize("accept", [JSON_TYPE, HTML_TYPE])
def test_every_field_but_urls_agrees_with_upstream(live, app, pypi_upstream, accept):
    """pypi-simple's parse of the proxied page equals its parse of upstream's, URLs aside."""
    set_policy(app, "denylist")
    with (
        PyPISimple(f"{pypi_upstream.url}/simple/", accept=accept) as direct,
        PyPISimple(f"{live.url}/pypi/acme/simple/", auth=("anyone", live.tokens["sandbox"]), accept=accept) as proxy,
    ):
        for name in pypi_upstream.projects:
            upstream_page, proxied_page = direct.get_project_page(name), proxy.get_project_page(name)
            assert _without_urls(proxied_page) == _without_urls(upstream_page), name
            assert proxied_page.packages, name
            assert all(p.url.startswith(f"{live.url}/pypi/acme/files/{name}/") for p in proxied_page.packages)


def _without_urls(page) -> dict:
    packages = [{**vars(p), "url": None} for p in page.packages]
    return {**vars(page), "packages": packages}


def test_json_pages_name_core_metadata_never_dist_info_metadata(live, app):
    set_policy(app, "denylist")
    files = get(live, "/pypi/acme/simple/alpha/", accept=JSON_ACCEPT).json["files"]
    wheel = next(f for f in files if f["filename"].endswith(".whl"))
    assert "core-metadata" in wheel and all("dist-info-metadata" not in f for f in files)


def test_a_denied_project_is_quarantined_with_the_reason_and_no_files(live, app):
    set_policy(app, "allowlist", python=["alpha"])
    # A run each: a run's (or token's) first project denial is the only one it is shown.
    page = get(live, "/pypi/acme/simple/beta/", token=start_run(live)["token"], accept=JSON_ACCEPT).json
    assert page["files"] == [] and page["meta"]["api-version"] == "1.4"
    assert page["project-status"]["status"] == "quarantined"
    assert "beta is not on the Python allow list" in page["project-status"]["reason"]
    auth = ("x", start_run(live)["token"])
    with PyPISimple(f"{live.url}/pypi/acme/simple/", auth=auth, accept="text/html") as client:
        parsed = client.get_project_page("beta")
    assert parsed.packages == [] and str(parsed.status) == "quarantined"
    assert "not on the Python allow list" in parsed.status_reason
    html = get(live, "/pypi/acme/simple/beta/", token=start_run(live)["token"], accept="text/html")
    assert html.status == 200 and b"<a " not in html.body


def test_an_allowed_file_streams_upstream_bytes_and_head_gives_its_length(live, app, pypi_upstream):
    set_policy(app, "allowlist", python=["alpha"])
    original = pypi_upstream.file("alpha-1.0-py3-none-any.whl").data
    path = "/pypi/acme/files/alpha/alpha-1.0-py3-none-any.whl"
    head = get(live, path, method="HEAD")
    assert head.status == 200 and head.headers["content-length"] == str(len(original)) and head.body == b""
    reply = get(live, path)
    assert reply.status == 200 and hashlib.sha256(reply.body).digest() == hashlib.sha256(original).digest()
    metadata = get(live, path + ".metadata")
    assert metadata.status == 200 and b"Requires-Dist: beta>=1.0" in metadata.body


def test_a_file_of_a_project_denied_after_its_page_was_fetched_is_403(live, app):
    set_policy(app, "allowlist", python=["alpha", "beta"])
    run = start_run(live)
    page = get(live, "/pypi/acme/simple/beta/", token=run["token"], accept=JSON_ACCEPT).json
    url = next(f["url"] for f in page["files"] if f["filename"].endswith(".whl"))
    set_policy(app, "allowlist", python=["alpha"])
    path = url.removeprefix(live.url)
    for suffix in ("", ".metadata"):
        reply = get(live, path + suffix, token=run["token"])
        assert reply.status == 403 and "not on the Python allow list" in reply.json["detail"]
    assert get(live, path, token=run["token"], method="HEAD").status == 403


def test_tokens_that_may_not_read_the_index_get_no_project_data(live, app):
    set_policy(app, "denylist")
    path = "/pypi/acme/simple/alpha/"
    assert live.call("GET", path).status == 403  # no token: 403, so pip never prompts
    assert "www-authenticate" not in live.call("GET", path).headers
    assert get(live, path, token="rcp_unknown").status == 403
    assert get(live, path, role="auditor").status == 403  # an auditor never adds to the record
    assert get(live, path, role="other-workspace").status == 404
    bearer = live.call("GET", path, live.tokens["sandbox"])
    assert bearer.status == 200 and b"alpha-1.0" in bearer.body


def test_a_run_token_reads_only_the_index(live, app):
    set_policy(app, "denylist")
    run = start_run(live)
    assert get(live, "/pypi/acme/simple/alpha/", token=run["token"]).status == 200
    assert live.call("GET", "/api/v1/workspaces/acme/policy", run["token"]).status == 401
    assert live.call("POST", "/api/v1/workspaces/acme/runs", run["token"], {}).status == 401


@pytest.mark.parametrize("reader", ["token", "run"])
def test_a_page_fetched_again_is_one_store_read(live, app, monkeypatch, reader):
    """Its token, the policy head and whether its reader was refused a project, in one round trip
    (a run's token: its run, then its starter with the rest): nothing else the page depends on is
    read again while it has not changed."""
    set_policy(app, "denylist")
    token = start_run(live)["token"] if reader == "run" else None
    assert get(live, "/pypi/acme/simple/alpha/", token).status == 200  # the first fetch: recorded, the page kept
    reads, fetch = [], app.recorder.fetch

    def counted(*args, **kwargs):
        if "process_request_thread" in threading.current_thread().name:  # the request's, not the sealer's
            reads.append(args[0])
        return fetch(*args, **kwargs)

    monkeypatch.setattr(app.recorder, "fetch", counted)
    assert get(live, "/pypi/acme/simple/alpha/", token).status == 200
    assert len(reads) == (2 if reader == "run" else 1), reads


def test_a_page_is_handed_to_the_server_whole_and_a_file_as_it_streams(live, app, live_env, tmp_path):
    """A body whole in memory goes to the server as one buffer, its index slot free at once; a
    file stays a stream, its slot held until the server closes it (interface.index.bounds)."""
    from werkzeug.test import EnvironBuilder

    from interface import create_app

    set_policy(app, "denylist")
    served_app = create_app(env={"RUNCODE_POLICY_DATA_DIR": str(tmp_path / "own"), **live_env}, governance=app)
    bounds = served_app.wsgi_app  # the outermost WSGI layer: what the server calls

    def call(path: str):
        headers = {**basic(live.tokens["sandbox"]), "Accept": JSON_ACCEPT}
        return bounds(EnvironBuilder(path=path, headers=headers).get_environ(), lambda *args: None)

    try:
        page = call("/pypi/acme/simple/alpha/")
        assert isinstance(page, list) and len(page) == 1 and not bounds._taken
        url = next(f["url"] for f in json.loads(page[0])["files"] if f["filename"].endswith(".whl"))
        body = call(url.removeprefix("http://localhost"))
        assert not isinstance(body, list) and len(bounds._taken) == 1
        assert b"".join(body) and not bounds._taken  # released once sent
    finally:
        for close in served_app.extensions.get("on_close", []):
            close()


def test_uploads_and_other_writes_are_405(live, app):
    for method in ("POST", "PUT", "DELETE"):
        for path in ("/pypi/acme/", "/pypi/acme/simple/alpha/", "/pypi/acme/legacy/"):
            assert live.call(method, path, headers=basic(live.tokens["sandbox"]), raw=b"x").status == 405


def test_an_upstream_outage_is_503_never_an_unjudged_allow(live, app, pypi_upstream):
    set_policy(app, "allowlist", python=["alpha"])
    pypi_upstream.outage = True
    reply = get(live, "/pypi/acme/simple/alpha/", accept=JSON_ACCEPT)
    assert reply.status in (502, 503) and b"alpha-1.0" not in reply.body
    assert get(live, "/pypi/acme/simple/beta/", accept=JSON_ACCEPT).json["files"] == []  # a denial needs no upstream


def _first_file(**fields):
    return lambda page: page["files"][0].update(fields)


# What an upstream answering nonsense puts in a project page, and where the 502 says it is.
MISSHAPEN = [
    pytest.param(_first_file(url=5), "files[0].url cannot be 5", id="url-a-number"),
    pytest.param(_first_file(filename=None), "files[0].filename cannot be null", id="filename-null"),
    pytest.param(_first_file(filename=7), "files[0].filename cannot be 7", id="filename-a-number"),
    pytest.param(lambda page: page["files"][0].pop("filename"), "files[0] has no filename", id="no-filename"),
    pytest.param(_first_file(hashes=["sha256"]), 'files[0].hashes cannot be ["sha256"]', id="hashes-a-list"),
    pytest.param(_first_file(**{"requires-python": 3}), "files[0].requires-python cannot be 3", id="requires-a-number"),
    pytest.param(_first_file(size="975"), 'files[0].size cannot be "975"', id="size-a-string"),
    pytest.param(_first_file(size=-1), "files[0].size cannot be -1", id="size-negative"),
    pytest.param(
        _first_file(**{"core-metadata": "sha256=abc"}),
        'files[0].core-metadata cannot be "sha256=abc"',
        id="core-metadata-a-string",
    ),
    pytest.param(
        _first_file(url="http://127.0.0.1:99999/alpha-0.9-py3-none-any.whl"),
        'it links "http://127.0.0.1:99999/alpha-0.9-py3-none-any.whl", which is no URL',
        id="url-port-out-of-range",
    ),
    pytest.param(lambda page: page.update(meta="x"), 'meta cannot be "x"', id="meta-a-string"),
    pytest.param(lambda page: page["meta"].update(tracks=[1]), "meta.tracks cannot be [1]", id="tracks-a-number"),
    pytest.param(lambda page: page.update(versions=[{}]), "versions cannot be [{}]", id="versions-an-object"),
    pytest.param(
        lambda page: page.update({"project-status": "archived"}),
        'project-status cannot be "archived"',
        id="status-a-string",
    ),
    pytest.param(lambda page: page.update(files={}), "it has no list of files", id="files-an-object"),
]


@pytest.mark.parametrize("accept", [JSON_TYPE, HTML_TYPE])
@pytest.mark.parametrize("edit, where", MISSHAPEN)
def test_an_upstream_page_of_a_shape_no_pep_gives_is_502_and_the_run_says_why(live, pypi_upstream, edit, where, accept):
    pypi_upstream.edits["alpha"] = edit
    run = start_run(live)
    reply = get(live, "/pypi/acme/simple/alpha/", token=run["token"], accept=accept)
    assert reply.status == 502 and reply.media == "application/problem+json", reply.body[:300]
    assert reply.json["detail"].endswith(where), reply.json["detail"]
    why = upstream_failure(live, run)
    assert (why["name"], why["request"], why["message"]) == ("alpha", "page", reply.json["detail"])


def test_a_file_whose_upstream_page_is_misshapen_is_502_and_the_run_says_why(live, pypi_upstream):
    pypi_upstream.edits["alpha"] = MISSHAPEN[0].values[0]
    run = start_run(live)
    reply = get(live, "/pypi/acme/files/alpha/alpha-1.0-py3-none-any.whl", token=run["token"])
    assert reply.status == 502, reply.body[:300]
    why = upstream_failure(live, run)
    assert (why["name"], why["request"], why["message"]) == ("alpha", "download", reply.json["detail"])


def test_what_indexes_send_besides_the_fixtures_shapes_is_answered(live, pypi_upstream):
    def legitimate(page):
        page["files"][0].update(
            {
                "requires-python": None,
                "core-metadata": False,
                "dist-info-metadata": False,
                "upload-time": None,
                "size": None,
            }
        )
        page["files"][0].update({"yanked": False, "gpg-sig": False, "provenance": None})
        page["files"][1].update(hashes={}, yanked="a bad build")
        page["meta"]["tracks"] = ["https://pypi.org/simple/alpha/"]
        page.update({"alternate-locations": [], "project-status": {"status": "active"}})

    pypi_upstream.edits["alpha"] = legitimate
    for accept in (JSON_TYPE, HTML_TYPE):
        assert get(live, "/pypi/acme/simple/alpha/", accept=accept).status == 200, accept


def test_an_unreachable_upstream_is_503(app, tmp_path):
    from interface import create_app
    from tests.support.http_client import LiveServer

    token = app.create_workspace("acme", by="founder")["token"]
    server = LiveServer(
        create_app(
            env={
                "RUNCODE_POLICY_DATA_DIR": str(tmp_path),
                "RUNCODE_POLICY_PYPI_UPSTREAM": "http://127.0.0.1:9/simple/",
            },
            governance=app,
        )
    )
    try:
        reply = server.call("GET", "/pypi/acme/simple/alpha/", token)
        assert reply.status == 503 and reply.headers.get("retry-after")
    finally:
        server.close()


def test_the_root_lists_what_the_policy_allows(live, app):
    set_policy(app, "allowlist", python=["alpha", "beta"])
    listed = get(live, "/pypi/acme/simple/", accept=JSON_ACCEPT).json["projects"]
    assert [p["name"] for p in listed] == ["alpha", "beta"]
    set_policy(app, "denylist", python=["beta"])
    listed = {p["name"] for p in get(live, "/pypi/acme/simple/", accept=JSON_ACCEPT).json["projects"]}
    assert "alpha" in listed and "beta" not in listed


def test_files_on_another_host_are_served_only_if_the_egress_rules_allow_it(open_app, tmp_path):
    """Upstream keeps gamma's files on 127.0.0.2: a loopback address the egress rules refuse,
    unless (second case) the test-only hatch lets exactly that address through."""
    from interface import create_app
    from tests.support.http_client import LiveServer

    upstream = PyPIUpstream(dists=(Dist("gamma", "0.1", files=("wheel",)),), other_host={"gamma"})
    env = {"RUNCODE_POLICY_DATA_DIR": str(tmp_path), "RUNCODE_POLICY_PYPI_UPSTREAM": upstream.url + "/simple/"}
    token = None
    try:
        for hatch in ((), ("127.0.0.2",)):
            app = open_app(egress=EgressConfig(allow_addresses=hatch))
            token = token or app.create_workspace("acme", by="founder")["token"]
            server = LiveServer(create_app(env=env, governance=app))
            try:
                page = server.call("GET", "/pypi/acme/simple/gamma/", token, headers={"Accept": JSON_ACCEPT}).json
                reply = server.call("GET", "/pypi/acme/files/gamma/gamma-0.1-py3-none-any.whl", token)
            finally:
                server.close()
            assert len(page["files"]) == (1 if hatch else 0)
            assert reply.status == (200 if hatch else 403), reply.body
            if not hatch:
                assert "egress rules refuse" in reply.json["detail"]
    finally:
        upstream.close()
