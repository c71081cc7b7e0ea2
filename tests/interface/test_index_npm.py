"""Real npm and real pnpm installing through the npm registry proxy from the fixture registry,
and the registry API spoken to directly (packument shapes, scoped names, tarballs, writes)."""

from __future__ import annotations

import base64
import hashlib
import json

import pytest

from tests.support import clients
from tests.support.fixture_server import OTHER_HOST
from tests.support.index_fixtures import run_decisions, set_policy, start_run, upstream_failure
from tests.support.index_live import index_live_env, sqlite_store  # noqa: F401 - fixtures live_env, database_url
from tests.support.npm_upstream import ABBREVIATED, NpmUpstream, Release

CLIENTS = {"npm": (clients.npm, "install"), "pnpm": (clients.pnpm, "add")}


def install(live, tmp_path, client: str, *packages: str):
    run = start_run(live)
    command, verb = CLIENTS[client]
    return run, command(tmp_path, run["npm"], run["token"], verb, *packages)


def installed(tmp_path) -> set[str]:
    modules = tmp_path / "project" / "node_modules"
    found = {p.name for p in modules.iterdir() if not p.name.startswith((".", "@"))} if modules.exists() else set()
    found |= {f"{s.name}/{p.name}" for s in modules.glob("@*") for p in s.iterdir()}
    # pnpm links only direct dependencies at the top; the whole tree is in .pnpm as name@version
    return found | {p.name.rsplit("@", 1)[0].replace("+", "/") for p in modules.glob(".pnpm/*@*")}


@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize("mode, listed", [("allowlist", ["alpha"]), ("denylist", ["beta"])])
def test_a_denied_dependency_fails_the_install_and_its_denial_is_recorded(live, app, tmp_path, client, mode, listed):
    set_policy(app, mode, node=listed)
    run, outcome = install(live, tmp_path, client, "alpha")
    assert not outcome.ok, outcome.output
    assert not {"alpha", "beta"} & installed(tmp_path)
    decisions = run_decisions(live, run)
    denied = [d for d in decisions if not d["allowed"] and d["reason"] != "run-failed"]
    assert {d["name"] for d in denied} == {"beta"} and all(d["context"]["source"] == "index" for d in denied)
    assert all("beta (node) was denied" in d["message"] for d in decisions if d["reason"] == "run-failed")
    assert not [d for d in decisions if d["allowed"] and d["request"] == "download" and "0.9" in d["file"]]
    if client == "npm":  # npm shows the policy's reason (never fetched, beta's packument is a 403 with it)
        assert "E403" in outcome.output and "403 FORBIDDEN - GET" in outcome.output, outcome.output
        assert "beta is not on the Node" in outcome.output or "beta is on the Node deny list" in outcome.output


@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize("mode, listed", [("allowlist", ["alpha", "beta"]), ("denylist", ["gamma"])])
def test_an_allowed_tree_installs_and_every_tarball_is_recorded(live, app, tmp_path, client, mode, listed):
    set_policy(app, mode, node=listed)
    run, outcome = install(live, tmp_path, client, "alpha")
    assert outcome.ok, outcome.output
    assert {"alpha", "beta"} <= installed(tmp_path)
    downloads = {
        (d["name"], d["file"], d["package_version"]) for d in run_decisions(live, run) if d["request"] == "download"
    }
    assert downloads == {("alpha", "alpha-1.0.0.tgz", "1.0.0"), ("beta", "beta-1.2.0.tgz", "1.2.0")}


def test_a_scoped_package_installs_with_npm(live, app, tmp_path):
    set_policy(app, "allowlist", node=["@scope/gamma"])
    run, outcome = install(live, tmp_path, "npm", "@scope/gamma")
    assert outcome.ok, outcome.output
    assert installed(tmp_path) == {"@scope/gamma"}


def test_npm_ci_from_a_lock_that_points_at_the_public_registry_installs_through_the_proxy(live, app, tmp_path):
    set_policy(app, "allowlist", node=["alpha", "beta"])
    first, outcome = install(live, tmp_path, "npm", "alpha")
    assert outcome.ok, outcome.output
    project = tmp_path / "project"
    lock = json.loads((project / "package-lock.json").read_text())
    ours = first["npm"]
    for entry in lock["packages"].values():
        if "resolved" in entry:
            assert entry["resolved"].startswith(ours)
            entry["resolved"] = "https://registry.npmjs.org/" + entry["resolved"].removeprefix(ours)
    (project / "package-lock.json").write_text(json.dumps(lock))
    for child in ("node_modules",):
        import shutil

        shutil.rmtree(project / child)
    second = start_run(live)
    elsewhere = tmp_path / "elsewhere"  # npm's own cache would answer for the tarballs (they are immutable)
    elsewhere.mkdir()
    outcome = clients.npm(elsewhere, second["npm"], second["token"], "ci", project=project)
    assert outcome.ok, outcome.output
    assert {"alpha", "beta"} <= installed(tmp_path)
    files = {d["file"] for d in run_decisions(live, second) if d["request"] == "download"}
    assert files == {"alpha-1.0.0.tgz", "beta-1.2.0.tgz"}  # the tarballs came through the proxy


