"""A run fails closed at its first project denial, spoken to over HTTP: after a run was refused a
project, every later page, packument, metadata and file of that run is a 403 naming that first
denial (the resolver cannot back-track to an older release that lacks the denied dependency).
The real clients (pip, uv, npm, pnpm) meet it in test_index_pip_uv.py and test_index_npm.py."""

from __future__ import annotations

import base64
import http.client
from urllib.parse import urlsplit

from tests.support.index_fixtures import run_decisions, set_policy, start_run
from tests.support.index_live import index_live_env, sqlite_store  # noqa: F401 - fixtures live_env, database_url

JSON_ACCEPT = "application/vnd.pypi.simple.v1+json"
FIRST_DENIAL = "this run already failed: beta (python) was denied \u2014 not-on-the-allow-list: beta is not on the"


def fetch(live, path: str, token: str, accept: str = JSON_ACCEPT):
    auth = "Basic " + base64.b64encode(f"pip:{token}".encode()).decode()
    return live.call("GET", path, headers={"Authorization": auth, "Accept": accept})


def test_after_a_runs_first_denial_every_page_metadata_and_file_of_it_is_403_naming_that_denial(live, app):
    set_policy(app, "allowlist", python=["alpha"])
    run = start_run(live)
    assert fetch(live, "/pypi/acme/simple/alpha/", run["token"]).status == 200
    denied = fetch(live, "/pypi/acme/simple/beta/", run["token"])
    assert denied.status == 200 and denied.json["project-status"]["status"] == "quarantined"  # the first denial
    for path in (
        "/pypi/acme/simple/alpha/",
        "/pypi/acme/files/alpha/alpha-0.9-py3-none-any.whl.metadata",
        "/pypi/acme/files/alpha/alpha-0.9-py3-none-any.whl",
        "/pypi/acme/simple/beta/",
        "/pypi/acme/simple/gamma/",
    ):
        refused = fetch(live, path, run["token"])
        assert refused.status == 403 and refused.media == "application/problem+json", path
        assert refused.json["detail"].startswith(FIRST_DENIAL), refused.json
        assert refused.json["detail"].endswith("; nothing more is served to it")
    reasons = [(d["name"], d["request"], d["reason"]) for d in run_decisions(live, run)]
    assert reasons[0] == ("beta", "page", "not-on-the-allow-list")
    assert ("alpha", "download", "run-failed") in reasons and ("alpha", "metadata", "run-failed") in reasons
    another = start_run(live)  # one run's failure is its own
    assert fetch(live, "/pypi/acme/simple/alpha/", another["token"]).status == 200


def test_pip_sees_the_first_denial_in_the_status_line_of_a_failed_runs_403(live, app):
    set_policy(app, "allowlist", python=["alpha"])
    run = start_run(live)
    fetch(live, "/pypi/acme/simple/beta/", run["token"])
    host = urlsplit(live.url)
    connection = http.client.HTTPConnection(host.hostname, host.port, timeout=30)
    auth = "Basic " + base64.b64encode(f"pip:{run['token']}".encode()).decode()
    connection.request("GET", "/pypi/acme/files/alpha/alpha-0.9-py3-none-any.whl", headers={"Authorization": auth})
    reply = connection.getresponse()
    reply.read()
    connection.close()
    assert reply.status == 403
    assert reply.reason.startswith("Forbidden: this run already failed: beta (python) was denied - not-on-the-allow")


def test_after_a_runs_first_denial_every_packument_and_tarball_is_403_with_npms_error_field(live, app):
    set_policy(app, "allowlist", node=["alpha"])
    run = start_run(live)
    bearer = {"Authorization": f"Bearer {run['token']}"}
    assert live.call("GET", "/npm/acme/alpha", headers=bearer).status == 200
    restricted = live.call("GET", "/npm/acme/beta", headers=bearer)
    assert restricted.status == 403 and "beta is not on the Node allow list" in restricted.json["error"]  # the first
    for path in ("/npm/acme/alpha", "/npm/acme/alpha/-/alpha-0.9.0.tgz", "/npm/acme/@scope/gamma"):
        refused = live.call("GET", path, headers=bearer)
        assert refused.status == 403, path
        assert refused.json["error"] == refused.json["detail"]  # npm prints `error` after the status
        assert refused.json["detail"].startswith("this run already failed: beta (node) was denied \u2014 not-on-the")


def test_a_root_listing_neither_fails_a_run_nor_is_refused_to_a_failed_one(live, app):
    set_policy(app, "allowlist", python=["alpha"])
    run = start_run(live)
    listed = fetch(live, "/pypi/acme/simple/", run["token"])
    assert listed.status == 200 and [p["name"] for p in listed.json["projects"]] == ["alpha"]
    assert fetch(live, "/pypi/acme/simple/alpha/", run["token"]).status == 200  # the listing failed nothing
    fetch(live, "/pypi/acme/simple/beta/", run["token"])
    assert fetch(live, "/pypi/acme/simple/", run["token"]).status == 200  # names only, nothing installable
    assert fetch(live, "/pypi/acme/simple/alpha/", run["token"]).status == 403


def test_a_plain_token_reading_the_index_without_a_run_fails_closed_too(live, app):
    set_policy(app, "allowlist", python=["alpha"])
    token = live.tokens["sandbox"]
    assert fetch(live, "/pypi/acme/simple/beta/", token).status == 200
    refused = fetch(live, "/pypi/acme/simple/alpha/", token)
    assert refused.status == 403
    assert refused.json["detail"].startswith("this token (reading the index without a run, for 15 minutes after")
    assert fetch(live, "/pypi/acme/simple/alpha/", live.tokens["admin"]).status == 200  # another token: its own