def test_publishing_is_405(live, app, tmp_path):
    set_policy(app, "denylist")
    run = start_run(live)
    project = clients.npm_project(tmp_path)
    outcome = clients.npm(tmp_path, run["npm"], run["token"], "publish", project=project)
    assert not outcome.ok and "405" in outcome.output
    for method in ("PUT", "POST", "DELETE"):
        reply = live.call(method, "/npm/acme/probe", live.tokens["sandbox"], raw=b"{}")
        assert reply.status == 405


def bearer(live, path: str, accept: str | None = None, token: str | None = None, method="GET"):
    headers = {"Accept": accept} if accept else {}
    return live.call(method, path, token or live.tokens["sandbox"], headers=headers)


def test_packuments_pass_through_with_tarballs_rewritten(live, app, npm_upstream):
    set_policy(app, "denylist")
    full = bearer(live, "/npm/acme/beta").json
    direct = npm_upstream.packument("beta", abbreviated=False)
    assert full["time"] == direct["time"] and full["dist-tags"] == direct["dist-tags"]
    for number, manifest in full["versions"].items():
        upstream_dist = direct["versions"][number]["dist"]
        assert manifest["dist"]["tarball"] == f"{live.url}/npm/acme/beta/-/beta-{number}.tgz"
        assert {k: v for k, v in manifest["dist"].items() if k != "tarball"} == {
            k: v for k, v in upstream_dist.items() if k != "tarball"
        }
    corgi = bearer(live, "/npm/acme/beta", accept=f"{ABBREVIATED}; q=1.0, application/json; q=0.8, */*")
    assert corgi.media == ABBREVIATED and "modified" in corgi.json and "time" not in corgi.json
    assert corgi.json["versions"]["1.2.0"]["hasInstallScript"] is True


def test_a_scoped_name_is_the_same_package_escaped_or_not(live, app):
    set_policy(app, "denylist")
    escaped, plain = bearer(live, "/npm/acme/@scope%2fgamma"), bearer(live, "/npm/acme/@scope/gamma")
    assert escaped.status == plain.status == 200 and escaped.json == plain.json
    tarball = escaped.json["versions"]["0.1.0"]["dist"]["tarball"]
    assert tarball == f"{live.url}/npm/acme/@scope/gamma/-/gamma-0.1.0.tgz"
    reply = bearer(live, tarball.removeprefix(live.url))
    expected = escaped.json["versions"]["0.1.0"]["dist"]["integrity"]
    assert "sha512-" + base64.b64encode(hashlib.sha512(reply.body).digest()).decode() == expected


def test_a_denied_package_carries_policy_restrictions_and_a_notice(live, app):
    set_policy(app, "allowlist", node=["alpha", "beta"])
    assert bearer(live, "/npm/acme/beta").status == 200  # its packument is kept
    set_policy(app, "allowlist", node=["alpha"])
    reply = bearer(live, "/npm/acme/beta")
    assert reply.status == 200 and reply.json["versions"] == {}
    restrictions = reply.json["policyRestrictions"]
    assert set(restrictions["versions"]) == {"1.0.0", "1.2.0"}
    assert all("dist" not in m for m in restrictions["versions"].values())
    assert "beta is not on the Node allow list" in restrictions["message"]
    assert "beta is not on the Node allow list" in reply.headers["npm-notice"]


def test_a_denied_package_never_fetched_is_403_with_its_restriction_and_a_notice(live, app):
    set_policy(app, "allowlist", node=["alpha"])
    reply = bearer(live, "/npm/acme/beta")  # nothing kept, and upstream is never asked for it
    assert reply.status == 403 and "beta is not on the Node allow list" in reply.json["error"]
    assert reply.json["policyRestrictions"] == {"message": reply.json["error"], "versions": {}}
    assert "beta is not on the Node allow list" in reply.headers["npm-notice"]


def test_a_tarball_of_a_package_denied_after_its_packument_was_fetched_is_403(live, app):
    set_policy(app, "allowlist", node=["alpha", "beta"])
    tarball = bearer(live, "/npm/acme/beta").json["versions"]["1.0.0"]["dist"]["tarball"].removeprefix(live.url)
    head = bearer(live, tarball, method="HEAD")
    assert head.status == 200 and int(head.headers["content-length"]) > 0
    set_policy(app, "allowlist", node=["alpha"])
    reply = bearer(live, tarball)
    assert reply.status == 403 and "beta is not on the Node allow list" in reply.json["error"]


def test_registry_keys_pass_through(live, app, npm_upstream):
    reply = bearer(live, "/npm/acme/-/npm/v1/keys")
    assert reply.status == 200 and reply.json["keys"][0]["keyid"] == "SHA256:tests-key"


def test_tokens_that_may_not_read_the_registry_get_no_package_data(live, app):
    set_policy(app, "denylist")
    missing = live.call("GET", "/npm/acme/alpha")
    assert missing.status == 401 and missing.headers["www-authenticate"].startswith("Bearer")
    assert "otp" not in missing.headers["www-authenticate"].lower()  # npm would prompt for a one-time password
    assert bearer(live, "/npm/acme/alpha", token="rcp_unknown").status == 401
    assert bearer(live, "/npm/acme/alpha", token=live.tokens["auditor"]).status == 403
    assert bearer(live, "/npm/acme/alpha", token=live.tokens["other-workspace"]).status == 404


def test_an_upstream_outage_is_503_for_allowed_packages_and_still_a_denial_for_denied_ones(live, app, npm_upstream):
    set_policy(app, "allowlist", node=["alpha"])
    npm_upstream.outage = True
    assert bearer(live, "/npm/acme/alpha").status in (502, 503)
    denied = bearer(live, "/npm/acme/beta")
    assert denied.status == 403 and "beta" not in json.dumps(denied.json.get("versions", {}))


# What an upstream answering nonsense puts in a packument, and what the 502 says of it.
MISSHAPEN = [
    pytest.param(lambda d: d.update({"dist-tags": ["latest"]}), "its dist-tags is not an object", id="tags-a-list"),
    pytest.param(lambda d: d["dist-tags"].update(latest=1), "a dist-tag names no version", id="tag-a-number"),
    pytest.param(lambda d: d.update(versions=["1.0.0"]), "its versions is not an object", id="versions-a-list"),
    pytest.param(lambda d: d.update(time="2026"), "its time is not an object", id="time-a-string"),
    pytest.param(lambda d: d.clear() or d.update(files=5), "it names no package or holds no versions", id="no-name"),
    pytest.param(
        lambda d: d["versions"]["1.0.0"]["dist"].update(tarball="http://127.0.0.1:99999/beta/-/beta-1.0.0.tgz"),
        "the tarball URL of 1.0.0 is no URL",
        id="tarball-port-out-of-range",
    ),
]


@pytest.mark.parametrize("accept", [ABBREVIATED, "application/json"])
@pytest.mark.parametrize("edit, says", MISSHAPEN)
def test_a_packument_of_a_shape_no_registry_sends_is_502_and_the_run_says_why(live, npm_upstream, edit, says, accept):
    npm_upstream.edits["beta"] = edit
    run = start_run(live)
    reply = bearer(live, "/npm/acme/beta", accept=accept, token=run["token"])
    assert reply.status == 502 and reply.media == "application/problem+json", reply.body[:300]
    assert reply.json["detail"] == f"the upstream registry's answer for 'beta' is not a packument: {says}"
    why = upstream_failure(live, run)
    assert (why["name"], why["request"], why["message"]) == ("beta", "page", reply.json["detail"])


def test_a_tarball_whose_upstream_packument_is_misshapen_is_502_and_the_run_says_why(live, npm_upstream):
    npm_upstream.edits["beta"] = MISSHAPEN[0].values[0]
    run = start_run(live)
    reply = bearer(live, "/npm/acme/beta/-/beta-1.0.0.tgz", token=run["token"])
    assert reply.status == 502, reply.body[:300]
    why = upstream_failure(live, run)
    assert (why["name"], why["request"], why["message"]) == ("beta", "download", reply.json["detail"])


def test_versions_whose_tarball_host_is_refused_are_removed_and_latest_moves(app, tmp_path):
    from interface import create_app
    from tests.support.http_client import LiveServer

    upstream = NpmUpstream([Release("delta", "1.0.0"), Release("delta", "2.0.0", tarball_host=OTHER_HOST)])
    token = app.create_workspace("acme", by="founder")["token"]
    env = {"RUNCODE_POLICY_DATA_DIR": str(tmp_path), "RUNCODE_POLICY_NPM_UPSTREAM": upstream.url + "/"}
    server = LiveServer(create_app(env=env, governance=app))
    try:
        document = server.call("GET", "/npm/acme/delta", token).json
    finally:
        server.close()
        upstream.close()
    assert list(document["versions"]) == ["1.0.0"] and document["dist-tags"] == {"latest": "1.0.0"}
    # and the record says why (the gate prints it): npm had said only "No matching version"
    (why,) = app.audit.decisions("acme", {"reason": "upstream-failed"})["decisions"]
    assert (why["name"], why["request"]) == ("delta", "page")
    assert f"files on {OTHER_HOST}, which the egress rules refuse" in why["message"], why["message"]
